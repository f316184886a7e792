/*
 * The compact timed summary: a cuckoo table of fingerprints, each slot
 * one key's fingerprint and that key's own deadline (issue 49; chosen
 * over a d-left counting filter and small timed cells by
 * deploy/bench/deadline-eval, deploy/README.md "Compact timed
 * summaries").
 *
 * Layout. nb buckets of CK_BUCKET slots. A slot is CK_SLOT_BITS: an
 * 18-bit fingerprint (1 .. 2^18 - 1; 0 is an empty slot) above a 12-bit
 * deadline code (deadline.h, DL_FORM). A key's fingerprint and first
 * bucket come from its sumkey; its second bucket is (H(fp) - first) mod
 * nb, so a slot's fingerprint alone says where else its key may live,
 * and nb need not be a power of two (a table is sized for its keys at
 * CK_LOAD). A key is in one slot of its two buckets; a peer believes it
 * while a slot there has its fingerprint and a code not yet passed.
 *
 * Against the timed counting filter it replaced (16 cells a key, two
 * bytes of deadline each): a peer holds 30 bits a slot, 3.95 bytes a key
 * at CK_LOAD, not 32; a slot belongs to one key, so a departed key
 * leaves no deadline behind for others; 18 bits of fingerprint keep
 * false positives under the plain filter's.
 *
 * Two sides. The node's table (struct ck_table) takes adds, removals
 * and new deadlines, moving residents between their buckets when both of
 * a key's are full (at most CK_KICKS moves, undone if they fail), and
 * keeps what it last published to find the slots to send. A peer's copy
 * (struct ck_copy) only looks up, packed at CK_BUCKET_BYTES a bucket,
 * and changes only by messages (and the base's shifts, deadline.h, which
 * both sides make at the same instants of the sender's clock).
 *
 * Clocks. The node passes now_ms on its own clock; the table's clock is
 * 0 when it is made (its origin), and a message's sent_ms counts from
 * there. The codes count from the base, origin + shifts x the shift's
 * ms, shifts = sent_ms / the shift's ms: a peer knows the base from
 * sent_ms alone.
 *
 * Messages (a version 3 Summary's payload, proto/sumcache.proto; rice.h
 * lists):
 *   full:   Rice list of the live slots | their contents
 *   delta:  Rice list of the slots set | their contents | Rice list of
 *           the slots cleared
 * contents: CK_SLOT_BITS each, most significant first, zero-padded to a
 * byte. A content's fingerprint and code are never 0; the two lists of a
 * delta share no slot. The checksum (the Summary's) is the sum mod 2^64
 * of ck_slot_mix(slot, content) over every non-empty slot of the copy,
 * after the message's shifts: a peer's copy is the node's last
 * published table, passed slots and all. A code a shift takes to 0
 * empties its slot, on both sides.
 *
 * Ownership: each side owns its arrays; nothing is shared.
 */
#ifndef CUCKOO_H
#define CUCKOO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "deadline.h"
#include "sumkey.h"

#define CK_BUCKET 4
#define CK_FP_BITS 18
#define CK_SLOT_BITS (CK_FP_BITS + DL_BITS)
#define CK_BUCKET_BYTES 15      /* CK_BUCKET x CK_SLOT_BITS / 8 */
#define CK_LOAD 0.95
#define CK_KICKS 500
/* Largest table a peer may announce, and this node makes: 2^23 buckets,
 * 31.9M keys at CK_LOAD in 120 MiB held (a peer's header names the size,
 * so this bounds what one trusted peer can make us allocate; the timed
 * cells took 128 MiB for 4M keys). */
#define CK_MAX_BUCKETS (1ull << 23)

/* The shift of DL_FORM in ms: a base lasts this long. */
#define CK_SHIFT_MS (DL_FORM.shift * DL_FORM.unit_ms)

struct ck_table {
	uint64_t nb;            /* buckets */
	uint64_t origin_ms;     /* the caller's clock when it was made */
	uint64_t shifts;        /* the base: origin + shifts x CK_SHIFT_MS */
	uint32_t *slot;         /* fp << DL_BITS | code; 0: empty */
	uint32_t *pub;          /* each slot as last published */
	uint64_t pub_sum;       /* ck_checksum of pub */
	uint64_t keys;          /* keys in slots */
	uint64_t full_adds;     /* adds refused: both buckets full, no way
	                         * through CK_KICKS moves */
	uint64_t rng;           /* picks the resident to move */
	/* slots changed since the last publication, once each */
	uint64_t *dirty_bits;
	uint64_t *dirty;
	size_t ndirty, dirty_cap;
	bool dirty_lost;        /* one could not be listed: publish whole */
};

/* The buckets for keys at CK_LOAD (at least one). */
uint64_t ck_buckets_for(uint64_t keys);

/* An empty table of nb buckets made at now_ms; NULL on ENOMEM or a size
 * out of range. */
