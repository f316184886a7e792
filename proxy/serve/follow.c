/*
 * Collapsed forwarding across workers: waiting at another worker's
 * fetch.
 *
 * A worker's requests wait for a fetch in its own busy table (busy.c).
 * When another worker leads the fetch of a URL (crowd.c holds the
 * node's table of who leads what), this worker's requests wait at a
 * follower: a busy object of its own with no fetch, entered in its
 * table so that they seat, bound, release and fail as at any, which the
 * news from the leader drives on this worker's loop:
 *
 *   shared  the leader's body is in memory: the follower reads it as
 *           the leader's readers do (its source is a snapshot of the
 *           share, taken at each read), and its waiters become readers;
 *   more    more of it is in: its readers take it, and the slowest's
 *           place is told back (a window keeps what it has not taken);
 *   ended   done (its readers get the rest from the stored object the
 *           news carries, its waiters find it), or not: as the fetch's
 *           own waiters and readers would.
 *
 * The leader's side of a claim (taking it, handing it to the fetch's
 * busy object, letting it go) is here too: it is the same table's.
 */
#include <stdlib.h>
#include <string.h>

#include "busy_impl.h"
#include "crowd.h"
#include "proxy.h"
#include "sc_assert.h"
#include "txn.h"

/* What a txn holding the lead of its URL's next fetch lets go of when it
 * goes without opening one: the followers look again. */
static void
drop_claim(struct txn *t)
{
	busy_unclaim(t);
}

static const struct txn_part claim_part = {"crowd claim", drop_claim};

void
busy_unclaim(struct txn *t)
{
	crowd_end(&t->crowd,
	    &(struct crowd_outcome){.end = BUSY_LEADER_GONE});
}

static const struct crowd_follower_ops follower_ops;

/* With the claim t took when it found no fetch (busy_follow), or one
 * taken now (a revalidation nobody joined). */
void
busy_lead(struct busy *b, struct txn *t)
{
	struct worker *w = b->s;
	uint64_t started;
	struct crowd_share *sh;

	if (t->crowd != NULL) {
		b->claim = t->crowd;
		t->crowd = NULL;
		crowd_started(b->claim, b->started_ms);
	} else if (w->node->crowd != NULL &&
	    crowd_claim(w->node->crowd, w, b->key, b->klen, &follower_ops,
	    &b->claim, &started, &sh) != CROWD_LEAD) {
		b->claim = NULL; /* it fetches alongside another's */
		crowd_share_unref(&sh);
	}
}

/* A follower's readers took more, or one left: its worker says how far
 * its slowest reader of sh is (the leader's window keeps what it has not
 * taken). A worker may have more than one follower of a share: one left
 * its table (its waiters' bound), and a later request made another. */
static void
worker_taken(struct worker *w, struct crowd_share *sh)
{
	uint64_t least = CROWD_NONE;

	for (const struct busy *b = w->followers; b != NULL; b = b->fnext) {
		if (b->share != sh)
			continue;
		/* waiters not yet let in (the copy moved as they came) will
		 * read from the first byte */
		if (b->shape == NULL && b->waiting != NULL)
			least = 0;
		for (const struct busy_seat *st = b->readers; st != NULL;
		    st = st->next)
			if (st->sent < least)
				least = st->sent;
	}
	crowd_taken(sh, w, least);
}

static void
follower_taken(void *arg)
{
	struct busy *b = SC_CAST(struct busy, arg, BUSY_MAGIC);

	worker_taken(b->s, b->share);
}

void
busy_unfollow(struct busy *b)
{
	struct busy **p = &b->s->followers;

	while (*p != b) {
		SC_ASSERT(*p != NULL);
		p = &(*p)->fnext;
	}
	*p = b->fnext;
	b->follower = false;
	if (b->share != NULL)
		worker_taken(b->s, b->share);
}

/* b, a follower with a share, has not yet had its head: it has one once
 * the share may be read (not while the leader's copy moves: the next
 * news tries again), and its waiters become readers of the leader's
 * body as it arrives, as the leader's own. */
