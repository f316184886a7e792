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
 * is evicted or replaced. Single-threaded: the event loop owns the store.
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
 */
#include "store.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <xxhash.h>

#include "sc_assert.h"

/* malloc's own header per allocation, counted so the budget is honest */
#define ALLOC_OVERHEAD 16

struct store {
	struct store_obj **buckets;
	size_t nbuckets; /* power of two */
	struct store_obj *head, *tail, *hand;
	size_t budget;
	struct store_stats stats;
	struct store_observer obs[STORE_MAX_OBSERVERS];
	unsigned nobs;
};

/* ---- bodies ---- */

struct store_body *
store_body_new(size_t cap)
{
	struct store_body *b = malloc(sizeof(*b) + cap);

	if (b == NULL)
		return NULL;
	b->refs = 1;
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

	SC_ASSERT(b->refs == 1 && b->data == b->mem);
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

	SC_ASSERT(b->refs == 1 && b->data == b->mem);
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

	SC_ASSERT(b->refs == 1);
	b = realloc(b, sizeof(*b));
	if (b != NULL)
		*bp = b;
	(*bp)->cap = 0;
	(*bp)->data = (*bp)->mem;
}

struct store_body *
store_body_ref(struct store_body *b)
{
	SC_ASSERT(b->refs > 0);
	b->refs++;
	return b;
}

void
store_body_unref(struct store_body **bp)
{
	struct store_body *b = *bp;

	if (b == NULL)
		return;
	*bp = NULL;
	SC_ASSERT(b->refs > 0);
	if (--b->refs > 0)
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
	o->refs = 1;
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
	SC_ASSERT(o->refs > 0);
	o->refs++;
	return o;
}

void
store_obj_unref(struct store_obj **op)
{
	struct store_obj *o = *op;

	if (o == NULL)
		return;
	*op = NULL;
	SC_ASSERT(o->refs > 0);
	if (--o->refs > 0)
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
	SC_ASSERT(p->s->stats.pinned >= p->charge);
	p->s->stats.pinned -= p->charge;
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
	if (b->refs == 1 && o->refs == 1 && pin_slot(b) == &b->pin)
		return;
	struct store_pin *p = malloc(sizeof(*p));
	if (p == NULL)
		return; /* uncharged rather than an eviction that fails */
	*p = (struct store_pin){s, body_charge(b)};
	*pin_slot(b) = p;
	s->stats.pinned += p->charge;
}

/* ---- the table and queue ---- */

struct store *
store_new(size_t budget)
{
	struct store *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->nbuckets = 1024;
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	if (s->buckets == NULL) {
		free(s);
		return NULL;
	}
	s->budget = budget;
	return s;
}

int
store_observe(struct store *s, const struct store_observer *ob)
{
	if (s->nobs == STORE_MAX_OBSERVERS)
		return -1;
	s->obs[s->nobs++] = *ob;
	return 0;
}

void
store_unobserve(struct store *s, const void *arg)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < s->nobs; i++)
		if (s->obs[i].arg != arg)
			s->obs[kept++] = s->obs[i];
	s->nobs = kept;
}

const struct store_stats *
store_stats(const struct store *s)
{
	return &s->stats;
}

static struct store_obj **
bucket(struct store *s, uint64_t hash)
{
	return &s->buckets[hash & (s->nbuckets - 1)];
}

static void
grow(struct store *s)
{
	size_t n = s->nbuckets * 2;
	struct store_obj **nb = calloc(n, sizeof(*nb));

	if (nb == NULL)
		return; /* keep the longer chains; correctness is unaffected */
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
}

/* Takes o out of the table, the queue and the stats, and gives up its
 * hold on its body; release_obj tells the observers and drops the
 * store's reference. */
static void
detach_obj(struct store *s, struct store_obj *o)
{
	struct store_obj **pp = bucket(s, o->hash);

	while (*pp != o) {
		SC_ASSERT(*pp != NULL);
		pp = &(*pp)->hnext;
	}
	*pp = o->hnext;
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
	o->newer = o->older = o->hnext = NULL;
	o->in_store = false;
	s->stats.objects--;
	s->stats.bytes -= o->charge;
	body_left(s, o);
}

static void
release_obj(struct store *s, struct store_obj *o, enum store_exit why)
{
	for (unsigned i = 0; i < s->nobs; i++)
		s->obs[i].removed(s->obs[i].arg, o, why);
	store_obj_unref(&o);
}

