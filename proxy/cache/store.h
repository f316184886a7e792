/*
 * The memory object store: complete responses keyed by normalized URL (and
 * by Vary variant), bounded by a byte budget, evicted with SIEVE.
 */
#ifndef STORE_H
#define STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * A response body. Built by one writer while a fetch runs, then frozen and
 * shared read-only by every object version and every client sending it,
 * on any worker: refs is atomic; stored is the store's (its queue lock).
 */
typedef void store_ext_free_f(void *handle);

/* The charge a store keeps for an evicted body that is still being sent
 * (see store.c); released with store_pin_release. */
struct store_pin;

/* A body held outside data[] (bodyfd.c): bytes [off, off + len) of a
 * file, a memfd's or a disk segment's; freed with the body. */
struct store_ext {
	void *handle;
	store_ext_free_f *free;
	int fd;              /* the handle's, for reading the bytes back */
	int64_t off;
	/* a disk segment's bytes: the page cache holds them, which the
	 * kernel gives back under pressure, so cache_mem does not count
	 * them (a memfd's pages are ours until the body goes) */
	bool on_disk;
	/* where the store keeps its pin of this body: the holder of the
	 * handle releases it when the last sender of the data is done,
	 * which may be after the body itself is freed */
	struct store_pin **pin;
};

struct store_body {
	_Atomic uint32_t refs;
	uint32_t stored;       /* objects in the store holding it (queue) */
	size_t len;
	size_t cap;
	struct store_ext *ext; /* owned; NULL for a heap body */
	struct store_pin *pin; /* a heap body's pin, released at its free */
	/* the bytes: mem, or past a prefix of it (a disk record read whole
	 * keeps its head before the body: one read, no second copy) */
	char *data;
	char mem[];
};

/* Gives back a pin's charge to its store; accepts NULL, clears *p. */
void store_pin_release(struct store_pin **p);

/* New body with room for cap bytes and one reference; NULL on ENOMEM. */
struct store_body *store_body_new(size_t cap);
/* Appends while the caller holds the only reference; -1 on ENOMEM. */
int store_body_append(struct store_body **b, const void *p, size_t n);
/* Gives back unused capacity before the body is shared. */
void store_body_shrink(struct store_body **b);
/* Frees the heap copy of the data once ext holds the body elsewhere;
 * len is kept, data[] must not be read afterwards. */
void store_body_drop_data(struct store_body **b);
struct store_body *store_body_ref(struct store_body *b);
void store_body_unref(struct store_body **b);
/* Matches libevent's evbuffer_ref_cleanup_cb: drops the reference a
 * zero-copy send took (extra is the body). */
void store_body_release_cb(const void *data, size_t len, void *extra);

struct store_meta {
	time_t response_time;  /* when we got the response */
	int64_t initial_age;   /* corrected_initial_age, RFC 9111 4.2.3 */
	int64_t lifetime;      /* freshness lifetime */
	int status;
	bool must_revalidate;
	bool no_cache;
};

/* A stored response's current age at now (RFC 9111 4.2.3): its corrected
 * initial age plus the time it has been resident. */
static inline int64_t
store_meta_age(const struct store_meta *m, time_t now)
{
	int64_t resident = (int64_t)(now - m->response_time);

	return m->initial_age + (resident > 0 ? resident : 0);
}

/* When the stored response stops being fresh, in wall-clock ms: its
 * lifetime less the age it had when it arrived, from then. */
static inline uint64_t
store_meta_expires_ms(const struct store_meta *m)
{
	int64_t left = m->lifetime - m->initial_age;
	int64_t at = (int64_t)m->response_time + (left > 0 ? left : 0);

	return at > 0 ? (uint64_t)at * 1000 : 0;
}

/*
 * An immutable stored response. Reference counted: the store holds one
 * reference while the object is in it; a transaction that keeps an object
 * past the lookup's callback holds another. What guards a field (store.c
 * says why): hnext its stripe's lock; newer, older, in_store the queue
 * lock; refs and visited are atomic; the rest is written before the
 * object is shared and read-only after, but disk (the tiers' lock).
 */
struct store_obj {
	struct store_obj *hnext;        /* hash chain */
	struct store_obj *newer, *older; /* SIEVE queue */
	uint64_t hash;
	_Atomic uint32_t refs;
	atomic_bool visited;
	bool in_store;
	uint32_t disk;       /* the disk tier's entry for it, or 0 (tiers.c) */
	struct store_meta meta;
	struct store_body *body;
	size_t charge;       /* bytes counted against the budget */
	uint32_t key_len;
	uint32_t head_len;
	uint32_t vary_len;
	/* key NUL head NUL varykey NUL: the head is the stored fields,
	 * "Name: value\r\n" each, without framing; the varykey holds the
	 * request values Vary selected ("" without Vary) */
	char key[];
};

