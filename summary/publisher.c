/*
 * See publisher.h.
 */
#include "publisher.h"

#include <stdlib.h>
#include <string.h>

#include "sc_assert.h"

#define NIL UINT32_MAX

/* A key of the table: the stored objects that have it, and until when
 * the filter claims it. */
struct claim {
	struct sumkey key;
	uint64_t until_ms;   /* claimed while now is before it */
	uint32_t objects;    /* stored objects with this key; 0: a free slot */
	uint32_t next;       /* hash chain, or the free list */
	uint32_t heap;       /* place in the deadline heap, or NIL */
	bool claimed;        /* counted in the filter */
	uint8_t parity;      /* the filter that counts it, while claimed */
};

struct publisher {
	struct pub_conf conf;
	struct cbf *local;       /* counts the claimed keys; is published */
	struct cbf *next;        /* being built larger, or NULL */
	bool rebuilding;         /* a walk is running (next may be NULL) */
	uint8_t parity;          /* the parity of keys local counts */
	size_t walk_at;          /* the rebuild's next slot */
	uint64_t capacity;       /* keys local was sized for */
	uint64_t seq;
	uint64_t last_publish_ms;
	uint64_t interval_ms;    /* mean interval between publications */
	uint64_t deltas, fulls, rebuilds, expired;
	/* the table: slots, hash buckets (a power of two), free slots */
	struct claim *claims;
	size_t nclaims, cap;     /* slots used (live or free), allocated */
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
bucket_of(const struct publisher *p, const struct sumkey *k)
{
	uint64_t h;

	memcpy(&h, k->bytes, sizeof(h));
	return (size_t)(h ^ (h >> 29)) & (p->nbuckets - 1);
}

static uint32_t
find(const struct publisher *p, const struct sumkey *k)
{
	if (p->nbuckets == 0)
		return NIL;
	for (uint32_t i = p->buckets[bucket_of(p, k)]; i != NIL;
	    i = p->claims[i].next)
		if (memcmp(p->claims[i].key.bytes, k->bytes,
		    sizeof(k->bytes)) == 0)
			return i;
	return NIL;
}

/* Twice the buckets, every live slot hashed again. */
static bool
grow_buckets(struct publisher *p)
{
	size_t n = p->nbuckets ? 2 * p->nbuckets : 1024;
	uint32_t *b = malloc(n * sizeof(*b));

	if (b == NULL)
		return false;
	memset(b, 0xff, n * sizeof(*b));
	free(p->buckets);
	p->buckets = b;
	p->nbuckets = n;
	for (size_t i = 0; i < p->nclaims; i++) {
		struct claim *c = &p->claims[i];
		if (c->objects == 0)
			continue;
		size_t at = bucket_of(p, &c->key);
		c->next = b[at];
		b[at] = (uint32_t)i;
	}
	return true;
}

static uint32_t
slot_new(struct publisher *p, const struct sumkey *k)
{
	if (p->keys + 1 > p->nbuckets && !grow_buckets(p))
		return NIL;
	uint32_t i = p->free;
	if (i != NIL) {
		p->free = p->claims[i].next;
	} else {
		if (p->nclaims == p->cap) {
			size_t cap = p->cap ? 2 * p->cap : 1024;
			struct claim *c = cap < NIL ? realloc(p->claims,
			    cap * sizeof(*c)) : NULL;
			if (c == NULL)
				return NIL;
			p->claims = c;
			p->cap = cap;
		}
		i = (uint32_t)p->nclaims++;
	}
	struct claim *c = &p->claims[i];
	size_t at = bucket_of(p, k);
	*c = (struct claim){.key = *k, .heap = NIL, .next = p->buckets[at]};
	p->buckets[at] = i;
	p->keys++;
	return i;
}

static void
slot_free(struct publisher *p, uint32_t i)
{
	uint32_t *link = &p->buckets[bucket_of(p, &p->claims[i].key)];

	while (*link != i)
		link = &p->claims[*link].next;
	*link = p->claims[i].next;
	p->claims[i].objects = 0;
	p->claims[i].next = p->free;
	p->free = i;
	p->keys--;
}

/* ---- the deadline heap ---- */

static bool
sooner(const struct publisher *p, size_t a, size_t b)
{
	return p->claims[p->heap[a]].until_ms < p->claims[p->heap[b]].until_ms;
}

static void
heap_swap(struct publisher *p, size_t a, size_t b)
{
	uint32_t t = p->heap[a];

	p->heap[a] = p->heap[b];
	p->heap[b] = t;
	p->claims[p->heap[a]].heap = (uint32_t)a;
	p->claims[p->heap[b]].heap = (uint32_t)b;
}

static void
heap_fix(struct publisher *p, size_t at)
{
	while (at > 0 && sooner(p, at, (at - 1) / 2)) {
		heap_swap(p, at, (at - 1) / 2);
		at = (at - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * at + 1, r = l + 1, m = at;
		if (l < p->nheap && sooner(p, l, m))
			m = l;
		if (r < p->nheap && sooner(p, r, m))
			m = r;
		if (m == at)
			return;
		heap_swap(p, at, m);
		at = m;
	}
}

static bool
heap_push(struct publisher *p, uint32_t i)
{
	if (p->nheap == p->heapcap) {
		size_t cap = p->heapcap ? 2 * p->heapcap : 1024;
		uint32_t *h = realloc(p->heap, cap * sizeof(*h));
		if (h == NULL)
			return false;
		p->heap = h;
		p->heapcap = cap;
	}
	p->heap[p->nheap] = i;
	p->claims[i].heap = (uint32_t)p->nheap++;
	heap_fix(p, p->nheap - 1);
	return true;
}

static void
heap_remove(struct publisher *p, uint32_t i)
{
	size_t at = p->claims[i].heap;

	p->claims[i].heap = NIL;
	if (at != --p->nheap) {
		p->heap[at] = p->heap[p->nheap];
		p->claims[p->heap[at]].heap = (uint32_t)at;
		heap_fix(p, at);
	}
}

/* ---- claiming ---- */

/* The parity a key claimed now gets: the new filter's during a walk. */
static uint8_t
claim_parity(const struct publisher *p)
{
	return p->rebuilding ? !p->parity : p->parity;
}

static void
claim(struct publisher *p, uint32_t i)
{
	struct claim *c = &p->claims[i];

	c->claimed = true;
	c->parity = claim_parity(p);
	cbf_add(p->local, &c->key);
	if (p->rebuilding && p->next != NULL)
		cbf_add(p->next, &c->key);
	/* a deadline heap that cannot grow: claimed until it leaves */
	if (c->until_ms != PUB_FOREVER)
		heap_push(p, i);
}

static void
unclaim(struct publisher *p, uint32_t i)
{
	struct claim *c = &p->claims[i];

	c->claimed = false;
	if (c->heap != NIL)
		heap_remove(p, i);
	/* in the new filter only if the walk passed it or it came after */
	if (p->rebuilding && p->next != NULL && c->parity != p->parity)
		cbf_remove(p->next, &c->key);
	cbf_remove(p->local, &c->key);
}

uint64_t
pub_expected_objects(uint64_t cache_bytes, uint64_t object_bytes)
{
	uint64_t n = cache_bytes / (object_bytes ? object_bytes : 1);

	return n < PUB_MIN_OBJECTS ? PUB_MIN_OBJECTS : n;
}

uint64_t
pub_tick_ms(const struct pub_conf *c)
{
	uint64_t every = c->max_interval_ms / 4;

	return every < 100 ? 100 : every;
}

static uint64_t
filter_bits(const struct publisher *p, uint64_t objects)
{
	uint64_t m = cbf_size_for(objects, p->conf.bits_per_entry);

	return p->conf.max_bits != 0 && m > p->conf.max_bits ?
	    p->conf.max_bits : m;
}

struct publisher *
pub_new(const struct pub_conf *c, uint64_t now_us, uint64_t now_ms)
{
	struct publisher *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->conf = *c;
	p->capacity = c->expected_objects;
	p->local = cbf_new(c->scheme, filter_bits(p, c->expected_objects),
	    c->k, now_us);
	if (p->local == NULL) {
		free(p);
		return NULL;
	}
	/* sequence 1 is the empty filter, as made */
	p->seq = 1;
	p->last_publish_ms = now_ms;
	p->free = NIL;
	return p;
}

void
pub_free(struct publisher **pp)
{
	struct publisher *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	cbf_free(&p->local);
	cbf_free(&p->next);
	free(p->claims);
	free(p->buckets);
	free(p->heap);
	free(p);
}

void
pub_set_pace(struct publisher *p, double threshold, uint64_t max_interval_ms)
{
	p->conf.threshold = threshold;
	p->conf.max_interval_ms = max_interval_ms;
}

uint64_t
pub_margin_ms(const struct publisher *p)
{
	uint64_t max = p->conf.max_interval_ms;

	return max > 0 && p->interval_ms > max ? max : p->interval_ms;
}

bool
pub_added(struct publisher *p, const struct sumkey *k, uint64_t expires_ms,
    uint64_t now_ms)
{
	uint64_t margin = pub_margin_ms(p);
	uint64_t until = expires_ms == PUB_FOREVER ? PUB_FOREVER :
	    expires_ms > margin ? expires_ms - margin : 0;
	uint32_t i = find(p, k);

	if (i == NIL && (i = slot_new(p, k)) == NIL)
		return false;
	struct claim *c = &p->claims[i];
	c->objects++;
	if (c->objects > 1 && until <= c->until_ms)
		return true;  /* a variant: the key's deadline is the latest */
	c->until_ms = until;
	if (c->claimed && c->heap != NIL && until == PUB_FOREVER)
		heap_remove(p, i);
	else if (c->claimed && c->heap != NIL)
		heap_fix(p, c->heap);
	else if (!c->claimed && until > now_ms)
		claim(p, i);
	return true;
}

bool
pub_removed(struct publisher *p, const struct sumkey *k)
{
	uint32_t i = find(p, k);

	if (i == NIL) {
		p->local->bad_removes++;
		return false;
	}
	if (--p->claims[i].objects > 0)
		return true;
	if (p->claims[i].claimed)
		unclaim(p, i);
	slot_free(p, i);
	return true;
}

uint64_t
pub_expire(struct publisher *p, uint64_t now_ms)
{
	uint64_t n = 0;

	while (p->nheap > 0 && p->claims[p->heap[0]].until_ms <= now_ms) {
		unclaim(p, p->heap[0]);
		n++;
	}
	p->expired += n;
	return n;
}

bool
pub_wants_rebuild(const struct publisher *p)
{
	return !p->rebuilding && p->local->entries > p->capacity;
}

bool
pub_rebuilding(const struct publisher *p)
{
	return p->rebuilding;
}

void
pub_rebuild_begin(struct publisher *p, uint64_t now_us)
{
	SC_ASSERT(!p->rebuilding);
	/* room to double again before the next rebuild */
	uint64_t cap = 2 * p->local->entries;
	uint64_t epoch = now_us > p->local->epoch ? now_us :
	    p->local->epoch + 1;

	p->next = cbf_new(p->conf.scheme, filter_bits(p, cap), p->conf.k,
	    epoch);
	/* asked once per growth, even when there is no memory for it */
	p->capacity = p->next != NULL ? cap : 2 * p->capacity;
	p->rebuilding = true;
	p->walk_at = 0;
}

bool
pub_rebuild_step(struct publisher *p, size_t max)
{
	SC_ASSERT(p->rebuilding);
	for (; p->walk_at < p->nclaims && max > 0; p->walk_at++, max--) {
		struct claim *c = &p->claims[p->walk_at];
		if (c->objects == 0 || !c->claimed || c->parity != p->parity)
			continue;
		if (p->next != NULL)
			cbf_add(p->next, &c->key);
		c->parity = !p->parity;
	}
	return p->walk_at >= p->nclaims;
}

int
pub_rebuild_end(struct publisher *p, uint64_t now_ms,
    struct publication *out)
{
	SC_ASSERT(p->rebuilding);
	p->rebuilding = false;
	p->parity = !p->parity;
	if (p->next == NULL)
		return 0;
	cbf_free(&p->local);
	p->local = p->next;
	p->next = NULL;
	p->rebuilds++;
	/* a new epoch starts with a full summary at sequence 1: marked
	 * published, so the next delta is relative to it */
	cbf_mark_published(p->local);
	p->seq = 1;
	p->last_publish_ms = now_ms;
	p->fulls++;
	return pub_last_full(p, out) < 0 ? -1 : 1;
}

int
pub_announce(struct publisher *p, uint64_t now_us, uint64_t now_ms,
    struct publication *out)
{
	if (p->rebuilding)
		return 0;
	p->local->epoch = now_us > p->local->epoch ? now_us :
	    p->local->epoch + 1;
	cbf_mark_published(p->local);
	p->seq = 1;
	p->last_publish_ms = now_ms;
	p->fulls++;
	return pub_last_full(p, out) < 0 ? -1 : 1;
}

static uint64_t
threshold_changes(const struct publisher *p)
{
	double t = p->conf.threshold * (double)p->local->entries;

	return t < 1 ? 1 : (uint64_t)t;
}

bool
pub_threshold_reached(const struct publisher *p)
{
	return p->local->changes >= threshold_changes(p);
}

bool
pub_interval_due(const struct publisher *p, uint64_t now_ms)
{
	return p->conf.max_interval_ms > 0 && p->local->changes > 0 &&
	    now_ms - p->last_publish_ms >= p->conf.max_interval_ms;
}

static void
describe(const struct publisher *p, bool full, uint64_t checksum,
    struct publication *out)
{
	const struct cbf *f = p->local;

	out->full = full;
	out->scheme = f->scheme;
	out->m = f->m;
	out->k = f->k;
	out->epoch = f->epoch;
	out->seq = p->seq;
	out->entries = f->entries;
	out->checksum = checksum;
}

int
pub_publish(struct publisher *p, uint64_t now_ms, struct publication *out)
{
	bool full;
	uint64_t checksum;

	if (sum_publish(p->local, &out->payload, &full, &checksum) < 0)
		return -1;
	/* the delay a change waits to be published: its mean, recent
	 * intervals weighing most */
	uint64_t gap = now_ms > p->last_publish_ms ?
	    now_ms - p->last_publish_ms : 0;
	p->interval_ms = p->deltas + p->fulls == 0 ? gap :
	    (4 * p->interval_ms + gap) / 5;
	p->seq++;
	p->last_publish_ms = now_ms;
	if (full)
		p->fulls++;
	else
		p->deltas++;
	describe(p, full, checksum, out);
	return 0;
}

int
pub_last_full(const struct publisher *p, struct publication *out)
{
	const struct cbf *f = p->local;

	if (sum_encode_full(f->published, f->m, &out->payload) < 0)
		return -1;
	describe(p, true, sum_checksum(f->published, f->m), out);
	return 0;
}

const struct cbf *
pub_filter(const struct publisher *p)
{
	return p->local;
}

void
pub_stats(const struct publisher *p, struct pub_stats *out)
{
	*out = (struct pub_stats){
		.seq = p->seq,
		.deltas = p->deltas,
		.fulls = p->fulls,
		.rebuilds = p->rebuilds,
		.last_publish_ms = p->last_publish_ms,
		.expired = p->expired,
		.keys = p->keys,
		.table_bytes = p->cap * sizeof(struct claim) +
		    p->nbuckets * sizeof(uint32_t) +
		    p->heapcap * sizeof(uint32_t),
	};
}
