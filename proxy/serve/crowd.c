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
 * A body kept in memory is shared as it arrives (a share:
 * crowd_share): the other workers' readers read the leader's copy as
 * the leader's own do. The leader says how much is in (crowd_have: an
 * atomic, and a note to each follower worker that has none on its way);
 * a follower reads between crowd_read_begin and crowd_read_end. The copy
 * of a known length is reserved whole and never moves; one of unknown
 * length moves when it grows, and a tee's window slides: the leader moves
 * bytes only between crowd_move_begin, which waits until no reader is
 * inside (a pump's copy into a client's output: microseconds) and keeps
 * new ones out, and crowd_move_end, which says where the copy is now.
 * A tee keeps only what every reader has not taken: each follower worker
 * says how far its slowest reader is (crowd_taken), and the leader,
 * told on its loop, counts it as a reader of its own (crowd_slowest).
 * Before the leader freezes its copy into the store or gives it up, it
 * unshares it for good; the followers' readers get the rest from the
 * stored object the end's note carries. A body going to the disk as it
 * arrives is one worker's (the disk is home's): the other workers'
 * waiters get it from the store when it is complete.
 *
 * The cost accepted: a lock is taken per miss that may collapse, one of
 * CROWD_STRIPES; a shared body costs the leader an atomic store and a
 * note per follower worker per arrival at most, and a wait for readers
 * inside per move (a growing copy's doublings, a window's slides). No
 * hit touches any. And a follower worker that joins a window just as
 * it first slides may find its first bytes gone: its reader is cut
 * (the window keeps what readers it knows of have not taken).
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
 * A leader's body shared with the other workers. shape is set before it
 * is shared. copy and base are the leader's, written only while moving
 * with no reader inside, read by readers inside (reading counts them):
 * moving, closed and reading keep the two apart (seq_cst: either the
 * leader sees a reader come in, or the reader sees the copy moving).
 * have and length are written by the leader with release, read with
 * acquire: the bytes below have are in. fw[i] is workers[i]'s (one
 * for each of the node's workers): told is set by the leader when a
 * note of more is on its way to it, cleared by that worker when it
 * runs; taken is written by that worker, read by the leader; taken_told is set by a follower when a note to the leader is
 * on its way (only when windowed), cleared by the leader. leader,
 * on_taken and arg are the leader's alone (on_taken cleared at the end).
 * Freed with its last reference: the claim's, each note's, each
 * follower's.
 */
struct crowd_share {
	_Atomic unsigned refs;
	struct store_obj *shape;
	struct store_body *file;  /* a body on its way to the disk, or
	                           * NULL: set before it is shared */
	struct store_body *copy;
	uint64_t base;
	_Atomic uint64_t have;
	_Atomic int64_t length;
	atomic_bool moving;
	atomic_bool closed;
	_Atomic unsigned reading;
	atomic_bool windowed;
	atomic_bool taken_told;
	struct worker *leader;
	void (*on_taken)(void *arg);
	void *arg;
	struct {
		_Atomic uint64_t taken; /* its slowest reader, CROWD_NONE */
		atomic_bool told;
	} fw[];
};

/* A claim: in its bucket's chain while it leads and is listed; every
 * field is under its stripe's lock but key, hash and klen (set before it
 * is shared), followers (written under the lock, read by the leader
 * without it), ops (set under the lock by the first follower, before
 * its bit; every follower's are the same), listed (the leader's: it
 * unlists under the lock) and share (set under the lock by the leader,
 * which reads it without). */
struct crowd_claim {
	struct crowd_claim *next;
	struct worker *leader;
	uint64_t started_ms;
	bool listed;
	_Atomic uint64_t followers; /* bit i: workers[i] follows it */
	const struct crowd_follower_ops *ops;
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

struct crowd_share *
crowd_share_ref(struct crowd_share *sh)
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
	store_body_unref(&sh->file);
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
			if ((*p)->ops == NULL)
				(*p)->ops = ops;
			/* it reads from the first byte: a window holds it */
			if ((*p)->share != NULL)
				atomic_store(&(*p)->share->fw[w->id].taken, 0);
			atomic_fetch_or(&(*p)->followers, 1ull << w->id);
		}
		*started_ms = (*p)->started_ms;
		if ((*p)->share != NULL)
			*sh = crowd_share_ref((*p)->share);
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
		cl->listed = true;
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