struct ck_table *ck_new(uint64_t nb, uint64_t now_ms);
void ck_free(struct ck_table **t);
/* Bytes the table holds (the node's own: its slots twice, as they are
 * and as published, and the list of those changed). */
size_t ck_bytes(const struct ck_table *t);

/*
 * Moves the base on to now_ms's (before any other call at now_ms; the
 * calls below code deadlines from the current base). Returns the shifts
 * made: after one, a key whose deadline was beyond the range may have
 * come within it (ck_beyond said so at the last base), and the caller
 * gives it its exact code (ck_retime).
 */
uint64_t ck_shift(struct ck_table *t, uint64_t now_ms);
/* Whether until_ms is beyond the range of the current base: its code is
 * the top code, to be made exact once the base comes nearer. */
bool ck_beyond(const struct ck_table *t, uint64_t until_ms);
/* Whether until_ms was beyond the range before the last `shifts` shifts
 * and is within it now: its key is to be retimed (ck_retime, was_ms
 * UINT64_MAX, the top code). */
bool ck_came_within(const struct ck_table *t, uint64_t shifts,
    uint64_t until_ms);

/* Adds key, claimed until until_ms (UINT64_MAX: while cached). 0, or -1
 * when the table is too full (nothing changed; grow it). A key is added
 * once: the caller's claims table keeps one entry a key. */
int ck_add(struct ck_table *t, const struct sumkey *key, uint64_t until_ms);
/* Removes key, added with deadline until_ms (which tells it from a twin
 * of the same fingerprint and buckets); false when it is not there (an
 * add refused, or a code a shift took to 0 and emptied). */
bool ck_remove(struct ck_table *t, const struct sumkey *key,
    uint64_t until_ms);
/* The key's deadline, was_ms, is now until_ms (a revalidation; or the
 * same deadline come within range, was_ms UINT64_MAX). false when it is
 * not there (the caller adds it). */
bool ck_retime(struct ck_table *t, const struct sumkey *key, uint64_t was_ms,
    uint64_t until_ms);
/* Whether the table claims key at now_ms. */
bool ck_contains(const struct ck_table *t, const struct sumkey *key,
    uint64_t now_ms);

/*
 * What to send at now_ms (after ck_shift): a delta of the slots a peer
 * holding the last publication would see differently, or the whole, when
 * smaller or when a change went unlisted. Appends to out and fills *full,
 * *sent_ms and *checksum, then takes it as published. 0, or -1 on ENOMEM
 * (nothing published).
 */
int ck_publish(struct ck_table *t, uint64_t now_ms, struct sum_buf *out,
    bool *full, uint64_t *sent_ms, uint64_t *checksum);

/* The next ck_publish sends the whole table (a new epoch). */
void ck_whole_next(struct ck_table *t);
/* The last publication whole, as a peer holds it at now_ms: a full
 * message for a pull or a peer come back. 0, or -1 on ENOMEM. */
int ck_encode_published(const struct ck_table *t, uint64_t now_ms,
    struct sum_buf *out, uint64_t *sent_ms, uint64_t *checksum);

/* One slot's term in the checksum. */
uint64_t ck_slot_mix(uint64_t slot, uint32_t content);
/* The false-positive rate of a table of `slots` holding keys: a lookup
 * reads 2 x CK_BUCKET slots, each a match with probability load / 2^18
 * (linear in the load, where a Bloom filter's falls as its power k). */
double ck_fpr(uint64_t keys, uint64_t slots);

/* A peer's copy of a table. */
struct ck_copy {
	uint64_t nb;
	uint64_t shifts;        /* its codes' base, as the last message set */
	uint8_t *bytes;         /* CK_BUCKET_BYTES a bucket, one spare */
	uint64_t sum;           /* the checksum of the slots held */
	uint64_t keys;          /* non-empty slots, passed ones too */
};

/* An empty copy of nb buckets; NULL on ENOMEM or a size out of range. */
struct ck_copy *ck_copy_new(uint64_t nb);
void ck_copy_free(struct ck_copy **c);
/* Bytes the copy holds: everything a lookup reads. */
size_t ck_copy_bytes(const struct ck_copy *c);

/*
 * A full message (sent_ms: the sender's clock as it sent it) replaces
 * the copy; a delta, after the copy's base has moved on to the
 * message's, changes it. Both strict: 0, or SUM_ERR_MALFORMED,
 * SUM_ERR_CHECKSUM or SUM_ERR_NOMEM (rice.h) with the copy untouched.
 */
int ck_copy_load(struct ck_copy *c, uint64_t sent_ms, const uint8_t *in,
    size_t len, uint64_t checksum);
int ck_copy_apply(struct ck_copy *c, uint64_t sent_ms, const uint8_t *in,
    size_t len, uint64_t checksum);

/* Whether the copy claims key when the sender's clock reads sender_ms. */
bool ck_copy_contains(const struct ck_copy *c, const struct sumkey *key,
    uint64_t sender_ms);

#endif
