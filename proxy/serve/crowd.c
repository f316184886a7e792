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
 * inbox): done (its waiters look in the store again and find the
 * object), not shareable, leader gone, failed.
 *
 * The cost accepted: a waiter on another worker gets its answer when the
 * leader's fetch is complete, from the store, not as the body streams
 * (the leader's worker's waiters do stream it); and a lock is taken per
 * miss that may collapse, one of CROWD_STRIPES. No hit touches it.
 */
#include "crowd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "clock.h"
#include "inbox.h"
#include "proxy.h"
#include "sc_assert.h"

#define CROWD_BUCKETS 4096
#define CROWD_STRIPES 64

/* A claim: in its bucket's chain while it leads; every field is under
 * its stripe's lock but key, hash and klen (set before it is shared). */
struct crowd_claim {
	struct crowd_claim *next;
	struct worker *leader;
	uint64_t started_ms;
	uint64_t followers;        /* bit i: workers[i] follows it */
	crowd_ended_f *ended[CONF_WORKERS_MAX]; /* each follower's */
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

enum crowd_role
crowd_claim(struct crowd *c, struct worker *w, const char *key, size_t klen,
    crowd_ended_f *ended, struct crowd_claim **claim, uint64_t *started_ms)
{
	uint64_t hash = XXH3_64bits(key, klen);
	pthread_mutex_t *lock = stripe_of(c, hash);
	struct crowd_claim **p = &c->buckets[hash % CROWD_BUCKETS];
	enum crowd_role role = CROWD_LEAD;

	pthread_mutex_lock(lock);
	while (*p != NULL && ((*p)->hash != hash || (*p)->klen != klen ||
	    memcmp((*p)->key, key, klen) != 0))
		p = &(*p)->next;
	if (*p != NULL && (*p)->leader != w) {
		(*p)->followers |= 1ull << w->id;
		(*p)->ended[w->id] = ended;
		*started_ms = (*p)->started_ms;
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
struct note {
	struct worker *w;
	crowd_ended_f *ended;
	struct crowd_outcome out;
	size_t klen;
	char key[];
};

static void
tell(void *arg)
{
	struct note *n = arg;

	n->ended(n->w, n->key, n->klen, &n->out);
	free(n);
}

void
crowd_end(struct crowd_claim **claimp, const struct crowd_outcome *out)
{
	struct crowd_claim *cl = *claimp;

	if (cl == NULL)
		return;
	*claimp = NULL;
	struct crowd *c = cl->leader->node->crowd;
	pthread_mutex_t *lock = stripe_of(c, cl->hash);
	pthread_mutex_lock(lock);
	struct crowd_claim **p = &c->buckets[cl->hash % CROWD_BUCKETS];
	while (*p != cl) {
		SC_ASSERT(*p != NULL);
		p = &(*p)->next;
	}
	*p = cl->next;
	uint64_t followers = cl->followers;
	pthread_mutex_unlock(lock);
	struct node *n = cl->leader->node;
	for (unsigned i = 0; followers != 0; i++, followers >>= 1) {
		if (!(followers & 1))
			continue;
		struct note *nt = malloc(sizeof(*nt) + cl->klen);
		/* without memory the follower's waiters wait for their
		 * bound, then fetch by themselves */
		if (nt == NULL)
			continue;
		*nt = (struct note){.w = n->workers[i], .ended = cl->ended[i],
		    .out = *out, .klen = cl->klen};
		memcpy(nt->key, cl->key, cl->klen);
		if (inbox_post(n->workers[i]->inbox, tell, free, nt) < 0)
			free(nt);
	}
	free(cl);
}
