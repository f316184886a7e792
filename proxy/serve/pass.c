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
 */
#include "pass.h"

#include <stdlib.h>

#include <xxhash.h>

struct slot {
	uint64_t hash;
	uint64_t until_ms;     /* 0: empty */
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

	*slot_of(p, h) = (struct slot){h, now_ms + PASS_TTL_MS};
}

void
pass_clear(struct pass *p, const char *url, size_t len)
{
	uint64_t h = XXH3_64bits(url, len);
	struct slot *s = slot_of(p, h);

	if (s->hash == h)
		s->until_ms = 0;
}

bool
pass_marked(const struct pass *p, const char *url, size_t len,
    uint64_t now_ms)
{
	uint64_t h = XXH3_64bits(url, len);
	const struct slot *s = slot_of(p, h);

	return s->hash == h && s->until_ms > now_ms;
}
