/*
 * Peer summaries: what a peer has published, as we hold it, and the
 * messages that carry it (full or delta). Two kinds: a bit array (claims
 * fresh or until evicted), encoded here from a counting filter; and a
 * timed summary, a copy of the peer's cuckoo table whose slots carry
 * their keys' deadlines (cuckoo.h, which encodes and decodes it). The
 * decoders are strict: a summary is only ever replaced by a message that
 * decoded completely and whose result matches the sender's checksum.
 */
#ifndef PSUM_H
#define PSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"
#include "cuckoo.h"
#include "rice.h"
#include "sumkey.h"

/* Largest summary a peer may announce: 2^32 bits (512 MiB of array);
 * timed, CK_MAX_BUCKETS x CK_BUCKET slots. */
#define SUM_MAX_BITS (1ull << 32)

enum sum_full_kind {
	SUM_FULL_RAW = 0,  /* the array itself, ceil(m/8) bytes */
	SUM_FULL_RICE = 1, /* the set positions as a Rice list */
};

/* Where a timed summary's sender's clock stood: at local_ms on ours, it
 * read sent_ms (milliseconds since its filter's base). */
struct sum_clock {
	uint64_t sent_ms;
	uint64_t local_ms;
};

struct psum {
	enum sum_scheme scheme;
	unsigned k;         /* timed: the fingerprint's bits */
	uint64_t m;         /* bits; timed: slots */
	uint64_t epoch;
	uint64_t seq;
	uint64_t *bits;     /* bit b: word b/64, bit b%64 (byte b/8, 1<<b%8);
	                     * NULL when timed */
	uint64_t ones;      /* bits set; timed: slots held, passed ones too */
	uint64_t checksum;  /* sum_checksum of bits, or the table's sum */
	bool loaded;        /* a full summary has been accepted */
	/* timed (psum_new_timed): the peer's table as it last published
	 * it, and its clock, as its last message set it */
	struct ck_copy *ck;
	struct sum_clock clock;
};

/* XXH64 (seed 0) of the array as ceil(m/8) bytes, bit b in byte b/8 at
 * 1 << (b % 8): the same bytes on every host and on the wire. */
uint64_t sum_checksum(const uint64_t *bits, uint64_t m);
/* Bits set in an array of m bits. */
uint64_t sum_popcount(const uint64_t *bits, uint64_t m);

/* Empty summary; NULL on ENOMEM or bad parameters. */
struct psum *psum_new(enum sum_scheme scheme, uint64_t m, unsigned k);
/* Empty timed summary: its claims lapse by their deadlines. */
struct psum *psum_new_timed(enum sum_scheme scheme, uint64_t m, unsigned k);
void psum_free(struct psum **p);

/* Whether p claims key at now_ms on our clock (the clock of the
 * sum_clock its messages came with; plain bits ignore it): every one of
 * the key's bits set, or for a timed summary, a slot of the key's
 * fingerprint whose deadline is still ahead of the sender's clock as we
 * reckon it. */
bool psum_contains(const struct psum *p, const struct sumkey *key,
    uint64_t now_ms);
/* Fraction of bits (slots) set, and the false-positive rate it implies:
 * fill^k, or the table's (ck_fpr). */
double psum_fill(const struct psum *p);
double psum_fpr(const struct psum *p);
/* Bytes p holds: everything a lookup reads. */
size_t psum_bytes(const struct psum *p);

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

/* A summary message as the receiving side needs it. */
struct sum_msg {
	bool timed, full;
	enum sum_scheme scheme;
	uint64_t m;
	unsigned k;
	uint64_t epoch, seq;
	const uint8_t *payload;
	size_t len;
	uint64_t checksum;
	uint64_t sent_ms;           /* timed: the sender's clock, ms since
	                             * its table was made */
};

/*
 * The receiving side's one entry, the daemon's and the simulator's: msg
 * taken into *p, which a full message may replace (none yet, or the
 * other kind) and a delta must find loaded, of its kind. local_ms is our
 * clock as msg arrives. 0, or an enum sum_err with *p untouched.
 */
int psum_take(struct psum **p, const struct sum_msg *msg, uint64_t local_ms);

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
