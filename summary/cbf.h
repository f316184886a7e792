/*
 * Counting Bloom filter: the local summary of what this proxy caches.
 * Pure data structure; no I/O, no globals.
 *
 * A timed filter (cbf_new_timed) also keeps, per cell, the latest
 * deadline of the keys counted in it, in whole seconds since the
 * filter's base, rounded down: peers hold those deadlines and stop
 * believing a cell once it has passed, so a claim lapses with no
 * message. A cell keeps its deadline until its counter falls to 0, even
 * when the key that set it leaves first (nothing tells which key that
 * was); the other keys of the cell then look claimed longer there, which
 * matters only if every one of a key's cells does so: a false positive,
 * rarer than the filter's own, that the next rebuild removes.
 */
#ifndef CBF_H
#define CBF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sumkey.h"

#define CBF_MAX_K 16
#define CBF_COUNTER_MAX 15

struct cbf {
	enum sum_scheme scheme;
	unsigned k;
	uint64_t m;           /* counters, and bits in the projection */
	uint64_t epoch;       /* changes whenever m, k or scheme change */
	uint8_t *counters;    /* 4 bits each, two per byte, low nibble even */
	uint64_t *bits;       /* projection: bit set while counter > 0 */
	uint64_t *published;  /* projection as last published */
	uint64_t ones;        /* bits set in the projection */
	uint64_t entries;     /* adds minus accepted removes */
	uint64_t changes;     /* adds and removes since the last publication */
	uint64_t saturations; /* increments lost at CBF_COUNTER_MAX */
	uint64_t bad_removes; /* removes of keys that cannot be present */
	/* timed filters only (else NULL): each cell's deadline, seconds
	 * since base_ms (0: none), and as last published */
	uint16_t *until;
	uint16_t *until_pub;
	uint64_t base_ms;     /* the publisher's clock when it was made */
	/* cells whose deadline changed since the last publication, once
	 * each (dirty_bits): a publication looks at these, not at m */
	uint64_t *dirty_bits;
	uint64_t *dirty;
	size_t ndirty, dirty_cap;
	bool dirty_lost;      /* a cell could not be listed: send it whole */
	uint64_t until_pub_sum; /* sum_checksum_timed of until_pub (psum.h),
	                         * kept by the publishing code */
};

/* A cell's deadline at most this far past base_ms, in seconds (18.2 h):
 * a later one is rounded down to it, and the publisher starts a new
 * base well before (PUB_REBASE_MS). */
#define CBF_UNTIL_MAX 65535u

/* m for n entries at bits_per_entry (at least 64). */
uint64_t cbf_size_for(uint64_t n, unsigned bits_per_entry);
/* m for n entries at a target false-positive rate p, with optimal k in *k:
 * m = -n ln p / (ln 2)^2, k = (m / n) ln 2. */
uint64_t cbf_size_for_fpr(uint64_t n, double p, unsigned *k);

/* New empty filter; NULL on ENOMEM or bad parameters (squid-md5 needs
 * k = 4; 1 <= k <= CBF_MAX_K; m >= 64). */
struct cbf *cbf_new(enum sum_scheme scheme, uint64_t m, unsigned k,
    uint64_t epoch);
void cbf_free(struct cbf **f);
/* Bytes f holds: counters, projection, and the projection published. */
size_t cbf_bytes(const struct cbf *f);

/* A timed filter, its cells' deadlines counted from base_ms. */
struct cbf *cbf_new_timed(enum sum_scheme scheme, uint64_t m, unsigned k,
    uint64_t epoch, uint64_t base_ms);
/* until_ms (the base's clock; CLAIMS_FOREVER too) as a cell's deadline:
 * whole seconds since the base, rounded down, at most CBF_UNTIL_MAX. */
uint16_t cbf_cell_until(const struct cbf *f, uint64_t until_ms);

void cbf_add(struct cbf *f, const struct sumkey *key);
/* Timed: cbf_add, and each of the key's cells keeps the later of its
 * deadline and until_ms's. */
void cbf_add_until(struct cbf *f, const struct sumkey *key,
    uint64_t until_ms);
/* Timed: a counted key's deadline moved later (a revalidation): its
 * cells keep the later deadline; a change when one rose. */
void cbf_extend(struct cbf *f, const struct sumkey *key, uint64_t until_ms);
/* Timed: cbf_remove for a key whose deadline has passed, which peers
 * have let go by themselves: not a change to publish. */
bool cbf_lapse(struct cbf *f, const struct sumkey *key);
/* false when the key cannot be present (a counter is 0): nothing changes
 * and bad_removes counts the caller's mistake. */
bool cbf_remove(struct cbf *f, const struct sumkey *key);
bool cbf_contains(const struct cbf *f, const struct sumkey *key);

/* Bits that differ from the last publication, as two ascending lists. */
struct cbf_delta {
	uint64_t *set;
	uint64_t *cleared;
	size_t nset;
	size_t ncleared;
};

/* Fills d (caller frees with cbf_delta_clear); -1 on ENOMEM. */
int cbf_delta(const struct cbf *f, struct cbf_delta *d);
void cbf_delta_clear(struct cbf_delta *d);
/* The current projection becomes the published one; changes restart. */
void cbf_mark_published(struct cbf *f);

/* A timed filter's cells to publish at now_ms: those whose deadline, as
 * a peer holding until_pub sees it at now, differs from the filter's
 * (a passed deadline is none), each with its deadline (0: cleared), in
 * ascending position. */
struct cbf_timed_delta {
	uint64_t *pos;
	uint16_t *until;
	size_t n;
};

/* Fills d (free with cbf_timed_delta_clear); -1 on ENOMEM; 1 when a
 * change went unlisted for want of memory (publish a full one). */
int cbf_timed_delta(struct cbf *f, uint64_t now_ms,
    struct cbf_timed_delta *d);
void cbf_timed_delta_clear(struct cbf_timed_delta *d);
/* until_pub now holds what was sent: no cell is waiting any more. */
void cbf_timed_published(struct cbf *f);
/* The cell's deadline as a holder of a at now_ms (the base's clock)
 * sees it: 0 once it has passed. */
static inline uint16_t
cbf_live_until(const struct cbf *f, const uint16_t *a, uint64_t i,
    uint64_t now_ms)
{
	return (uint64_t)a[i] * 1000 + f->base_ms > now_ms ? a[i] : 0;
}

/* Number of bits set in the projection, counted afresh (f->ones keeps it
 * up to date; this is the check). */
uint64_t cbf_popcount(const struct cbf *f);

#endif
