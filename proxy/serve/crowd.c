/*
 * Collapsed forwarding across workers.
 *
 * Each worker has its busy table (busy.c): its own fetches and the
 * requests waiting for them, on its loop alone. A crowd of clients is
 * spread over the workers by the kernel, so without more each worker
 * would fetch the URL once. The crowd table is the node's: by URL, the
 * worker that leads its fetch (a claim) and a mask of the workers that
 * follow it. A worker with no fetch of a URL claims it before it starts
 * one (busy_join), atomically under the table's stripe lock, so two
 * workers cannot both lead; a worker that finds a claim makes a follower
 * (a busy object of its own with no fetch, busy.c) that its requests
 * wait at as at any. When the leader's fetch ends, the claim leaves the
 * table and each follower worker is told how, on its own loop (its
 * inbox): done (with the stored object: its readers get the rest from
 * it, its waiters find it), not shareable, leader gone, failed.
 *
 * A body of known length kept in memory is the common case, and its
 * copy is reserved whole before the first byte (fetchrecv.c): its bytes
 * never move until the fetch ends. The leader shares it (a share:
 * crowd_share), and the other workers' readers read it as it arrives,
 * as the leader's own do: the leader says how much is in (crowd_have:
 * an atomic, and a note to each follower worker that has none on its
 * way), a follower reads between crowd_read_begin and crowd_read_end.
 * Before the leader moves or frees the copy (it freezes it into the
 * store, or gives it up) it unshares it: no reader enters any more,
 * and it waits for those inside (a pump's copy into a client's output:
 * microseconds). A body of unknown length may move as it grows, a tee
 * drops what its readers took, a disk stream is one worker's: those are
 * not shared; the other workers' waiters get the object from the store
 * when the fetch is complete.
 *
 * The cost accepted: a lock is taken per miss that may collapse, one of
 * CROWD_STRIPES; a shared body costs the leader an atomic store and a
 * note per follower worker per arrival at most. No hit touches any.
 */
#include "crowd.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "clock.h"
#include "inbox.h"
#include "proxy.h"
#include "sc_assert.h"
#include "store.h"

#define CROWD_BUCKETS 4096
#define CROWD_STRIPES 64

/*
 * A leader's body shared with the other workers. shape, copy and length
 * are set before it is shared and never change; have is the leader's
 * (written with release, read with acquire: the bytes below it are in);
 * closed and reading keep readers off a copy that moves (crowd_unshare);
 * told[i] is set by the leader when a note of more is on its way to
 * workers[i] and cleared by that worker when it runs. Freed with its
 * last reference: the claim's, each note's, each follower's.
 */
struct crowd_share {
	_Atomic unsigned refs;
	struct store_obj *shape;
	struct store_body *copy;
	uint64_t length;
	_Atomic uint64_t have;
	atomic_bool closed;
	_Atomic unsigned reading;
	atomic_bool told[CONF_WORKERS_MAX];
};

/* A claim: in its bucket's chain while it leads; every field is under
 * its stripe's lock but key, hash and klen (set before it is shared),
 * followers (written under the lock, read by the leader without it) and
 * share (set under the lock by the leader, which reads it without). */
struct crowd_claim {
	struct crowd_claim *next;
	struct worker *leader;
	uint64_t started_ms;
	_Atomic uint64_t followers; /* bit i: workers[i] follows it */
	const struct crowd_follower_ops *ops[CONF_WORKERS_MAX];
	struct crowd_share *share;  /* the leader's body, once shared */
	uint64_t hash;
	size_t klen;
	char key[];
};

struct crowd {
	pthread_mutex_t stripe[CROWD_STRIPES];
	struct crowd_claim *buckets[CROWD_BUCKETS];
};

struct crowd *
crowd_new(void)
{
	struct crowd *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	for (unsigned i = 0; i < CROWD_STRIPES; i++)
		pthread_mutex_init(&c->stripe[i], NULL);
	return c;
}

void
crowd_free(struct crowd **cp)
{
	struct crowd *c = *cp;

	if (c == NULL)
		return;
	*cp = NULL;
	for (unsigned i = 0; i < CROWD_BUCKETS; i++)
		SC_ASSERT(c->buckets[i] == NULL);
	for (unsigned i = 0; i < CROWD_STRIPES; i++)
		pthread_mutex_destroy(&c->stripe[i]);
	free(c);
}

/* A bucket's chain is its stripe's: the stripe is the bucket's. */
static pthread_mutex_t *
stripe_of(struct crowd *c, uint64_t hash)
{
	return &c->stripe[(hash % CROWD_BUCKETS) % CROWD_STRIPES];
}

