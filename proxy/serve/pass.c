/*
 * See pass.h.
 *
 * Data model: a direct-mapped array of PASS_SLOTS slots, each the XXH3-64
 * of a URL and the time its mark ends; a URL's slot is its hash's low
 * bits. A URL marked into a taken slot replaces what was there: the cost
 * is that the other URL takes the usual way once more, never a wrong
 * answer, since a pass only chooses where a miss is fetched from. Two
 * URLs would have to share all 64 bits for one to be taken for the
 * other. 256 KB, allocated once; nothing is ever freed or grown.
 *
 * Every worker reads and marks it on its misses, with no lock: each
 * field is a relaxed atomic. A slot read while another worker writes it
 * may pair one URL's hash with the other's time, which is the cost
 * above again (one miss goes the usual way, or straight to the origin
 * once more), never a wrong answer.
 */
#include "pass.h"

#include <stdatomic.h>
#include <stdlib.h>

#include <xxhash.h>

struct slot {
	_Atomic uint64_t hash;
	_Atomic uint64_t until_ms;     /* 0: empty */
};

struct pass {
	struct slot slots[PASS_SLOTS];
};

struct pass *
pass_new(void)
{
	return calloc(1, sizeof(struct pass));
}

void
pass_free(struct pass **p)
{
	free(*p);
	*p = NULL;
}

static struct slot *
slot_of(const struct pass *p, uint64_t hash)
{
	return (struct slot *)&p->slots[hash & (PASS_SLOTS - 1)];
}

void
pass_note(struct pass *p, const char *url, size_t len, uint64_t now_ms)
{
	uint64_t h = XXH3_64bits(url, len);
	struct slot *s = slot_of(p, h);

	atomic_store_explicit(&s->hash, h, memory_order_relaxed);
	atomic_store_explicit(&s->until_ms, now_ms + PASS_TTL_MS,
	    memory_order_relaxed);
}

void
pass_clear(struct pass *p, const char *url, size_t len)
{
	uint64_t h = XXH3_64bits(url, len);
	struct slot *s = slot_of(p, h);

	if (atomic_load_explicit(&s->hash, memory_order_relaxed) == h)
		atomic_store_explicit(&s->until_ms, 0, memory_order_relaxed);
}

bool
pass_marked(const struct pass *p, const char *url, size_t len,
    uint64_t now_ms)
{
	uint64_t h = XXH3_64bits(url, len);
	const struct slot *s = slot_of(p, h);

	return atomic_load_explicit(&s->hash, memory_order_relaxed) == h &&
	    atomic_load_explicit(&s->until_ms, memory_order_relaxed) > now_ms;
}
