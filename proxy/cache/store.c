/*
 * Memory object store.
 *
 * Data model: a chained hash table maps a key (the normalized URL) to the
 * objects stored under it, one per Vary variant. Every object is also on one
 * SIEVE queue, newest at the head. Objects are immutable once built; a 304
 * revalidation makes a new object that shares the old one's body.
 *
 * Ownership: the store holds one reference to each object in it. Bodies are
 * reference counted separately so that a client still receiving a body
 * (through a zero-copy evbuffer reference) keeps it alive after the object
 * is evicted or replaced.
 *
 * The budget covers those bodies too. An evicted body that someone still
 * holds (a slow client, a revalidation) stays in memory, so the store
 * keeps charging it: a pin, released when the last holder lets go, with
 * its bytes in stats.pinned and counted against the budget. Without it,
 * clients that stop reading hits while the cache churns could hold any
 * number of evicted bodies. A heap body's holders are its references; a
 * memfd body is sent as a file segment that libevent counts itself, so
 * its pin is released by bodyfd.c when the segment is let go. The cost:
 * while many evicted bodies are still in flight, fewer objects are kept,
 * and an object that does not fit beside them is not stored at all.
 *
 * Eviction is SIEVE (Zhang et al., NSDI 2024): a hit only sets a bit, no
 * list movement, so hits stay cheap; a hand sweeps from the oldest entry
 * toward the newest, clearing bits, and evicts the first unvisited object.
 * On web traces it keeps more hits than LRU for the same memory.
 *
 * The table doubles when it holds more objects than buckets. Rehashing is
 * one pass over the objects: about 10 ms per million, paid at most once per
 * doubling, which we accept rather than carry an incremental rehash.
 *
 * Threads. Every worker of a node calls the store, so it guards itself,
 * with two kinds of lock, and readers and writers take different ones.
 * A lookup (a hit) takes one stripe lock: the table's buckets are split
 * into STRIPES slices by the key's hash, and a stripe's lock guards its
 * buckets' chains (o->hnext). A change (insert, remove, invalidate, an
 * eviction) takes the queue lock, which guards the SIEVE queue, the
 * stats, the observers, in_store and a body's stored count, and then,
 * one at a time, the stripe of each chain it edits. So writers are one at
 * a time, a reader waits only for a writer editing its own stripe, and
 * two readers meet only when their keys share a stripe; the hit path
 * takes no lock every worker takes. Lock order: the queue, then one
 * stripe; growing the table takes every stripe, in order. A hit marks
 * its object visited with an atomic store, skipped when already set, and
 * references are atomic: a body is let go on whichever worker sent it
 * last. The pinned bytes are atomic too, for the same reason.
 *
 * The cost accepted: inserts, evictions and invalidations on all workers
 * go through one lock, held for the list moves and the observers' calls
 * (the summary's counters, the disk tier's links), a few hundred
 * nanoseconds. Misses are rarer than hits and each costs an origin
 * round trip; a store cut into independent shards, each with its own
 * queue, would evict by shard rather than by the whole cache. A
 * replaced copy stays findable until its successor is in the same
 * chain, swapped under one stripe hold, so a hit never misses a key
 * being refreshed.
 */
#include "store.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <strings.h>

#include <xxhash.h>

#include "sc_assert.h"

/* malloc's own header per allocation, counted so the budget is honest */
#define ALLOC_OVERHEAD 16

/* Slices of the table with a lock each: a power of two, at most the
 * table's first size, so a bucket's stripe never changes as it grows.
 * Two readers meet on one only when their keys share it: with 8 workers
 * hitting at once, 1 in 32 lookups finds another on its stripe, holding
 * it for the walk of one chain. (ThreadSanitizer tracks 64 locks held
 * at once by a thread; growing the table holds them all.) */
#define STRIPES 32

/* A lock on its own cache line: two stripes' readers share nothing. */
struct stripe {
	pthread_mutex_t lock;
} __attribute__((aligned(64)));

