/*
 * Peer summaries: the bit array a peer has published, as we hold it, and
 * the messages that carry it (full or delta). The encoders run on the
 * publishing side from a counting filter; the decoders on the receiving
 * side, strictly: a summary is only ever replaced by a message that
 * decoded completely and whose result matches the sender's checksum.
 */
#ifndef PSUM_H
#define PSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"
#include "rice.h"
#include "sumkey.h"

/* Largest summary a peer may announce: 2^32 bits (512 MiB of array). */
#define SUM_MAX_BITS (1ull << 32)

enum sum_full_kind {
	SUM_FULL_RAW = 0,  /* the array itself, ceil(m/8) bytes */
	SUM_FULL_RICE = 1, /* the set positions as a Rice list */
};

struct psum {
	enum sum_scheme scheme;
	unsigned k;
	uint64_t m;
	uint64_t epoch;
	uint64_t seq;
	uint64_t *bits;     /* bit b: word b/64, bit b%64 (byte b/8, 1<<b%8) */
	uint64_t ones;      /* bits set */
	uint64_t checksum;  /* sum_checksum of bits */
	bool loaded;        /* a full summary has been accepted */
};

/* XXH64 (seed 0) of the array as ceil(m/8) bytes, bit b in byte b/8 at
 * 1 << (b % 8): the same bytes on every host and on the wire. */
uint64_t sum_checksum(const uint64_t *bits, uint64_t m);
/* Bits set in an array of m bits. */
uint64_t sum_popcount(const uint64_t *bits, uint64_t m);

/* Empty summary; NULL on ENOMEM or bad parameters. */
struct psum *psum_new(enum sum_scheme scheme, uint64_t m, unsigned k);
void psum_free(struct psum **p);

bool psum_contains(const struct psum *p, const struct sumkey *key);
/* Fraction of bits set, and the false-positive rate it implies: fill^k. */
double psum_fill(const struct psum *p);
double psum_fpr(const struct psum *p);

/*
 * Replaces the summary with a full message (new parameters allowed: a new
 * epoch may resize). Returns 0, or an enum sum_err with p untouched.
 */
int psum_load_full(struct psum *p, enum sum_scheme scheme, uint64_t m,
    unsigned k, uint64_t epoch, uint64_t seq, const uint8_t *in, size_t len,
    uint64_t checksum);

/*
 * Applies a delta: must be the same epoch and parameters, sequence
 * p->seq + 1. Returns 0, or an enum sum_err with p untouched
 * (SUM_ERR_GAP and SUM_ERR_CHECKSUM mean: pull a full summary).
 */
int psum_apply_delta(struct psum *p, uint64_t epoch, uint64_t seq,
    const uint8_t *in, size_t len, uint64_t checksum);

/* Encoders. Each appends to out and returns 0 or -1 (ENOMEM). */
int sum_encode_full(const uint64_t *bits, uint64_t m, struct sum_buf *out);
int sum_encode_delta(const struct cbf_delta *d, struct sum_buf *out);

/*
 * What a publisher sends now: the smaller of a delta and a full summary of
 * f since its last publication. Fills out, *full and *checksum, then marks
 * f published. Returns 0 or -1 (ENOMEM; f unchanged).
 */
int sum_publish(struct cbf *f, struct sum_buf *out, bool *full,
    uint64_t *checksum);

#endif
