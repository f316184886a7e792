/*
 * The frequency sketch of admit.h: 4-bit counters, two per key, in 64-bit
 * words of 16.
 */
#include "admit.h"

#include <pthread.h>
#include <stdlib.h>

/* Every worker's misses count here: the lock guards words and counted
 * (a few nanoseconds held; misses only). */
struct admit {
	pthread_mutex_t lock;
	unsigned hits;
	uint64_t *words;        /* 16 counters each */
	uint64_t mask;          /* counters - 1 */
	uint64_t counted;       /* requests since the last halving */
	uint64_t window;
};

uint64_t
admit_window(uint64_t cache_bytes)
{
	return cache_bytes / ADMIT_OBJECT_BYTES;
}

struct admit *
admit_new(unsigned hits, uint64_t window)
{
	struct admit *a = calloc(1, sizeof(*a));
	uint64_t counters = 16;

	if (a == NULL)
		return NULL;
	if (window < 1024)
		window = 1024;
	while (counters < 8 * window)
		counters <<= 1;
	pthread_mutex_init(&a->lock, NULL);
	a->hits = hits > ADMIT_HITS_MAX ? ADMIT_HITS_MAX : hits;
	a->window = window;
	a->mask = counters - 1;
	a->words = calloc(counters / 16, sizeof(uint64_t));
	if (a->words == NULL)
		admit_free(&a);
	return a;
}

void
admit_free(struct admit **ap)
{
	struct admit *a = *ap;

	if (a == NULL)
		return;
	*ap = NULL;
	pthread_mutex_destroy(&a->lock);
	free(a->words);
	free(a);
}

static unsigned
get(const struct admit *a, uint64_t c)
{
	return (unsigned)(a->words[c >> 4] >> (4 * (c & 15))) & 15;
}

static void
raise_one(struct admit *a, uint64_t c)
{
	a->words[c >> 4] += 1ull << (4 * (c & 15));
}

/* Every counter halved at once: the high bit of each nibble dropped,
 * the rest shifted down. */
static void
halve(struct admit *a)
{
	for (uint64_t i = 0; i <= a->mask / 16; i++)
		a->words[i] = (a->words[i] >> 1) & 0x7777777777777777ull;
}

bool
admit_keep(struct admit *a, uint64_t key_hash)
{
	if (a->hits <= 1)
		return a->hits == 1;
	/* the key hash is xxh3's: its two halves are independent */
	uint64_t c1 = key_hash & a->mask;
	uint64_t c2 = (key_hash >> 32 | key_hash << 32) *
	    0x9e3779b97f4a7c15ull >> 16 & a->mask;

	pthread_mutex_lock(&a->lock);
	unsigned v1 = get(a, c1), v2 = get(a, c2);
	unsigned count = (v1 < v2 ? v1 : v2) + 1;  /* with this request */

	if (count <= 15) {
		if (v1 < count)
			raise_one(a, c1);
		if (v2 < count && c2 != c1)
			raise_one(a, c2);
	}
	if (++a->counted >= a->window) {
		halve(a);
		a->counted = 0;
	}
	pthread_mutex_unlock(&a->lock);
	return count >= a->hits;
}

uint64_t
admit_bytes(const struct admit *a)
{
	return sizeof(*a) + (a->mask + 1) / 2;
}
