/*
 * Counting Bloom filter: the local summary of what this proxy caches,
 * when its claims carry no deadline (claims fresh or until evicted; a
 * timed summary is a cuckoo table, cuckoo.h). Pure data structure; no
 * I/O, no globals.
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
	uint8_t *counters;    /* 4 bits each, two per byte, low nibble even */
	uint64_t *bits;       /* projection: bit set while counter > 0 */
	uint64_t *published;  /* projection as last published */
	uint64_t ones;        /* bits set in the projection */
	uint64_t entries;     /* adds minus accepted removes */
	uint64_t changes;     /* adds and removes since the last publication */
	uint64_t saturations; /* increments lost at CBF_COUNTER_MAX */
	uint64_t bad_removes; /* removes of keys that cannot be present */
};

/* m for n entries at bits_per_entry (at least 64). */
uint64_t cbf_size_for(uint64_t n, unsigned bits_per_entry);
/* m for n entries at a target false-positive rate p, with optimal k in *k:
 * m = -n ln p / (ln 2)^2, k = (m / n) ln 2. */
uint64_t cbf_size_for_fpr(uint64_t n, double p, unsigned *k);

/* New empty filter; NULL on ENOMEM or bad parameters (squid-md5 needs
 * k = 4; 1 <= k <= CBF_MAX_K; m >= 64). */
struct cbf *cbf_new(enum sum_scheme scheme, uint64_t m, unsigned k);
void cbf_free(struct cbf **f);
/* Bytes f holds: counters, projection, and the projection published. */
size_t cbf_bytes(const struct cbf *f);

void cbf_add(struct cbf *f, const struct sumkey *key);
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

/* Number of bits set in the projection, counted afresh (f->ones keeps it
 * up to date; this is the check). */
uint64_t cbf_popcount(const struct cbf *f);

#endif