static void
unlink_obj(struct store *s, struct store_obj *o, enum store_exit why)
{
	detach_obj(s, o);
	release_obj(s, o, why);
}

/* SIEVE: evict the first unvisited object at or after the hand. */
static void
evict_one(struct store *s)
{
	struct store_obj *o = s->hand ? s->hand : s->tail;

	SC_ASSERT(o != NULL);
	while (o->visited) {
		o->visited = false;
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
	while (s->tail != NULL)
		unlink_obj(s, s->tail, STORE_CLOSED);
	/* a pin outliving the store would give its charge back to freed
	 * memory: whoever sends bodies goes first (server_fini) */
	SC_ASSERT(s->stats.pinned == 0);
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

struct store_obj *
store_lookup(struct store *s, const char *key, size_t klen,
    store_match_f *match, void *arg)
{
	uint64_t hash = XXH3_64bits(key, klen);

	for (struct store_obj *o = *bucket(s, hash); o; o = o->hnext) {
		if (same_key(o, hash, key, klen) &&
		    (match == NULL || match(o, arg))) {
			o->visited = true;
			return store_obj_ref(o);
		}
	}
	return NULL;
}

struct store_obj *
store_find_hash(struct store *s, uint64_t hash, store_match_f *match,
    void *arg)
{
	for (struct store_obj *o = *bucket(s, hash); o; o = o->hnext)
		if (o->hash == hash && match(o, arg))
			return o;
	return NULL;
}

/* Puts o at the head of the queue and in the table, and tells the
 * observers. */
static void
link_obj(struct store *s, struct store_obj *o)
{
	if (s->stats.objects >= s->nbuckets)
		grow(s);
	struct store_obj **b = bucket(s, o->hash);
	o->hnext = *b;
	*b = o;
	o->older = s->head;
	o->newer = NULL;
	if (s->head)
		s->head->newer = o;
	else
		s->tail = o;
	s->head = o;
	o->visited = false;
	o->in_store = true;
	store_obj_ref(o);
	s->stats.objects++;
	s->stats.bytes += o->charge;
	s->stats.inserts++;
	for (unsigned i = 0; i < s->nobs; i++)
		s->obs[i].inserted(s->obs[i].arg, o);
}

bool
store_insert(struct store *s, struct store_obj *o)
{
	SC_ASSERT(!o->in_store);
	if (o->charge > s->budget)
		return false;
	/* first, so that a version replacing another with the same body
	 * (a 304) never pins it on the way */
	body_entered(o->body);
	/* replace the same variant: out of the way now, its observers told
	 * once the new copy is in, so that to them a copy refreshed while
	 * still claimed never leaves (a summary sees no change) */
	struct store_obj *old = *bucket(s, o->hash), *next, *replaced = NULL;
	for (; old; old = next) {
		next = old->hnext;
		if (same_key(old, o->hash, o->key, o->key_len) &&
		    old->vary_len == o->vary_len &&
		    memcmp(store_obj_varykey(old), store_obj_varykey(o),
			o->vary_len) == 0) {
			detach_obj(s, old);
			old->hnext = replaced;
			replaced = old;
		}
	}
	bool fits = true;
	while (fits && s->stats.bytes + s->stats.pinned + o->charge >
	    s->budget) {
		if (s->tail == NULL)
			fits = false;  /* what is still being sent leaves no room */
		else
			evict_one(s);
	}
	if (fits)
		link_obj(s, o);
	else
		body_left(s, o);
	for (; replaced != NULL; replaced = next) {
		next = replaced->hnext;
		replaced->hnext = NULL;
		release_obj(s, replaced, STORE_REPLACED);
	}
	return fits;
}

void
store_remove(struct store *s, struct store_obj *o, enum store_exit why)
{
	SC_ASSERT(o->in_store);
	unlink_obj(s, o, why);
}

unsigned
store_invalidate(struct store *s, const char *key, size_t klen)
{
	uint64_t hash = XXH3_64bits(key, klen);
	struct store_obj *o = *bucket(s, hash), *next;
	unsigned n = 0;

	for (; o; o = next) {
		next = o->hnext;
		if (same_key(o, hash, key, klen)) {
			unlink_obj(s, o, STORE_INVALIDATED);
			n++;
		}
	}
	s->stats.invalidations += n;
	return n;
}
