/*
 * Counting Bloom filter (Fan et al., Summary Cache, section V.C).
 *
 * m 4-bit counters, two to a byte. A counter saturates at 15 and is never
 * decremented from there: the paper shows overflow is vanishingly rare at
 * the sizes we use, and a stuck counter can only leave a bit set too long
 * (a false hit, recovered by the peer's 504), never clear a bit that should
 * be set (a false miss would be silent).
 *
 * Peers see only the projection, bit i = counter i > 0, kept alongside the
 * counters so it never has to be recomputed. The projection as it was last
 * published is kept too: a delta is the XOR of the two, read word by word
 * (m/64 words, about 0.1 ms per million entries at 16 bits per entry).
 *
 * A key's k positions may repeat (double hashing mod a non-power-of-two m);
 * they are deduplicated first, so a key touches each counter once and
 * remove is the exact inverse of add.
 */
#include "cbf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t
cbf_size_for(uint64_t n, unsigned bits_per_entry)
{
	uint64_t m = n * bits_per_entry;

	return m < 64 ? 64 : m;
}

uint64_t
cbf_size_for_fpr(uint64_t n, double p, unsigned *k)
{
	double m = -(double)n * log(p) / (M_LN2 * M_LN2);
	double kk = m / (double)n * M_LN2;

	*k = kk < 1 ? 1 : kk > CBF_MAX_K ? CBF_MAX_K : (unsigned)lround(kk);
	return m < 64 ? 64 : (uint64_t)ceil(m);
}

struct cbf *
cbf_new(enum sum_scheme scheme, uint64_t m, unsigned k)
{
	if (m < 64 || k < 1 || k > CBF_MAX_K ||
	    (scheme == SUM_SQUID_MD5 && k != SUM_SQUID_K) ||
	    (scheme != SUM_XXH3 && scheme != SUM_SQUID_MD5))
		return NULL;
	struct cbf *f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	size_t words = (size_t)((m + 63) / 64);
	f->counters = calloc((size_t)((m + 1) / 2), 1);
	f->bits = calloc(words, sizeof(uint64_t));
	f->published = calloc(words, sizeof(uint64_t));
	if (f->counters == NULL || f->bits == NULL || f->published == NULL) {
		cbf_free(&f);
		return NULL;
	}
	f->scheme = scheme;
	f->m = m;
	f->k = k;
	return f;
}

size_t
cbf_bytes(const struct cbf *f)
{
	size_t words = (size_t)((f->m + 63) / 64);

	/* the counters, the projection and its published copy */
	return sizeof(*f) + (size_t)((f->m + 1) / 2) + 2 * words * 8;
}

void
cbf_free(struct cbf **fp)
{
	struct cbf *f = *fp;

	if (f == NULL)
		return;
	*fp = NULL;
	free(f->counters);
	free(f->bits);
	free(f->published);
	free(f);
}

static unsigned
counter(const struct cbf *f, uint64_t i)
{
	return (f->counters[i >> 1] >> ((i & 1) * 4)) & 0xf;
}

static void
set_counter(struct cbf *f, uint64_t i, unsigned v)
{
	uint8_t *b = &f->counters[i >> 1];
	unsigned shift = (unsigned)(i & 1) * 4;

	*b = (uint8_t)((*b & ~(0xf << shift)) | (v << shift));
}

/* The key's distinct positions; returns how many. */
static unsigned
positions(const struct cbf *f, const struct sumkey *key, uint64_t *pos)
{
	unsigned n = 0;

	sumkey_positions(f->scheme, key, f->k, f->m, pos);
	for (unsigned i = 0; i < f->k; i++) {
		bool dup = false;
		for (unsigned j = 0; j < n && !dup; j++)
			dup = pos[j] == pos[i];
		if (!dup)
			pos[n++] = pos[i];
	}
	return n;
}

/* A key at its n distinct positions counted. */
static void
count_at(struct cbf *f, const uint64_t *pos, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned c = counter(f, pos[i]);
		if (c == CBF_COUNTER_MAX) {
			f->saturations++;
			continue;
		}
		if (c == 0) {
			f->bits[pos[i] >> 6] |= 1ull << (pos[i] & 63);
			f->ones++;
		}
		set_counter(f, pos[i], c + 1);
	}
	f->entries++;
	f->changes++;
}

void
cbf_add(struct cbf *f, const struct sumkey *key)
{
	uint64_t pos[CBF_MAX_K];

	count_at(f, pos, positions(f, key, pos));
}

bool
cbf_remove(struct cbf *f, const struct sumkey *key)
{
	uint64_t pos[CBF_MAX_K];
	unsigned n = positions(f, key, pos);

	for (unsigned i = 0; i < n; i++) {
		if (counter(f, pos[i]) == 0) {
			f->bad_removes++;
			return false;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned c = counter(f, pos[i]);
		if (c == CBF_COUNTER_MAX)
			continue; /* saturated: stays set for good */
		if (c == 1) {
			f->bits[pos[i] >> 6] &= ~(1ull << (pos[i] & 63));
			f->ones--;
		}
		set_counter(f, pos[i], c - 1);
	}
	if (f->entries > 0)
		f->entries--;
	f->changes++;
	return true;
}

bool
cbf_contains(const struct cbf *f, const struct sumkey *key)
{
	uint64_t pos[CBF_MAX_K];

	sumkey_positions(f->scheme, key, f->k, f->m, pos);
	for (unsigned i = 0; i < f->k; i++)
		if (!(f->bits[pos[i] >> 6] & (1ull << (pos[i] & 63))))
			return false;
	return true;
}

static int
push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		uint64_t *nv = realloc(*v, nc * sizeof(**v));
		if (nv == NULL)
			return -1;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = x;
	return 0;
}

int
cbf_delta(const struct cbf *f, struct cbf_delta *d)
{
	size_t words = (size_t)((f->m + 63) / 64), scap = 0, ccap = 0;

	memset(d, 0, sizeof(*d));
	for (size_t w = 0; w < words; w++) {
		uint64_t diff = f->bits[w] ^ f->published[w];
		while (diff) {
			unsigned b = (unsigned)__builtin_ctzll(diff);
			uint64_t pos = (uint64_t)w * 64 + b;
			int rc = (f->bits[w] >> b) & 1 ?
			    push(&d->set, &d->nset, &scap, pos) :
			    push(&d->cleared, &d->ncleared, &ccap, pos);
			if (rc < 0) {
				cbf_delta_clear(d);
				return -1;
			}
			diff &= diff - 1;
		}
	}
	return 0;
}

void
cbf_delta_clear(struct cbf_delta *d)
{
	free(d->set);
	free(d->cleared);
	memset(d, 0, sizeof(*d));
}

void
cbf_mark_published(struct cbf *f)
{
	memcpy(f->published, f->bits, (size_t)((f->m + 63) / 64) * 8);
	f->changes = 0;
}

uint64_t
cbf_popcount(const struct cbf *f)
{
	uint64_t n = 0;

	for (size_t w = 0; w < (size_t)((f->m + 63) / 64); w++)
		n += (uint64_t)__builtin_popcountll(f->bits[w]);
	return n;
}