struct store {
	pthread_mutex_t queue;   /* guards what the essay says, below */
	/* the stripes' (all of them to change buckets or nbuckets) */
	struct store_obj **buckets;
	size_t nbuckets; /* power of two, at least STRIPES */
	/* the queue lock's */
	struct store_obj *head, *tail, *hand;
	size_t budget;
	struct store_stats stats; /* but pinned */
	struct store_observer obs[STORE_MAX_OBSERVERS];
	unsigned nobs;
	_Atomic uint64_t pinned;  /* stats.pinned, released anywhere */
	_Atomic uint64_t lock_waits, lock_wait_ns; /* stats', lock_counted */
	struct stripe stripes[STRIPES];
};

/* ---- bodies ---- */

struct store_body *
store_body_new(size_t cap)
{
	struct store_body *b = malloc(sizeof(*b) + cap);

	if (b == NULL)
		return NULL;
	atomic_init(&b->refs, 1);
	b->stored = 0;
	b->len = 0;
	b->cap = cap;
	b->ext = NULL;
	b->pin = NULL;
	b->data = b->mem;
	return b;
}

/* What a body costs the budget, wherever it is held. */
static size_t
body_charge(const struct store_body *b)
{
	if (b->ext != NULL && b->ext->on_disk)
		return sizeof(*b) + sizeof(*b->ext) + ALLOC_OVERHEAD;
	return sizeof(*b) + (size_t)(b->data - b->mem) + b->len +
	    ALLOC_OVERHEAD;
}

