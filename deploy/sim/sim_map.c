/*
 * (proxy, object) -> value, for every proxy's cache and ghosts: linear
 * probing with backward-shift deletion, so a table that sees millions of
 * inserts and deletes never fills with tombstones.
 */
#include <stdlib.h>

#include "sim.h"

static uint64_t
map_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	return k ^ (k >> 33);
}

static void
map_grow(struct map *m)
{
	struct map old = *m;

	m->nslots = old.nslots ? old.nslots * 2 : 1 << 16;
	m->key = xcalloc(m->nslots, sizeof(*m->key));
	m->val = xcalloc(m->nslots, sizeof(*m->val));
	m->n = 0;
	for (size_t i = 0; i < old.nslots; i++)
		if (old.key[i] != 0)
			map_put(m, old.key[i] - 1, old.val[i]);
	free(old.key);
	free(old.val);
}

uint64_t
map_key(unsigned proxy, uint32_t obj)
{
	return (uint64_t)proxy << 32 | obj;
}

/* slot of key, or of the empty slot where it would go */
static size_t
map_slot(const struct map *m, uint64_t key)
{
	size_t s = map_hash(key) & (m->nslots - 1);

	while (m->key[s] != 0 && m->key[s] != key + 1)
		s = (s + 1) & (m->nslots - 1);
	return s;
}

uint32_t
map_get(const struct map *m, uint64_t key)
{
	if (m->n == 0)
		return NIL;
	size_t s = map_slot(m, key);
	return m->key[s] != 0 ? m->val[s] : NIL;
}

void
map_put(struct map *m, uint64_t key, uint32_t val)
{
	if (2 * (m->n + 1) > m->nslots)
		map_grow(m);
	size_t s = map_slot(m, key);
	if (m->key[s] == 0)
		m->n++;
	m->key[s] = key + 1;
	m->val[s] = val;
}

void
map_del(struct map *m, uint64_t key)
{
	if (m->n == 0)
		return;
	size_t mask = m->nslots - 1, s = map_slot(m, key);

	if (m->key[s] == 0)
		return;
	m->n--;
	/* shift back every later entry of the run that may move into the
	 * hole: one whose home slot is not in (hole, j] cyclically */
	for (size_t j = s;;) {
		m->key[s] = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (m->key[j] == 0)
				return;
			size_t home = map_hash(m->key[j] - 1) & mask;
			if (s <= j ? (home <= s || home > j) :
			    (home <= s && home > j))
				break;
		}
		m->key[s] = m->key[j];
		m->val[s] = m->val[j];
		s = j;
	}
}


void
map_free(struct map *m)
{
	free(m->key);
	free(m->val);
	*m = (struct map){0};
}
