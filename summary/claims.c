/*
 * See claims.h.
 */
#include "claims.h"

#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

struct claims {
	/* the slots, hash buckets (a power of two), free slots */
	struct claim *slots;
	size_t nslots, cap;      /* slots used (live or free), allocated */
	uint32_t *buckets;
	size_t nbuckets;
	uint32_t free;
	size_t keys;             /* live slots */
	/* claimed keys with a deadline, soonest first */
	uint32_t *heap;
	size_t nheap, heapcap;
};

/* ---- the table ---- */

static size_t
bucket_of(const struct claims *t, const struct sumkey *k)
{
	uint64_t h;

	memcpy(&h, k->bytes, sizeof(h));
	return (size_t)(h ^ (h >> 29)) & (t->nbuckets - 1);
}

static uint32_t
find(const struct claims *t, const struct sumkey *k)
{
	if (t->nbuckets == 0)
		return NIL;
	for (uint32_t i = t->buckets[bucket_of(t, k)]; i != NIL;
	    i = t->slots[i].next)
		if (memcmp(t->slots[i].key.bytes, k->bytes,
		    sizeof(k->bytes)) == 0)
			return i;
	return NIL;
}

/* Twice the buckets, every live slot hashed again. */
static bool
grow_buckets(struct claims *t)
{
	size_t n = t->nbuckets ? 2 * t->nbuckets : 1024;
	uint32_t *b = malloc(n * sizeof(*b));

	if (b == NULL)
		return false;
	memset(b, 0xff, n * sizeof(*b));
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
	for (size_t i = 0; i < t->nslots; i++) {
		struct claim *c = &t->slots[i];
		if (c->objects == 0)
			continue;
		size_t at = bucket_of(t, &c->key);
		c->next = b[at];
		b[at] = (uint32_t)i;
	}
	return true;
}

static uint32_t
slot_new(struct claims *t, const struct sumkey *k)
{
	if (t->keys + 1 > t->nbuckets && !grow_buckets(t))
		return NIL;
	uint32_t i = t->free;
	if (i != NIL) {
		t->free = t->slots[i].next;
	} else {
		if (t->nslots == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 1024;
			struct claim *c = cap < NIL ? realloc(t->slots,
			    cap * sizeof(*c)) : NULL;
			if (c == NULL)
				return NIL;
			t->slots = c;
			t->cap = cap;
		}
		i = (uint32_t)t->nslots++;
	}
	struct claim *c = &t->slots[i];
	size_t at = bucket_of(t, k);
	*c = (struct claim){.key = *k, .heap = NIL, .next = t->buckets[at]};
	t->buckets[at] = i;
	t->keys++;
	return i;
}

static void
slot_free(struct claims *t, uint32_t i)
{
	uint32_t *link = &t->buckets[bucket_of(t, &t->slots[i].key)];

	while (*link != i)
		link = &t->slots[*link].next;
	*link = t->slots[i].next;
	t->slots[i].objects = 0;
	t->slots[i].next = t->free;
	t->free = i;
	t->keys--;
}

/* ---- the deadline heap ---- */

static bool
sooner(const struct claims *t, size_t a, size_t b)
{
	return t->slots[t->heap[a]].until_ms < t->slots[t->heap[b]].until_ms;
}

static void
heap_swap(struct claims *t, size_t a, size_t b)
{
	uint32_t x = t->heap[a];

	t->heap[a] = t->heap[b];
	t->heap[b] = x;
	t->slots[t->heap[a]].heap = (uint32_t)a;
	t->slots[t->heap[b]].heap = (uint32_t)b;
}