/* What a follower worker is told, on its loop; or the leader (TAKEN). */
enum news { NEWS_SHARED, NEWS_MORE, NEWS_ENDED, NEWS_TAKEN };

struct note {
	struct worker *w;
	const struct crowd_follower_ops *ops;
	enum news what;
	struct crowd_share *sh;   /* but ENDED: a reference */
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
		atomic_store(&n->sh->fw[n->w->id].told, false);
		n->ops->more(n->w, n->key, n->klen, n->sh);
		break;
	case NEWS_ENDED:
		n->ops->ended(n->w, n->key, n->klen, &n->out);
		break;
	case NEWS_TAKEN:
		atomic_store(&n->sh->taken_told, false);
		if (n->sh->on_taken != NULL)
			n->sh->on_taken(n->sh->arg);
		break;
	}
	note_free(n);
}

/* Posts a note to w; without memory it is not told (a follower's
 * waiters then wait for their bound and fetch by themselves, its readers
 * read on at the next news; a leader's window hears at the next). */
static void
post_to(struct worker *w, const struct crowd_follower_ops *ops,
    enum news what, struct crowd_share *sh, const struct crowd_outcome *out,
    const char *key, size_t klen)
{
	struct note *nt = malloc(sizeof(*nt) + klen);

	if (nt == NULL)
		return;
	*nt = (struct note){.w = w, .ops = ops, .what = what, .klen = klen};
	if (sh != NULL)
		nt->sh = crowd_share_ref(sh);
	if (out != NULL) {
		nt->out = *out;
		if (out->obj != NULL)
			nt->out.obj = store_obj_ref(out->obj);
	}
	memcpy(nt->key, key, klen);
	if (inbox_post(w->inbox, tell, note_free, nt) < 0)
		note_free(nt);
}

/* News of cl for its follower workers[i]. */
static void
post(struct crowd_claim *cl, unsigned i, enum news what,
    const struct crowd_outcome *out)
{
	post_to(cl->leader->node->workers[i], cl->ops, what,
	    what != NEWS_ENDED ? cl->share : NULL, out, cl->key, cl->klen);
}

void
crowd_share(struct crowd_claim *cl, struct store_obj *shape,
    struct store_body *copy, struct store_body *file, int64_t length,
    void (*taken)(void *arg), void *arg)
{
	unsigned nw = cl->leader->node->nworkers;
	struct crowd_share *sh = calloc(1, sizeof(*sh) + nw *
	    sizeof(sh->fw[0]));

	if (sh == NULL)
		return; /* the others get the object when it is stored */
	atomic_init(&sh->refs, 1);
	sh->shape = store_obj_ref(shape);
	sh->file = file != NULL ? store_body_ref(file) : NULL;
	sh->copy = copy;
	atomic_init(&sh->length, length);
	sh->leader = cl->leader;
	sh->on_taken = taken;
	sh->arg = arg;
	for (unsigned i = 0; i < nw; i++)
		atomic_init(&sh->fw[i].taken, CROWD_NONE);
	struct crowd *c = cl->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, cl->hash);
	pthread_mutex_lock(lock);
	uint64_t followers = atomic_load(&cl->followers);
	/* each reads from the first byte: a window holds it for them */
	for (unsigned i = 0; i < nw; i++)
		if (followers & 1ull << i)
			atomic_store(&sh->fw[i].taken, 0);
	cl->share = sh;
	pthread_mutex_unlock(lock);
	/* a worker following after this is given the share by crowd_claim;
	 * one following before is told here */
	for (unsigned i = 0; followers != 0; i++, followers >>= 1)
		if (followers & 1)
			post(cl, i, NEWS_SHARED, NULL);
}

/* Every follower worker reads again: a note to each that has none on
 * its way. */
static void
nudge(struct crowd_claim *cl)
{
	uint64_t followers = atomic_load(&cl->followers);

	for (unsigned i = 0; followers != 0; i++, followers >>= 1)
		if ((followers & 1) &&
		    !atomic_exchange(&cl->share->fw[i].told, true))
			post(cl, i, NEWS_MORE, NULL);
}

void
crowd_have(struct crowd_claim *cl, uint64_t have, int64_t length)
{
	struct crowd_share *sh = cl != NULL ? cl->share : NULL;

	if (sh == NULL)
		return;
	atomic_store_explicit(&sh->length, length, memory_order_release);
	atomic_store_explicit(&sh->have, have, memory_order_release);
	nudge(cl);
}

