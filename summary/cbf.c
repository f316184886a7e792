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
cbf_new(enum sum_scheme scheme, uint64_t m, unsigned k, uint64_t epoch)
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
	f->epoch = epoch;
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
	free(f->until);
	free(f->until_pub);
	free(f->dirty_bits);
	free(f->dirty);
	free(f);
}

struct cbf *
cbf_new_timed(enum sum_scheme scheme, uint64_t m, unsigned k,
    uint64_t epoch, uint64_t base_ms)
{
	struct cbf *f = cbf_new(scheme, m, k, epoch);

	if (f == NULL)
		return NULL;
	f->until = calloc((size_t)m, sizeof(*f->until));
	f->until_pub = calloc((size_t)m, sizeof(*f->until_pub));
	f->dirty_bits = calloc((size_t)((m + 63) / 64), sizeof(uint64_t));
	if (f->until == NULL || f->until_pub == NULL || f->dirty_bits ==
	    NULL) {
		cbf_free(&f);
		return NULL;
	}
	f->base_ms = base_ms;
	return f;
}

uint16_t
cbf_cell_until(const struct cbf *f, uint64_t until_ms)
{
	if (until_ms <= f->base_ms)
		return 0;
	uint64_t s = (until_ms - f->base_ms) / 1000;  /* rounded down */
	return s > CBF_UNTIL_MAX ? CBF_UNTIL_MAX : (uint16_t)s;
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

/* Cell i's deadline becomes u. A cell that cannot be listed (out of
 * memory) makes the next publication a full one (dirty_lost). */
static void
set_until(struct cbf *f, uint64_t i, uint16_t u)
{
	f->until[i] = u;
	if (f->dirty_bits[i >> 6] & (1ull << (i & 63)))
		return;
	if (f->ndirty == f->dirty_cap) {
		size_t nc = f->dirty_cap ? 2 * f->dirty_cap : 256;
		uint64_t *nd = realloc(f->dirty, nc * sizeof(*nd));
		if (nd == NULL) {
			f->dirty_lost = true;
			return;
		}
		f->dirty = nd;
		f->dirty_cap = nc;
	}
	f->dirty_bits[i >> 6] |= 1ull << (i & 63);
	f->dirty[f->ndirty++] = i;
}

static bool
take_out(struct cbf *f, const struct sumkey *key, bool change)
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
			if (f->until != NULL && f->until[pos[i]] != 0)
				set_until(f, pos[i], 0);
		}
		set_counter(f, pos[i], c - 1);
	}
	if (f->entries > 0)
		f->entries--;
	if (change)
		f->changes++;
	return true;
}

bool
cbf_remove(struct cbf *f, const struct sumkey *key)
{
	return take_out(f, key, true);
}

bool
cbf_lapse(struct cbf *f, const struct sumkey *key)
{
	return take_out(f, key, false);
}

/* Each of the n cells keeps the later of its deadline and until_ms's;
 * whether one rose. */
static bool
raise_at(struct cbf *f, const uint64_t *pos, unsigned n, uint64_t until_ms)
{
	uint16_t u = cbf_cell_until(f, until_ms);
	bool rose = false;

	for (unsigned i = 0; i < n; i++)
		if (f->until[pos[i]] < u) {
			set_until(f, pos[i], u);
			rose = true;
		}
	return rose;
}

void
cbf_add_until(struct cbf *f, const struct sumkey *key, uint64_t until_ms)
{
	uint64_t pos[CBF_MAX_K];
	unsigned n = positions(f, key, pos);

	count_at(f, pos, n);
	raise_at(f, pos, n, until_ms);
}

void
cbf_extend(struct cbf *f, const struct sumkey *key, uint64_t until_ms)
{
	uint64_t pos[CBF_MAX_K];

	if (raise_at(f, pos, positions(f, key, pos), until_ms))
		f->changes++;
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

static int
ascending(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Only a cell whose deadline changed since the last publication can look
 * different to a peer: one that did not holds what was sent, or (after a
 * full message, which sends no passed deadline) a passed deadline where
 * the peer holds none, which a peer reads alike.
 */
int
cbf_timed_delta(struct cbf *f, uint64_t now_ms, struct cbf_timed_delta *d)
{
	memset(d, 0, sizeof(*d));
	if (f->dirty_lost)
		return 1;
	if (f->ndirty > 0)
		qsort(f->dirty, f->ndirty, sizeof(*f->dirty), ascending);
	d->pos = malloc((f->ndirty ? f->ndirty : 1) * sizeof(*d->pos));
	d->until = malloc((f->ndirty ? f->ndirty : 1) * sizeof(*d->until));
	if (d->pos == NULL || d->until == NULL) {
		cbf_timed_delta_clear(d);
		return -1;
	}
	for (size_t j = 0; j < f->ndirty; j++) {
		uint64_t i = f->dirty[j];
		uint16_t want = cbf_live_until(f, f->until, i, now_ms);
		if (want == cbf_live_until(f, f->until_pub, i, now_ms))
			continue;
		d->pos[d->n] = i;
		d->until[d->n++] = want;
	}
	return 0;
}

void
cbf_timed_published(struct cbf *f)
{
	for (size_t j = 0; j < f->ndirty; j++)
		f->dirty_bits[f->dirty[j] >> 6] &= ~(1ull << (f->dirty[j] & 63));
	f->ndirty = 0;
	if (f->dirty_lost) {
		memset(f->dirty_bits, 0, (size_t)((f->m + 63) / 64) * 8);
		f->dirty_lost = false;
	}
}

void
cbf_timed_delta_clear(struct cbf_timed_delta *d)
{
	free(d->pos);
	free(d->until);
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