static void
follower_share(struct busy *b)
{
	if (b->shape != NULL || !crowd_read_begin(b->share, &b->own))
		return;
	crowd_read_end(b->share);
	busy_share(b, crowd_share_shape(b->share), &b->own, NULL);
}

/* Whether a newcomer may read b, a follower, from the first byte: the
 * leader's window had not let it go when b last read it (a window that
 * slid since cuts the newcomer at its first read). */
bool
busy_follower_from_start(const struct busy *b)
{
	return b->own.base == 0;
}

/* b, a follower, reads sh (its reference taken). */
static void
attach(struct busy *b, struct crowd_share *sh)
{
	b->share = sh;
	busy_on_taken(b, follower_taken, b);
	follower_share(b);
	worker_taken(b->s, sh);
}

/* On a follower's worker: the leader of key shares its body. */
static void
followed_shared(struct worker *w, const char *key, size_t klen,
    struct crowd_share *sh)
{
	for (struct busy *b = w->followers; b != NULL; b = b->fnext)
		if (b->share == NULL && b->klen == klen &&
		    memcmp(b->key, key, klen) == 0)
			attach(b, crowd_share_ref(sh));
	worker_taken(w, sh); /* CROWD_NONE: nobody here reads it */
	crowd_share_unref(&sh);
}

/* On a follower's worker: more of the leader's body is in. */
static void
followed_more(struct worker *w, const char *key, size_t klen,
    struct crowd_share *sh)
{
	(void)key;  /* the share names its followers */
	(void)klen;
	for (struct busy *b = w->followers; b != NULL; b = b->fnext) {
		if (b->share != sh)
			continue;
		if (b->shape == NULL)
			follower_share(b);
		else
			busy_body(b);
	}
	worker_taken(w, sh);
}

/* On a follower's worker: the leader of key is done, as out says. The
 * waiters here go as a fetch's own would: with the object stored, they
 * find it when they look again (served by the crowd: counted so, where
 * they find it), and its readers get the rest of it from out->obj. */
static void
followed_ended(struct worker *w, const char *key, size_t klen,
    const struct crowd_outcome *out)
{
	struct busy *b = w->followers, *next;

	for (; b != NULL; b = next) {
		next = b->fnext;
		if (b->klen != klen || memcmp(b->key, key, klen) != 0)
			continue;
		if (out->failed) {
			busy_fail(&b, out->status, out->disconnected,
			    out->cause);
			continue;
		}
		/* the object is stored: a waiter that finds it was served
		 * by the crowd (request.c counts it) */
		if (out->end == BUSY_DONE)
			for (struct busy_seat *st = b->waiting; st != NULL;
			    st = st->next)
				st->t->followed = true;
		busy_close(&b, out->end, out->obj);
	}
}

static const struct crowd_follower_ops follower_ops = {
	followed_shared, followed_more, followed_ended,
};

struct busy *
busy_follow(struct txn *t)
{
	struct worker *w = t->w;
	uint64_t started;
	struct crowd_claim *claim = NULL;
	struct crowd_share *sh;

	if (w->node->crowd == NULL || t->crowd != NULL)
		return NULL;
	switch (crowd_claim(w->node->crowd, w, t->url.norm, t->url.len,
	    &follower_ops, &claim, &started, &sh)) {
	case CROWD_LEAD:
		t->crowd = claim;
		txn_hold(t, &claim_part);
		return NULL;
	case CROWD_ALONE:
		return NULL;
	case CROWD_FOLLOW:
		break;
	}
	struct busy *b = busy_new(w, t);
	if (b == NULL) {
		crowd_share_unref(&sh);
		return NULL; /* the leader's note finds none: t fetches */
	}
	b->started_ms = started;
	b->follower = true;
	b->fnext = w->followers;
	w->followers = b;
	*busy_slot(b->table, b->hash, b->key, b->klen) = b;
	b->in_table = true;
	if (sh != NULL)
		attach(b, sh);
	return b;
}

void
busy_followers_free(struct worker *w)
{
	while (w->followers != NULL) {
		struct busy *b = w->followers;
		busy_close(&b, BUSY_LEADER_GONE, NULL);
	}
}