static void
heap_fix(struct claims *t, size_t at)
{
	while (at > 0 && sooner(t, at, (at - 1) / 2)) {
		heap_swap(t, at, (at - 1) / 2);
		at = (at - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * at + 1, r = l + 1, m = at;
		if (l < t->nheap && sooner(t, l, m))
			m = l;
		if (r < t->nheap && sooner(t, r, m))
			m = r;
		if (m == at)
			return;
		heap_swap(t, at, m);
		at = m;
	}
}

static bool
heap_push(struct claims *t, uint32_t i)
{
	if (t->nheap == t->heapcap) {
		size_t cap = t->heapcap ? 2 * t->heapcap : 1024;
		uint32_t *h = realloc(t->heap, cap * sizeof(*h));
		if (h == NULL)
			return false;
		t->heap = h;
		t->heapcap = cap;
	}
	t->heap[t->nheap] = i;
	t->slots[i].heap = (uint32_t)t->nheap++;
	heap_fix(t, t->nheap - 1);
	return true;
}

static void
heap_remove(struct claims *t, uint32_t i)
{
	size_t at = t->slots[i].heap;

	t->slots[i].heap = NIL;
	if (at != --t->nheap) {
		t->heap[at] = t->heap[t->nheap];
		t->slots[t->heap[at]].heap = (uint32_t)at;
		heap_fix(t, at);
	}
}

/* ---- claiming ---- */

struct claims *
claims_new(void)
{
	struct claims *t = calloc(1, sizeof(*t));

	if (t != NULL)
		t->free = NIL;
	return t;
}

void
claims_free(struct claims **tp)
{
	struct claims *t = *tp;

	if (t == NULL)
		return;
	*tp = NULL;
	free(t->slots);
	free(t->buckets);
	free(t->heap);
	free(t);
}

int
claims_add(struct claims *t, const struct sumkey *k, uint64_t until_ms,
    uint64_t now_ms, struct claim **out, uint64_t *was_ms)
{
	uint32_t i = find(t, k);

	if (i == NIL && (i = slot_new(t, k)) == NIL)
		return -1;
	struct claim *c = &t->slots[i];
	c->objects++;
	if (c->objects > 1 && until_ms <= c->until_ms)
		return 0;  /* a variant: the key's deadline is the latest */
	if (was_ms != NULL)
		*was_ms = c->until_ms;
	c->until_ms = until_ms;
	if (c->claimed) {
		if (c->heap != NIL && until_ms == CLAIMS_FOREVER)
			heap_remove(t, i);
		else if (c->heap != NIL)
			heap_fix(t, c->heap);
		*out = c;
		return 2;
	}
	if (until_ms <= now_ms)
		return 0;
	c->claimed = true;
	/* a deadline heap that cannot grow: claimed until it leaves */
	if (until_ms != CLAIMS_FOREVER)
		heap_push(t, i);
	*out = c;
	return 1;
}

int
claims_remove(struct claims *t, const struct sumkey *k, struct claim *gone)
{
	uint32_t i = find(t, k);

	if (i == NIL)
		return -1;
	struct claim *c = &t->slots[i];
	if (--c->objects > 0)
		return 0;
	bool was = c->claimed;
	if (c->heap != NIL)
		heap_remove(t, i);
	c->claimed = false;
	*gone = *c;
	slot_free(t, i);
	return was ? 1 : 0;
}

struct claim *
claims_lapse(struct claims *t, uint64_t now_ms)
{
	if (t->nheap == 0 || t->slots[t->heap[0]].until_ms > now_ms)
		return NULL;
	uint32_t i = t->heap[0];
	heap_remove(t, i);
	t->slots[i].claimed = false;
	return &t->slots[i];
}

size_t
claims_slots(const struct claims *t)
{
	return t->nslots;
}

struct claim *
claims_slot(struct claims *t, size_t i)
{
	return &t->slots[i];
}

size_t
claims_keys(const struct claims *t)
{
	return t->keys;
}

size_t
claims_bytes(const struct claims *t)
{
	return t->cap * sizeof(struct claim) + t->nbuckets *
	    sizeof(uint32_t) + t->heapcap * sizeof(uint32_t);
}