int
store_body_append(struct store_body **bp, const void *p, size_t n)
{
	struct store_body *b = *bp;

	SC_ASSERT(atomic_load(&b->refs) == 1 && b->data == b->mem);
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b = realloc(b, sizeof(*b) + cap);
		if (b == NULL)
			return -1;
		b->cap = cap;
		b->data = b->mem;
		*bp = b;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void
store_body_shrink(struct store_body **bp)
{
	struct store_body *b = *bp;

	SC_ASSERT(atomic_load(&b->refs) == 1 && b->data == b->mem);
	if (b->cap == b->len)
		return;
	b = realloc(b, sizeof(*b) + b->len);
	if (b != NULL) {
		b->cap = b->len;
		b->data = b->mem;
		*bp = b;
	}
}

void
store_body_drop_data(struct store_body **bp)
{
	struct store_body *b = *bp;

	SC_ASSERT(atomic_load(&b->refs) == 1);
	b = realloc(b, sizeof(*b));
	if (b != NULL)
		*bp = b;
	(*bp)->cap = 0;
	(*bp)->data = (*bp)->mem;
}

struct store_body *
store_body_ref(struct store_body *b)
{
	/* the caller holds one already: nothing to order */
	uint32_t was = atomic_fetch_add_explicit(&b->refs, 1,
	    memory_order_relaxed);
	SC_ASSERT(was > 0);
	return b;
}

void
store_body_unref(struct store_body **bp)
{
	struct store_body *b = *bp;

	if (b == NULL)
		return;
	*bp = NULL;
	/* release our writes; the last one acquires everyone's */
	uint32_t was = atomic_fetch_sub_explicit(&b->refs, 1,
	    memory_order_acq_rel);
	SC_ASSERT(was > 0);
	if (was > 1)
		return;
	SC_ASSERT(b->stored == 0);
	store_pin_release(&b->pin);
	if (b->ext != NULL) {
		b->ext->free(b->ext->handle);
		free(b->ext);
	}
	free(b);
}

void
store_body_release_cb(const void *data, size_t len, void *extra)
{
	struct store_body *b = extra;

	(void)data;
	(void)len;
	store_body_unref(&b);
}

/* ---- objects ---- */

struct store_obj *
store_obj_new(const char *key, size_t klen, const char *head, size_t hlen,
    const char *varykey, size_t vlen, const struct store_meta *meta,
    struct store_body *body)
{
	struct store_obj *o = malloc(sizeof(*o) + klen + hlen + vlen + 3);

	if (o == NULL)
		return NULL;
	memset(o, 0, sizeof(*o));
	char *p = o->key;
	memcpy(p, key, klen);
	p[klen] = '\0';
	p += klen + 1;
	memcpy(p, head, hlen);
	p[hlen] = '\0';
	p += hlen + 1;
	memcpy(p, varykey, vlen);
	p[vlen] = '\0';
	o->key_len = (uint32_t)klen;
	o->head_len = (uint32_t)hlen;
	o->vary_len = (uint32_t)vlen;
	o->hash = XXH3_64bits(key, klen);
	atomic_init(&o->refs, 1);
	atomic_init(&o->visited, false);
	o->meta = *meta;
	o->body = store_body_ref(body);
	o->charge = sizeof(*o) + klen + hlen + vlen + 3 + ALLOC_OVERHEAD;
	/* a body shared by two versions is charged to each: conservative */
	o->charge += body_charge(body);
	return o;
}

struct store_obj *
store_obj_with_body(const struct store_obj *o, struct store_body *body)
{
	return store_obj_new(o->key, o->key_len, store_obj_head(o),
	    o->head_len, store_obj_varykey(o), o->vary_len, &o->meta, body);
}

struct store_obj *
store_obj_ref(struct store_obj *o)
{
	uint32_t was = atomic_fetch_add_explicit(&o->refs, 1,
	    memory_order_relaxed);
	SC_ASSERT(was > 0);
	return o;
}

void
store_obj_unref(struct store_obj **op)
{
	struct store_obj *o = *op;

	if (o == NULL)
		return;
	*op = NULL;
	uint32_t was = atomic_fetch_sub_explicit(&o->refs, 1,
	    memory_order_acq_rel);
	SC_ASSERT(was > 0);
	if (was > 1)
		return;
	SC_ASSERT(!o->in_store);
	store_body_unref(&o->body);
	free(o);
}

bool
store_head_next(const struct store_obj *o, size_t *pos, const char **name,
    size_t *nlen, const char **val, size_t *vlen)
{
	const char *h = store_obj_head(o), *end = h + o->head_len;
	const char *p = h + *pos;

	if (p >= end)
		return false;
	const char *eol = memchr(p, '\r', (size_t)(end - p));
	const char *colon = memchr(p, ':', (size_t)(end - p));
	/* the store writes "Name: value\r\n" itself; anything else is a bug */
	SC_ASSERT(eol != NULL && colon != NULL && colon < eol);
	*name = p;
	*nlen = (size_t)(colon - p);
	*val = colon + 1;
	while (*val < eol && **val == ' ')
		(*val)++;
	*vlen = (size_t)(eol - *val);
	*pos = (size_t)(eol + 2 - h);
	return true;
}

bool
store_head_find(const struct store_obj *o, const char *name,
    const char **val, size_t *vlen)
{
	const char *n;
	size_t nl, pos = 0, len = strlen(name);

	while (store_head_next(o, &pos, &n, &nl, val, vlen))
		if (nl == len && strncasecmp(n, name, len) == 0)
			return true;
	return false;
}

/* ---- pins: evicted bodies still being sent ---- */

struct store_pin {
	struct store *s;
	size_t charge;
};

void
store_pin_release(struct store_pin **pp)
{
	struct store_pin *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	uint64_t was = atomic_fetch_sub_explicit(&p->s->pinned, p->charge,
	    memory_order_relaxed);
	SC_ASSERT(was >= p->charge);
	free(p);
}

static struct store_pin **
pin_slot(struct store_body *b)
{
	return b->ext != NULL && b->ext->pin != NULL ? b->ext->pin : &b->pin;
}

static void
body_entered(struct store_body *b)
{
	if (b->stored++ == 0)
		store_pin_release(pin_slot(b));
}

/* o, leaving the store, was the last stored holder of its body: when
 * anyone else may still hold the body, the store keeps charging it. */
static void
body_left(struct store *s, struct store_obj *o)
{
	struct store_body *b = o->body;

	SC_ASSERT(b->stored > 0);
	if (--b->stored > 0)
		return;
	/* a segment's senders are libevent's count, not ours: pinned
	 * always, released at once by bodyfd.c when there are none */
	if (atomic_load(&b->refs) == 1 && atomic_load(&o->refs) == 1 &&
	    pin_slot(b) == &b->pin)
		return;
	struct store_pin *p = malloc(sizeof(*p));
	if (p == NULL)
		return; /* uncharged rather than an eviction that fails */
	*p = (struct store_pin){s, body_charge(b)};
	*pin_slot(b) = p;
	atomic_fetch_add_explicit(&s->pinned, p->charge,
	    memory_order_relaxed);
}

/* ---- the table and queue ---- */

struct store *
store_new(size_t budget)
{
	struct store *s = aligned_alloc(_Alignof(struct store),
	    sizeof(struct store));

	if (s == NULL)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->nbuckets = 1024;
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	if (s->buckets == NULL) {
		free(s);
		return NULL;
	}
	s->budget = budget;
	pthread_mutex_init(&s->queue, NULL);
	for (unsigned i = 0; i < STRIPES; i++)
		pthread_mutex_init(&s->stripes[i].lock, NULL);
	return s;
}

int
store_observe(struct store *s, const struct store_observer *ob)
{
	int rc = -1;

	pthread_mutex_lock(&s->queue);
	if (s->nobs < STORE_MAX_OBSERVERS) {
		s->obs[s->nobs++] = *ob;
		rc = 0;
	}
	pthread_mutex_unlock(&s->queue);
	return rc;
}

void
store_unobserve(struct store *s, const void *arg)
{
	unsigned kept = 0;

	pthread_mutex_lock(&s->queue);
	for (unsigned i = 0; i < s->nobs; i++)
		if (s->obs[i].arg != arg)
			s->obs[kept++] = s->obs[i];
	s->nobs = kept;
	pthread_mutex_unlock(&s->queue);
}

struct store_stats
store_stats(struct store *s)
{
	pthread_mutex_lock(&s->queue);
	struct store_stats st = s->stats;
	pthread_mutex_unlock(&s->queue);
	st.pinned = atomic_load_explicit(&s->pinned, memory_order_relaxed);
	st.lock_waits = atomic_load_explicit(&s->lock_waits,
	    memory_order_relaxed);
	st.lock_wait_us = atomic_load_explicit(&s->lock_wait_ns,
	    memory_order_relaxed) / 1000;
	return st;
}

/* Takes m. A wait is counted, and timed, only when another thread
 * holds it: the path without one is a trylock, which costs what a lock
 * does. So the contention the workers meet is a counter, not a guess. */
static void
lock_counted(struct store *s, pthread_mutex_t *m)
{
	struct timespec t0, t1;

	if (pthread_mutex_trylock(m) == 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(m);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	atomic_fetch_add_explicit(&s->lock_waits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->lock_wait_ns, (uint64_t)((t1.tv_sec -
	    t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec)),
	    memory_order_relaxed);
}

static pthread_mutex_t *
stripe_of(struct store *s, uint64_t hash)
{
	return &s->stripes[hash & (STRIPES - 1)].lock;
}

/* Under hash's stripe lock, or the queue lock to read: only its holder
 * changes a chain, under the stripe's lock too, to keep readers out. */
static struct store_obj **
bucket(struct store *s, uint64_t hash)
{
	return &s->buckets[hash & (s->nbuckets - 1)];
}

/* Under the queue lock: takes every stripe, so no reader is in a chain. */
static void
grow(struct store *s)
{
	size_t n = s->nbuckets * 2;
	struct store_obj **nb = calloc(n, sizeof(*nb));

	if (nb == NULL)
		return; /* keep the longer chains; correctness is unaffected */
	for (unsigned i = 0; i < STRIPES; i++)
		pthread_mutex_lock(&s->stripes[i].lock);
	for (size_t i = 0; i < s->nbuckets; i++) {
		struct store_obj *o = s->buckets[i], *next;
		for (; o != NULL; o = next) {
			next = o->hnext;
			o->hnext = nb[o->hash & (n - 1)];
			nb[o->hash & (n - 1)] = o;
		}
	}
	free(s->buckets);
	s->buckets = nb;
	s->nbuckets = n;
	for (unsigned i = STRIPES; i-- > 0;)
		pthread_mutex_unlock(&s->stripes[i].lock);
}

/* Under o's stripe lock: takes o out of its chain. */
static void
unchain(struct store *s, struct store_obj *o)
{
	struct store_obj **pp = bucket(s, o->hash);

	while (*pp != o) {
		SC_ASSERT(*pp != NULL);
		pp = &(*pp)->hnext;
	}
	*pp = o->hnext;
	o->hnext = NULL;
}

/* Under the queue lock: takes o, out of its chain already or about to
 * be, out of the queue and the stats. */
static void
dequeue(struct store *s, struct store_obj *o)
{
	if (s->hand == o)
		s->hand = o->newer;
	if (o->newer)
		o->newer->older = o->older;
	else
		s->head = o->older;
	if (o->older)
		o->older->newer = o->newer;
	else
		s->tail = o->newer;
	o->newer = o->older = NULL;
	o->in_store = false;
	s->stats.objects--;
	s->stats.bytes -= o->charge;
}

/* Under the queue lock, o out of its chain: no lookup can take a new
 * reference, so body_left's count of holders is final. Gives up o's
 * hold on its body, tells the observers, drops the store's reference. */
static void
release_obj(struct store *s, struct store_obj *o, enum store_exit why)
{
	body_left(s, o);
	for (unsigned i = 0; i < s->nobs; i++)
		s->obs[i].removed(s->obs[i].arg, o, why);
	store_obj_unref(&o);
}

/* Under the queue lock. */
static void
unlink_obj(struct store *s, struct store_obj *o, enum store_exit why)
{
	pthread_mutex_t *stripe = stripe_of(s, o->hash);

	pthread_mutex_lock(stripe);
	unchain(s, o);
	pthread_mutex_unlock(stripe);
	dequeue(s, o);
	release_obj(s, o, why);
}

/* SIEVE: evict the first unvisited object at or after the hand. Under
 * the queue lock; a hit racing with the sweep may set a bit the hand has
 * just cleared, and saves its object next time round, as SIEVE allows. */
static void
evict_one(struct store *s)
{
	struct store_obj *o = s->hand ? s->hand : s->tail;

	SC_ASSERT(o != NULL);
	while (atomic_load_explicit(&o->visited, memory_order_relaxed)) {
		atomic_store_explicit(&o->visited, false,
		    memory_order_relaxed);
		o = o->newer ? o->newer : s->tail;
	}
	s->hand = o->newer;
	s->stats.evictions++;
	unlink_obj(s, o, STORE_EVICTED);
}

void
store_free(struct store **sp)
{
	struct store *s = *sp;

	if (s == NULL)
		return;
	*sp = NULL;
	pthread_mutex_lock(&s->queue);
	while (s->tail != NULL)
		unlink_obj(s, s->tail, STORE_CLOSED);
	pthread_mutex_unlock(&s->queue);
	/* a pin outliving the store would give its charge back to freed
	 * memory: whoever sends bodies goes first (server_fini) */
	SC_ASSERT(atomic_load(&s->pinned) == 0);
	for (unsigned i = 0; i < STRIPES; i++)
		pthread_mutex_destroy(&s->stripes[i].lock);
	pthread_mutex_destroy(&s->queue);
	free(s->buckets);
	free(s);
}

static bool
same_key(const struct store_obj *o, uint64_t hash, const char *key,
    size_t klen)
{
	return o->hash == hash && o->key_len == klen &&
	    memcmp(o->key, key, klen) == 0;
}

static bool
same_variant(const struct store_obj *a, const struct store_obj *b)
{
	return same_key(a, b->hash, b->key, b->key_len) &&
	    a->vary_len == b->vary_len &&
	    memcmp(store_obj_varykey(a), store_obj_varykey(b),
		b->vary_len) == 0;
}

struct store_obj *
store_lookup(struct store *s, const char *key, size_t klen,
    store_match_f *match, void *arg)
{
	uint64_t hash = XXH3_64bits(key, klen);
	pthread_mutex_t *stripe = stripe_of(s, hash);
	struct store_obj *found = NULL;

	lock_counted(s, stripe);
	for (struct store_obj *o = *bucket(s, hash); o; o = o->hnext) {
		if (same_key(o, hash, key, klen) &&
		    (match == NULL || match(o, arg))) {
			/* a hot object's line is written once per sweep,
			 * not once per hit */
			if (!atomic_load_explicit(&o->visited,
			    memory_order_relaxed))
				atomic_store_explicit(&o->visited, true,
				    memory_order_relaxed);
			found = store_obj_ref(o);
			break;
		}
	}
	pthread_mutex_unlock(stripe);
	return found;
}

struct store_obj *
store_find_hash(struct store *s, uint64_t hash, store_match_f *match,
    void *arg)
{
	pthread_mutex_t *stripe = stripe_of(s, hash);
	struct store_obj *found = NULL;

	pthread_mutex_lock(stripe);
	for (struct store_obj *o = *bucket(s, hash); o; o = o->hnext)
		if (o->hash == hash && match(o, arg)) {
			found = o;
			break;
		}
	pthread_mutex_unlock(stripe);
	return found;
}

/* Under the queue lock: puts o at the head of the queue and in the
 * stats (its chain is the caller's). */
static void
enqueue(struct store *s, struct store_obj *o)
{
	o->older = s->head;
	o->newer = NULL;
	if (s->head)
		s->head->newer = o;
	else
		s->tail = o;
	s->head = o;
	atomic_store_explicit(&o->visited, false, memory_order_relaxed);
	o->in_store = true;
	store_obj_ref(o);
	s->stats.objects++;
	s->stats.bytes += o->charge;
	s->stats.inserts++;
}

bool
store_insert(struct store *s, struct store_obj *o)
{
	SC_ASSERT(!o->in_store);
	if (o->charge > s->budget)
		return false;
	lock_counted(s, &s->queue);
	/* first, so that a version replacing another with the same body
	 * (a 304) never pins it on the way */
	body_entered(o->body);
	/* the same variant leaves the queue now, so the sweep cannot take
	 * it, and its chain when o takes its place: a lookup finds one or
	 * the other. Its observers hear of it once the new copy is in, so
	 * that to them a copy refreshed while still claimed never leaves
	 * (a summary sees no change) */
	struct store_obj *replaced = NULL;
	for (struct store_obj *old = *bucket(s, o->hash); old;
	    old = old->hnext)
		if (same_variant(old, o)) {
			SC_ASSERT(replaced == NULL); /* one copy a variant */
			replaced = old;
		}
	if (replaced != NULL)
		dequeue(s, replaced);
	bool fits = true;
	while (fits && s->stats.bytes +
	    atomic_load_explicit(&s->pinned, memory_order_relaxed) +
	    o->charge > s->budget) {
		if (s->tail == NULL)
			fits = false;  /* what is still being sent leaves no room */
		else
			evict_one(s);
	}
	if (fits && s->stats.objects >= s->nbuckets)
		grow(s);
	pthread_mutex_t *stripe = stripe_of(s, o->hash);
	pthread_mutex_lock(stripe);
	if (replaced != NULL)
		unchain(s, replaced);
	if (fits) {
		struct store_obj **b = bucket(s, o->hash);
		o->hnext = *b;
		*b = o;
	}
	pthread_mutex_unlock(stripe);
	if (fits) {
		enqueue(s, o);
		for (unsigned i = 0; i < s->nobs; i++)
			s->obs[i].inserted(s->obs[i].arg, o);
	} else {
		body_left(s, o);
	}
	if (replaced != NULL)
		release_obj(s, replaced, STORE_REPLACED);
	pthread_mutex_unlock(&s->queue);
	return fits;
}

bool
store_remove(struct store *s, struct store_obj *o, enum store_exit why)
{
	pthread_mutex_lock(&s->queue);
	bool was_in = o->in_store;
	if (was_in)
		unlink_obj(s, o, why);
	pthread_mutex_unlock(&s->queue);
	return was_in;
}

unsigned
store_invalidate(struct store *s, const char *key, size_t klen)
{
	uint64_t hash = XXH3_64bits(key, klen);
	unsigned n = 0;

	pthread_mutex_lock(&s->queue);
	struct store_obj *o = *bucket(s, hash), *next;
	for (; o; o = next) {
		next = o->hnext;
		if (same_key(o, hash, key, klen)) {
			unlink_obj(s, o, STORE_INVALIDATED);
			n++;
		}
	}
	s->stats.invalidations += n;
	pthread_mutex_unlock(&s->queue);
	return n;
}