static inline const char *
store_obj_head(const struct store_obj *o)
{
	return o->key + o->key_len + 1;
}

static inline const char *
store_obj_varykey(const struct store_obj *o)
{
	return o->key + o->key_len + 1 + o->head_len + 1;
}

/*
 * New object with one reference. Copies key, head and varykey; takes a
 * reference to body (the caller keeps its own). NULL on ENOMEM.
 */
struct store_obj *store_obj_new(const char *key, size_t klen,
    const char *head, size_t hlen, const char *varykey, size_t vlen,
    const struct store_meta *meta, struct store_body *body);
struct store_obj *store_obj_ref(struct store_obj *o);
/* A new object (one reference) with o's key, head, varykey and metadata
 * and body (which it takes a reference to); NULL on ENOMEM. */
struct store_obj *store_obj_with_body(const struct store_obj *o,
    struct store_body *body);

/* Iterates the stored head's fields; false at the end. */
bool store_head_next(const struct store_obj *o, size_t *pos,
    const char **name, size_t *nlen, const char **val, size_t *vlen);
/* First field called name (case-insensitive), or false. */
bool store_head_find(const struct store_obj *o, const char *name,
    const char **val, size_t *vlen);
void store_obj_unref(struct store_obj **o);

/* Observers see every object that enters or leaves the store, and why
 * it left. A copy replaced by a newer one of its variant is seen leaving
 * after the newer one entered: to an observer counting keys, a refreshed
 * key never left. */
enum store_exit {
	STORE_EVICTED,     /* to make room */
	STORE_REPLACED,    /* by a newer copy of the same variant */
	STORE_INVALIDATED, /* store_invalidate */
	STORE_CLOSED,      /* store_free */
};

typedef void store_event_f(void *arg, struct store_obj *o);
typedef void store_exit_f(void *arg, struct store_obj *o,
    enum store_exit why);

struct store_observer {
	store_event_f *inserted;
	store_exit_f *removed;
	void *arg;
};

struct store_stats {
	uint64_t objects;
	uint64_t bytes;
	uint64_t pinned;      /* evicted bodies still being sent */
	uint64_t evictions;   /* removed to make room */
	uint64_t lock_waits;  /* a lock found held by another thread */
	uint64_t lock_wait_us; /* and waited for */
	uint64_t invalidations;
	uint64_t inserts;
};

struct store;

/* New empty store for budget bytes; NULL on ENOMEM. */
struct store *store_new(size_t budget);
void store_free(struct store **s);

/* Adds an observer; at most STORE_MAX_OBSERVERS. Returns 0 or -1. */
#define STORE_MAX_OBSERVERS 4
int store_observe(struct store *s, const struct store_observer *ob);
/* Removes the observers whose arg is arg: one that goes before the store
 * hears nothing after (store_free's STORE_CLOSED included). */
void store_unobserve(struct store *s, const void *arg);

typedef bool store_match_f(const struct store_obj *o, void *arg);

/*
 * Finds the object for key whose variant match() accepts (match may be NULL
 * for "any"). Returns a new reference or NULL; marks it recently used.
 */
struct store_obj *store_lookup(struct store *s, const char *key, size_t klen,
    store_match_f *match, void *arg);

/*
 * Inserts o (the store takes its own reference), replacing an object with
 * the same key and variant and evicting others to fit the budget, which
 * counts the bodies evicted but still being sent. Returns false, storing
 * nothing, when o does not fit even in an empty store.
 */
bool store_insert(struct store *s, struct store_obj *o);

/* The first object under hash (store_lookup's hash of its key) that
 * match accepts; no reference taken, not marked used: it stays valid
 * while the caller keeps every writer of the store out (the tiers'
 * lock), as store_remove by another thread would free it. */
struct store_obj *store_find_hash(struct store *s, uint64_t hash,
    store_match_f *match, void *arg);

/* Removes o for a reason the store does not see: a newer copy of its
 * variant was kept elsewhere (the disk tier: STORE_REPLACED), or its
 * copy elsewhere is to be read again (STORE_EVICTED, not counted as an
 * eviction). Observers hear why; the caller's reference stays valid.
 * False, doing nothing, when o is no longer in the store (another
 * worker removed it first). */
bool store_remove(struct store *s, struct store_obj *o, enum store_exit why);

/* Removes every variant of key; returns how many. */
unsigned store_invalidate(struct store *s, const char *key, size_t klen);

/* A copy of the counters as they are now (the queue lock's). */
struct store_stats store_stats(struct store *s);

#endif