static struct crowd_share *
share_ref(struct crowd_share *sh)
{
	atomic_fetch_add_explicit(&sh->refs, 1, memory_order_relaxed);
	return sh;
}

void
crowd_share_unref(struct crowd_share **shp)
{
	struct crowd_share *sh = *shp;

	if (sh == NULL)
		return;
	*shp = NULL;
	if (atomic_fetch_sub_explicit(&sh->refs, 1, memory_order_acq_rel) !=
	    1)
		return;
	store_obj_unref(&sh->shape);
	free(sh);
}

enum crowd_role
crowd_claim(struct crowd *c, struct worker *w, const char *key, size_t klen,
    const struct crowd_follower_ops *ops, struct crowd_claim **claim,
    uint64_t *started_ms, struct crowd_share **sh)
{
	uint64_t hash = XXH3_64bits(key, klen);
	pthread_mutex_t *lock = stripe_of(c, hash);
	struct crowd_claim **p = &c->buckets[hash % CROWD_BUCKETS];
	enum crowd_role role = CROWD_LEAD;

	*sh = NULL;
	pthread_mutex_lock(lock);
	while (*p != NULL && ((*p)->hash != hash || (*p)->klen != klen ||
	    memcmp((*p)->key, key, klen) != 0))
		p = &(*p)->next;
	if (*p != NULL && (*p)->leader != w) {
		/* ops first: the leader reads them once it sees the bit */
		if (!(atomic_load(&(*p)->followers) & 1ull << w->id)) {
			(*p)->ops[w->id] = ops;
			atomic_fetch_or(&(*p)->followers, 1ull << w->id);
		}
		*started_ms = (*p)->started_ms;
		if ((*p)->share != NULL)
			*sh = share_ref((*p)->share);
		role = CROWD_FOLLOW;
	} else if (*p != NULL) {
		/* its own claim: a fetch that has not yet opened its busy
		 * object; the request goes by itself */
		role = CROWD_ALONE;
	} else if ((*claim = calloc(1, sizeof(**claim) + klen)) == NULL) {
		role = CROWD_ALONE;
	} else {
		struct crowd_claim *cl = *claim;
		cl->leader = w;
		cl->started_ms = mono_ms();
		cl->hash = hash;
		cl->klen = klen;
		memcpy(cl->key, key, klen);
		*p = cl;
	}
	pthread_mutex_unlock(lock);
	return role;
}

bool
crowd_running(struct crowd *c, const char *key, size_t klen)
{
	uint64_t hash = XXH3_64bits(key, klen);
	pthread_mutex_t *lock = stripe_of(c, hash);
	const struct crowd_claim *p;

	pthread_mutex_lock(lock);
	for (p = c->buckets[hash % CROWD_BUCKETS]; p != NULL; p = p->next)
		if (p->hash == hash && p->klen == klen &&
		    memcmp(p->key, key, klen) == 0)
			break;
	pthread_mutex_unlock(lock);
	return p != NULL;
}

void
crowd_started(struct crowd_claim *claim, uint64_t started_ms)
{
	struct crowd *c = claim->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, claim->hash);

	pthread_mutex_lock(lock);
	claim->started_ms = started_ms;
	pthread_mutex_unlock(lock);
}

/* What a follower worker is told, on its loop. */
enum news { NEWS_SHARED, NEWS_MORE, NEWS_ENDED };

struct note {
	struct worker *w;
	const struct crowd_follower_ops *ops;
	enum news what;
	struct crowd_share *sh;   /* SHARED, MORE: a reference */
	struct crowd_outcome out; /* ENDED: obj a reference */
	size_t klen;
	char key[];
};

static void
note_free(void *arg)
{
	struct note *n = arg;

	crowd_share_unref(&n->sh);
	store_obj_unref(&n->out.obj);
	free(n);
}

static void
tell(void *arg)
{
	struct note *n = arg;

	switch (n->what) {
	case NEWS_SHARED:
		n->ops->shared(n->w, n->key, n->klen, n->sh);
		n->sh = NULL; /* the callee's now */
		break;
	case NEWS_MORE:
		/* cleared before the callee reads have: an arrival after
		 * its read sends another note */
		atomic_store(&n->sh->told[n->w->id], false);
		n->ops->more(n->w, n->key, n->klen, n->sh);
		break;
	case NEWS_ENDED:
		n->ops->ended(n->w, n->key, n->klen, &n->out);
		break;
	}
	note_free(n);
}

/* Posts news of cl to workers[i]; without memory it is not told (a
 * follower's waiters then wait for their bound and fetch by themselves;
 * its readers read on at the next arrival, or fail at the bound of a
 * silent body). */
