/*
 * One stored response as bytes on disk: the disk tier's record.
 *
 *   head      RECORD_HEAD bytes of fixed fields, then the key, the
 *             stored head and the varykey (store.h's three strings)
 *   body      body_len bytes
 *   trailer   at the next multiple of 8: RECORD_TRAILER bytes, the
 *             commit mark
 *
 * Integers are little-endian. The head carries its own checksum (XXH3-64
 * of everything in the head after it); the trailer repeats it and
 * carries the body's. So everything in the head is known before the
 * first byte of the body: the writer puts the head down with the body,
 * or before it when the body is still arriving (diskstream.c), and the
 * trailer last, once the rest is on the disk (disk.c). A record is
 * committed when its trailer matches its head. A record torn at any
 * stage of a write fails one of the three checks: a head cut short or
 * half old fails its checksum; a body cut short leaves no trailer; a
 * trailer cut short does not match; a body that rotted, or whose
 * trailer reached the disk before it did, fails the body checksum when
 * it is read. And a record cut short still tells its length, so a scan
 * steps over it to the records after it.
 * Pure: no I/O, no allocation.
 */
#ifndef RECORD_H
#define RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define RECORD_HEAD 72
#define RECORD_TRAILER 24
/* Strings longer than these are not a record's: a scan that meets them
 * has met garbage. */
#define RECORD_MAX_KEY (64u * 1024)
#define RECORD_MAX_HEAD (1024u * 1024)

/* A tombstone: a key only, saying its earlier records are void (an
 * invalidation that a scan after a crash must not undo). */
#define RECORD_TOMBSTONE 1u

/* What a record's head says about it. */
struct record_info {
	uint32_t flags;
	uint64_t head_sum;
	uint64_t body_sum;      /* the trailer's */
	uint64_t body_len;
	uint32_t key_len, head_len, vary_len;
	struct store_meta meta;
};

/* Bytes of the head with its strings. */
static inline uint64_t
record_head_len(const struct record_info *r)
{
	return RECORD_HEAD + (uint64_t)r->key_len + r->head_len + r->vary_len;
}

/* Offset of the trailer from the record's start. */
static inline uint64_t
record_trailer_off(const struct record_info *r)
{
	return (record_head_len(r) + r->body_len + 7) & ~(uint64_t)7;
}

/* The whole record's length on disk. */
static inline uint64_t
record_len(const struct record_info *r)
{
	return record_trailer_off(r) + RECORD_TRAILER;
}

/*
 * record_describe fills r for object o: its lengths and meta; the body's
 * checksum is the caller's to set, wherever the body lives.
 * record_write_head writes the head, record_head_len(r) bytes, to out
 * and sets r->head_sum; vary and head may be NULL when their lengths are
 * 0 (a tombstone's). record_write_trailer writes the mark, with
 * r->head_sum and r->body_sum.
 */
void record_describe(const struct store_obj *o, struct record_info *r);
void record_write_head(struct record_info *r, const char *key,
    const char *head, const char *vary, uint8_t *out);
void record_write_trailer(const struct record_info *r,
    uint8_t out[RECORD_TRAILER]);

/* Checksum of a body in one piece, or in pieces: record_sum_new (NULL on
 * ENOMEM), record_sum_add for each, record_sum_end (which frees it). */
uint64_t record_body_sum(const void *p, size_t n);
struct record_sum;
struct record_sum *record_sum_new(void);
void record_sum_add(struct record_sum *s, const void *p, size_t n);
uint64_t record_sum_end(struct record_sum *s);

/*
 * Reads a record's fixed fields from the first RECORD_HEAD bytes of p.
 * Returns false when they are not a record's: wrong magic, lengths out
 * of bounds. The checksum needs the strings too: record_head_ok.
 */
bool record_read_fixed(const uint8_t *p, struct record_info *r);
/* The head's checksum over its record_head_len(r) bytes at p. */
bool record_head_ok(const uint8_t *p, const struct record_info *r);
/* The commit mark matches the head: true, and r->body_sum is the
 * trailer's. */
bool record_read_trailer(const uint8_t t[RECORD_TRAILER],
    struct record_info *r);

/* The strings inside a head that passed record_head_ok. */
static inline const char *
record_key(const uint8_t *head)
{
	return (const char *)head + RECORD_HEAD;
}

#endif