/* Keeps readers off sh's copy: returns when none is inside. */
static void
keep_out(struct crowd_share *sh, atomic_bool *flag)
{
	atomic_store(flag, true);
	/* a reader inside saw it open: it is copying a few kilobytes to a
	 * client's output */
	while (atomic_load(&sh->reading) != 0)
		sched_yield();
}

void
crowd_move_begin(struct crowd_claim *cl)
{
	if (cl != NULL && cl->share != NULL)
		keep_out(cl->share, &cl->share->moving);
}

void
crowd_move_end(struct crowd_claim *cl, struct store_body *copy, uint64_t base)
{
	struct crowd_share *sh = cl != NULL ? cl->share : NULL;

	if (sh == NULL)
		return;
	sh->copy = copy;
	sh->base = base;
	atomic_store(&sh->moving, false);
	/* a reader kept out while it moved reads again (its output may
	 * have drained meanwhile, and a full window waits for it) */
	nudge(cl);
}

void
crowd_unshare(struct crowd_claim *cl)
{
	struct crowd_share *sh = cl != NULL ? cl->share : NULL;

	if (sh != NULL && !atomic_load(&sh->closed))
		keep_out(sh, &sh->closed);
}

void
crowd_windowed(struct crowd_claim *cl)
{
	if (cl != NULL && cl->share != NULL)
		atomic_store(&cl->share->windowed, true);
}

uint64_t
crowd_slowest(const struct crowd_claim *cl)
{
	uint64_t least = CROWD_NONE;

	if (cl == NULL || cl->share == NULL)
		return least;
	for (unsigned i = 0; i < cl->leader->node->nworkers; i++) {
		uint64_t t = atomic_load(&cl->share->fw[i].taken);
		if (t < least)
			least = t;
	}
	return least;
}

/* cl leaves its chain; the caller holds its stripe's lock. */
static void
unlink_claim(struct crowd *c, struct crowd_claim *cl)
{
	struct crowd_claim **p = &c->buckets[cl->hash % CROWD_BUCKETS];

	while (*p != cl) {
		SC_ASSERT(*p != NULL);
		p = &(*p)->next;
	}
	*p = cl->next;
	cl->listed = false;
}

void
crowd_unlist(struct crowd_claim *cl)
{
	if (cl == NULL || !cl->listed)
		return;
	struct crowd *c = cl->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, cl->hash);
	pthread_mutex_lock(lock);
	unlink_claim(c, cl);
	pthread_mutex_unlock(lock);
}

bool
crowd_read_begin(struct crowd_share *sh, struct busy_source *src)
{
	atomic_fetch_add(&sh->reading, 1);
	if (atomic_load(&sh->moving) || atomic_load(&sh->closed)) {
		atomic_fetch_sub(&sh->reading, 1);
		return false;
	}
	src->have = atomic_load_explicit(&sh->have, memory_order_acquire);
	src->length = atomic_load_explicit(&sh->length,
	    memory_order_acquire);
	src->copy = sh->copy;
	src->file = sh->file;
	src->base = sh->base;
	return true;
}

void
crowd_read_end(struct crowd_share *sh)
{
	atomic_fetch_sub_explicit(&sh->reading, 1, memory_order_release);
}

void
crowd_taken(struct crowd_share *sh, const struct worker *w, uint64_t least)
{
	if (atomic_exchange(&sh->fw[w->id].taken, least) == least ||
	    !atomic_load(&sh->windowed) ||
	    atomic_exchange(&sh->taken_told, true))
		return;
	post_to(sh->leader, NULL, NEWS_TAKEN, sh, NULL, "", 0);
}

struct store_obj *
crowd_share_shape(const struct crowd_share *sh)
{
	return sh->shape;
}

void
crowd_end(struct crowd_claim **claimp, const struct crowd_outcome *out)
{
	struct crowd_claim *cl = *claimp;

	if (cl == NULL)
		return;
	*claimp = NULL;
	crowd_unshare(cl);
	if (cl->share != NULL)
		cl->share->on_taken = NULL; /* the leader's busy goes */
	struct crowd *c = cl->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, cl->hash);
	pthread_mutex_lock(lock);
	if (cl->listed)
		unlink_claim(c, cl);
	uint64_t followers = atomic_load(&cl->followers);
	pthread_mutex_unlock(lock);
	for (unsigned i = 0; followers != 0; i++, followers >>= 1)
		if (followers & 1)
			post(cl, i, NEWS_ENDED, out);
	crowd_share_unref(&cl->share);
	free(cl);
}
