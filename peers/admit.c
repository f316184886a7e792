/*
 * The doorkeeper of admit.h: two generations of a Bloom filter with two
 * hash functions, cleared in turn.
 */
#include "admit.h"

#include <stdlib.h>
#include <string.h>

struct admit {
	enum admit_rule rule;
	uint64_t mask;          /* bits per generation - 1 */
	uint64_t *gen[2];       /* gen[cur] takes new keys */
	unsigned cur;
	uint64_t taken;         /* new keys in gen[cur] */
	uint64_t window;
};

static const char *const rule_names[] = {"always", "second-hit", "never"};

const char *
admit_rule_name(enum admit_rule r)
{
	return r <= ADMIT_NEVER ? rule_names[r] : "?";
}

int
admit_rule_parse(const char *s, enum admit_rule *r)
{
	for (unsigned i = 0; i <= ADMIT_NEVER; i++)
		if (strcmp(s, rule_names[i]) == 0) {
			*r = (enum admit_rule)i;
			return 0;
		}
	return -1;
}

struct admit *
admit_new(enum admit_rule rule, uint64_t window)
{
	struct admit *a = calloc(1, sizeof(*a));
	uint64_t bits = 64;

	if (a == NULL)
		return NULL;
	if (window < 1024)
		window = 1024;
	while (bits < 8 * window)
		bits <<= 1;
	a->rule = rule;
	a->window = window;
	a->mask = bits - 1;
	a->gen[0] = calloc(bits / 64, sizeof(uint64_t));
	a->gen[1] = calloc(bits / 64, sizeof(uint64_t));
	if (a->gen[0] == NULL || a->gen[1] == NULL)
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
	free(a->gen[0]);
	free(a->gen[1]);
	free(a);
}

static bool
test(const uint64_t *g, uint64_t bit)
{
	return (g[bit >> 6] >> (bit & 63)) & 1;
}

bool
admit_keep(struct admit *a, uint64_t key_hash)
{
	if (a->rule != ADMIT_SECOND_HIT)
		return a->rule == ADMIT_ALWAYS;
	/* the key hash is xxh3's: its halves are independent positions */
	uint64_t b1 = key_hash & a->mask, b2 = (key_hash >> 32 |
	    key_hash << 32) * 0x9e3779b97f4a7c15ull >> 20 & a->mask;
	uint64_t *now = a->gen[a->cur], *old = a->gen[!a->cur];
	bool in_now = test(now, b1) && test(now, b2);
	bool seen = in_now || (test(old, b1) && test(old, b2));

	if (in_now)
		return true;
	now[b1 >> 6] |= 1ull << (b1 & 63);
	now[b2 >> 6] |= 1ull << (b2 & 63);
	if (++a->taken >= a->window) {
		/* the older generation is forgotten; the newer becomes it */
		memset(old, 0, (a->mask + 1) / 8);
		a->cur = !a->cur;
		a->taken = 0;
	}
	return seen;
}

uint64_t
admit_bytes(const struct admit *a)
{
	return sizeof(*a) + 2 * (a->mask + 1) / 8;
}