static void
post(struct crowd_claim *cl, unsigned i, enum news what,
    const struct crowd_outcome *out)
{
	struct node *n = cl->leader->node;
	struct note *nt = malloc(sizeof(*nt) + cl->klen);

	if (nt == NULL)
		return;
	*nt = (struct note){.w = n->workers[i], .ops = cl->ops[i],
	    .what = what, .klen = cl->klen};
	if (what != NEWS_ENDED)
		nt->sh = share_ref(cl->share);
	if (out != NULL) {
		nt->out = *out;
		if (out->obj != NULL)
			nt->out.obj = store_obj_ref(out->obj);
	}
	memcpy(nt->key, cl->key, cl->klen);
	if (inbox_post(n->workers[i]->inbox, tell, note_free, nt) < 0)
		note_free(nt);
}

void
crowd_share(struct crowd_claim *cl, struct store_obj *shape,
    struct store_body *copy, uint64_t length)
{
	struct crowd_share *sh = calloc(1, sizeof(*sh));

	if (sh == NULL)
		return; /* the others get the object when it is stored */
	atomic_init(&sh->refs, 1);
	sh->shape = store_obj_ref(shape);
	sh->copy = copy;
	sh->length = length;
	atomic_init(&sh->have, 0);
	struct crowd *c = cl->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, cl->hash);
	pthread_mutex_lock(lock);
	cl->share = sh;
	uint64_t followers = atomic_load(&cl->followers);
	pthread_mutex_unlock(lock);
	/* a worker following after this is given the share by crowd_claim;
	 * one following before is told here */
	for (unsigned i = 0; followers != 0; i++, followers >>= 1)
		if (followers & 1)
			post(cl, i, NEWS_SHARED, NULL);
}

void
crowd_have(struct crowd_claim *cl, uint64_t have)
{
	struct crowd_share *sh = cl != NULL ? cl->share : NULL;

	if (sh == NULL)
		return;
	atomic_store_explicit(&sh->have, have, memory_order_release);
	uint64_t followers = atomic_load(&cl->followers);
	for (unsigned i = 0; followers != 0; i++, followers >>= 1)
		if ((followers & 1) && !atomic_exchange(&sh->told[i], true))
			post(cl, i, NEWS_MORE, NULL);
}

void
crowd_unshare(struct crowd_claim *cl)
{
	struct crowd_share *sh = cl != NULL ? cl->share : NULL;

	if (sh == NULL || atomic_load(&sh->closed))
		return;
	atomic_store(&sh->closed, true);
	/* a reader inside saw it open: it is copying a few kilobytes to a
	 * client's output */
	while (atomic_load(&sh->reading) != 0)
		sched_yield();
}

bool
crowd_read_begin(struct crowd_share *sh, uint64_t *have)
{
	/* seq_cst both sides: either the leader sees this reader, or this
	 * reader sees it closed (crowd_unshare) */
	atomic_fetch_add(&sh->reading, 1);
	if (atomic_load(&sh->closed)) {
		atomic_fetch_sub(&sh->reading, 1);
		return false;
	}
	*have = atomic_load_explicit(&sh->have, memory_order_acquire);
	return true;
}

void
crowd_read_end(struct crowd_share *sh)
{
	atomic_fetch_sub_explicit(&sh->reading, 1, memory_order_release);
}

struct store_obj *
crowd_share_shape(const struct crowd_share *sh)
{
	return sh->shape;
}

struct store_body *
crowd_share_copy(const struct crowd_share *sh)
{
	return sh->copy;
}

uint64_t
crowd_share_length(const struct crowd_share *sh)
{
	return sh->length;
}

void
crowd_end(struct crowd_claim **claimp, const struct crowd_outcome *out)
{
	struct crowd_claim *cl = *claimp;

	if (cl == NULL)
		return;
	*claimp = NULL;
	crowd_unshare(cl);
	struct crowd *c = cl->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, cl->hash);
	pthread_mutex_lock(lock);
	struct crowd_claim **p = &c->buckets[cl->hash % CROWD_BUCKETS];
	while (*p != cl) {
		SC_ASSERT(*p != NULL);
		p = &(*p)->next;
	}
	*p = cl->next;
	uint64_t followers = atomic_load(&cl->followers);
	pthread_mutex_unlock(lock);
	for (unsigned i = 0; followers != 0; i++, followers >>= 1)
		if (followers & 1)
			post(cl, i, NEWS_ENDED, out);
	crowd_share_unref(&cl->share);
	free(cl);
}
