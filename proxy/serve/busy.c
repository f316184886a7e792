/*
 * Collapsed forwarding: busy objects.
 *
 * A flash crowd asks for one uncached URL many times within the time the
 * origin takes to answer once. Each GET fetch that may be shared has a
 * busy object (Varnish's name), entered in a table by URL while nobody
 * else is fetching that URL. A request that finds nothing usable in the
 * store but a busy object for its URL does not go to the origin: it
 * waits for the head (a waiter), then reads the body from the fetch's
 * copy as it arrives (a reader). Requests arriving later join the same
 * way, and read from the first byte.
 *
 * Sharing needs the body kept where every reader can read it at its own
 * pace (struct busy_source, the fetch's): the fetch's copy for the store
 * in memory (of a known length reserved whole from inflight_mem before
 * the first byte, or of unknown length growing within it), or, for a
 * body too large for memory, the disk's segment file as the body goes
 * down (diskstream.c). Then the fetch never waits for a client. Every
 * client, the one that started the fetch (the leader) included, is a
 * reader with its own offset: a reader is given what its output has room
 * for (a bounded copy, or pages of the file by reference, so a slow
 * reader holds no more than a hit's output), and the rest when its
 * output drains. So a slow reader never slows the others, and the leader
 * leaving does not stop the fetch: the object is still stored. Once the
 * fetch completes, each reader gets what it has not read from the stored
 * object (or the file, through the disk's sender), by reference, as a
 * hit does. A body of unknown length goes to HTTP/1.1 readers chunked.
 *
 * One case keeps no copy for all: a body of unknown length that outgrows
 * what memory may hold for it is not stored, and the copy becomes a tee,
 * a window past what the slowest reader has taken; the fetch waits for
 * that reader when the window is full (busy_on_taken), as it waits for
 * its one client when nobody shares it, and reads on when the reader
 * takes more or leaves. Once its first bytes have left the window it
 * takes no newcomer (busy_unlist: the next request leads a fetch of its
 * own), and when nobody reads it any more its fetch stops.
 *
 * An answer that cannot be shared (not storable) lets its waiters go:
 * each fetches by itself and never waits again (no_collapse), so an
 * uncacheable URL costs one head's wait, never a chain of them. A fetch
 * that fails (no answer, or a server error) is the waiters' answer too
 * (busy_fail): a crowd on a failing origin costs it one request, not one
 * each, and each waiter is answered when the one fetch fails, with a
 * stale copy where the rules allow one. No retry: a second try would
 * cost the crowd the origin's timeout again.
 * A waiter whose request selects another variant (Vary) goes by itself
 * too. The wait for the head is bounded by collapsed_forwarding_timeout,
 * counted from the fetch's start; then the waiters go by themselves and
 * the URL leaves the table.
 *
 * Ownership: a busy object belongs to its fetch, which closes it
 * (busy_close); the table and the seats of the txns waiting or reading
 * point to it. A seat (struct busy_seat, t->seat) is busy.c's, made when
 * its txn joins and freed when it leaves (busy_leave, also from the txn's
 * free). A waiter let go goes on through the continuation it joined with
 * (busy_join's again): this room never names who asked.
 * The table holds every fetch that could be shared, whether or not
 * collapsed forwarding lets requests join it: it is also how a
 * revalidation behind a stale answer knows one is running (stale.c).
 *
 * With several workers, a fetch another worker leads is waited for at a
 * follower: a busy object of this worker with no fetch, which the
 * leader's end closes from afar (crowd.c holds the node's table of who
 * leads what and carries the news). Why this file is over 800 lines and
 * stays one: a follower is a busy object like any, its waiters are
 * seated, bounded, released and failed by the same code, and that code
 * is this file's private part (seats, the table, release); a file of its
 * own would need all of it opened in a header for 100 lines. The
 * cross-worker part that needs none of it is crowd.c.
 */
#include "busy.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <xxhash.h>

#include "bodyfd.h"
#include "client.h"
#include "crowd.h"
#include "disksend.h"
#include "clock.h"
#include "range.h"
#include "deliver.h"
#include "stored.h"
#include "sc_assert.h"
#include "txn.h"
#include "writer.h"

#define BUSY_BUCKETS 4096  /* fetches at once: a few thousand at most */
/* a reader's output is topped up to twice the client's low-water mark,
 * at which its drain callback asks for more */
#define BUSY_OUT_LOW (CLIENT_OUT_HIGH / 4)

#define BUSY_MAGIC 0x956f5c71u
struct busy {
	unsigned magic;         /* BUSY_MAGIC (SC_CAST) */
	struct busy *hnext;
	struct busy_table *table;
	struct worker *s;
	uint64_t hash;
	bool in_table;
	bool asking_peer;
	bool follower;              /* no fetch: another worker's waits */
	struct busy *fnext;         /* a follower: its worker's list */
	struct crowd_claim *claim;  /* a leader's, with several workers */
	struct crowd_share *share;  /* a follower's: the leader's body */
	struct busy_source own;     /* a follower's source: the share's */
	uint64_t started_ms;        /* the waiters' bound counts from here */
	struct event *deadline;     /* armed by the first waiter */
	struct busy_seat *waiting;  /* for the head */
	struct busy_seat *readers;  /* being sent the body */
	struct store_obj *shape;    /* once shared: head and metadata */
	const struct busy_source *src; /* once shared: the fetch's */
	void (*taken)(void *arg);   /* busy_on_taken's */
	void *taken_arg;
	size_t klen;
	char key[];
};

struct busy_table {
	struct busy *buckets[BUSY_BUCKETS];
};

/*
 * A txn's place at a busy object (t->seat): waiting for the head, or
 * reading the body. Made when the txn joins, freed when it leaves; the
 * txn knows nothing of what is in it.
 */
struct busy_seat {
	struct busy *b;
	struct txn *t;
	struct busy_seat *prev, *next;
	busy_again_f *again;  /* a waiter let go goes on here */
	uint64_t sent;        /* body bytes given to the client */
	bool reading;         /* its head is out: it reads the body */
	bool by_ref;          /* file pages were sent it by reference */
};

struct busy_table *
busy_table_new(void)
{
	return calloc(1, sizeof(struct busy_table));
}

void
busy_table_free(struct busy_table **tp)
{
	free(*tp);
	*tp = NULL;
}

static struct busy **
slot(struct busy_table *tb, uint64_t hash, const char *key, size_t klen)
{
	struct busy **p = &tb->buckets[hash % BUSY_BUCKETS];

	while (*p != NULL && ((*p)->hash != hash || (*p)->klen != klen ||
	    memcmp((*p)->key, key, klen) != 0))
		p = &(*p)->hnext;
	return p;
}

static void
leave_table(struct busy *b)
{
	if (!b->in_table)
		return;
	struct busy **p = slot(b->table, b->hash, b->key, b->klen);
	SC_ASSERT(*p == b);
	*p = b->hnext;
	b->in_table = false;
}

/* ---- seats ---- */

/* What collapsed forwarding hangs on a txn: its seat, the failure it
 * was told. */
static void
drop_busy(struct txn *t)
{
	busy_leave(t);
	free(t->failed);
	t->failed = NULL;
}

static const struct txn_part busy_part = {"collapsed forwarding", drop_busy};

static struct busy_seat *
seat_new(struct txn *t, busy_again_f *again)
{
	struct busy_seat *st = calloc(1, sizeof(*st));

	/* a txn waits at one fetch at a time */
	SC_ASSERT(t->seat == NULL);
	txn_hold(t, &busy_part);
	if (st != NULL) {
		st->t = t;
		st->again = again;
		t->seat = st;
	}
	return st;
}

static void
seat_link(struct busy_seat **list, struct busy_seat *st)
{
	st->prev = NULL;
	st->next = *list;
	if (*list != NULL)
		(*list)->prev = st;
	*list = st;
}

/* st off its busy object's list (it may be on none: taken whole) */
static void
seat_unlink(struct busy_seat *st)
{
	struct busy *b = st->b;

	if (b != NULL) {
		struct busy_seat **list = st->reading ? &b->readers :
		    &b->waiting;
		if (st->prev != NULL)
			st->prev->next = st->next;
		else
			*list = st->next;
		if (st->next != NULL)
			st->next->prev = st->prev;
	}
	st->b = NULL;
	st->prev = st->next = NULL;
}

void
busy_leave(struct txn *t)
{
	struct busy_seat *st = t->seat;

	if (st == NULL)
		return;
	/* a seat is its txn's, and a reader's is at a busy object */
	SC_ASSERT(st->t == t && (!st->reading || st->b != NULL));
	struct busy *b = st->reading ? st->b : NULL;
	seat_unlink(st);
	t->seat = NULL;
	free(st);
	/* the slowest reader may have gone: a tee's window has room */
	if (b != NULL && b->taken != NULL)
		b->taken(b->taken_arg);
}

/* ---- waiters ---- */

/* Lets a waiter go (off any list already): it looks in the store again
 * and, finding nothing, fetches (alone when it may not wait again). */
static void
release(struct busy_seat *st, bool alone)
{
	struct txn *t = st->t;
	busy_again_f *again = st->again;

	busy_leave(t);
	t->no_collapse = alone;
	if (alone)
		METRIC_INC(t->w->m.collapsed_released);
	again(t);
}

/* Every waiter of b goes; the list is taken first, since looking again
 * may start a fetch that others join. */
static void
release_all(struct busy *b, bool alone)
{
	struct busy_seat *st = b->waiting, *next;

	b->waiting = NULL;
	for (; st != NULL; st = next) {
		next = st->next;
		st->b = NULL;
		release(st, alone);
	}
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct busy *b = SC_CAST(struct busy, arg, BUSY_MAGIC);

	(void)fd;
	(void)what;
	/* a slow head: nobody else waits for it */
	leave_table(b);
	for (struct busy_seat *st = b->waiting; st != NULL; st = st->next)
		METRIC_INC(b->s->m.collapsed_timeout);
	release_all(b, true);
}

/* Arms the waiters' bound, collapsed_forwarding_timeout after the
 * fetch started; false on ENOMEM (the request then fetches alone). */
static bool
arm_deadline(struct busy *b)
{
	uint64_t bound = b->s->node->conf.collapsed_forwarding_timeout_ms;
	uint64_t spent = mono_ms() - b->started_ms;

	b->deadline = evtimer_new(b->s->base, on_deadline, b);
	if (b->deadline == NULL)
		return false;
	struct timeval tv = tv_ms(spent < bound ? bound - spent : 0);
	evtimer_add(b->deadline, &tv);
	return true;
}

/* ---- readers ---- */

static void
reader_done(struct txn *t)
{
	busy_leave(t);
	client_txn_done(t->c);
}

/* n more bytes of the body from src to st's client: from memory by
 * copy; from the disk's file by reference, or copied for a client whose
 * layer reads every byte (TLS: it would otherwise map the file). false
 * when the file could not be read. */
static bool
take(struct busy_seat *st, const struct busy_source *src, uint64_t n)
{
	struct txn *t = st->t;
	bool ok = true;

	if (src->copy != NULL) {
		writer_data(t, src->copy->data + (st->sent - src->base),
		    (size_t)n);
	} else {
		bool copy = writer_copies(t);
		ok = writer_body(t, src->file, st->sent, n, copy, NULL);
		st->by_ref |= !copy;
	}
	st->sent += n;
	return ok;
}

/* Gives st's client what its output has room for of its answer's body
 * so far: the object's, or the ranges it asked for (range.c; of a body
 * whole in memory only, busy_share). */
static void
pump(struct busy *b, struct busy_seat *st)
{
	struct txn *t = st->t;
	const struct busy_source *src = b->src;
	struct crowd_share *sh = b->share;
	bool ok = true;

	/* a follower reads the leader's copy while the leader lets it:
	 * unshared, the rest comes from the stored object at the end */
	if (sh != NULL && !crowd_read_begin(sh, &b->own.have))
		return;
	size_t queued = writer_queued(t);
	uint64_t have = src->have;
	int64_t end = t->range != NULL ? (int64_t)t->range->total :
	    src->length;

	if (queued < 2 * BUSY_OUT_LOW && t->range != NULL) {
		struct evbuffer *part = evbuffer_new();
		if (part != NULL) {
			range_copy(t->range, &st->sent, src->copy->data, 0,
			    have, 2 * BUSY_OUT_LOW - queued, part);
			writer_data_buffer(t, part);
			evbuffer_free(part);
		}
	} else if (st->sent < have && queued < 2 * BUSY_OUT_LOW) {
		uint64_t n = have - st->sent;
		if (n > 2 * BUSY_OUT_LOW - queued)
			n = 2 * BUSY_OUT_LOW - queued;
		ok = take(st, src, n);
	}
	if (sh != NULL)
		crowd_read_end(sh);
	if (!ok) {
		busy_leave(t);
		client_fail(t->c, CUT_ABORTED);
		return;
	}
	if (end >= 0 && st->sent == (uint64_t)end)
		reader_done(t);
}

/* Whether t may read src: a range only of a body whole in memory (the
 * others' ranges are read by range_copy off no copy). */
static bool
readable_by(const struct busy_source *src, const struct txn *t)
{
	return !range_asked(&t->req) || (src->copy != NULL &&
	    src->length >= 0 && src->base == 0);
}

/* Writes t's head from the shared object, st its seat (NULL for one
 * still to be made, or none: ENOMEM, the client fails): a reader of the
 * body, or done (HEAD, 304, an empty body). */
static void
start_reading(struct busy *b, struct txn *t, struct busy_seat *st,
    bool leader)
{
	enum txn_result result = t->result;

	if (st == NULL && (st = seat_new(t, NULL)) == NULL) {
		client_fail(t->c, CUT_ABORTED);
		return;
	}
	bool body = deliver_head(t, b->shape, leader ? t->code :
	    SQ_TCP_CF_HIT, leader ? "MISS" : "HIT", b->src->length);
	if (leader) {
		t->result = result;
	} else {
		t->result = RESULT_LOCAL_HIT;
		METRIC_INC(t->w->m.collapsed_served);
	}
	if (!body) {
		busy_leave(t);
		client_txn_done(t->c);
		return;
	}
	st->b = b;
	st->reading = true;
	st->sent = 0;
	seat_link(&b->readers, st);
	pump(b, st);
}

/* A busy object of w for t's URL, in no table yet; NULL on ENOMEM. */
static struct busy *
busy_new(struct worker *w, const struct txn *t)
{
	struct busy *b = calloc(1, sizeof(*b) + t->url.len);

	if (b == NULL)
		return NULL;
	b->magic = BUSY_MAGIC;
	b->s = w;
	b->table = w->busy;
	b->klen = t->url.len;
	memcpy(b->key, t->url.norm, t->url.len);
	b->hash = XXH3_64bits(b->key, b->klen);
	return b;
}

/* ---- other workers' fetches (crowd.c) ---- */

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

/* A new fetch's busy object b leads its URL for every worker: with the
 * claim t took when it found none (busy_join), or one taken now (a
 * revalidation nobody joined). */
static void
lead(struct busy *b, struct txn *t)
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

static void
unfollow(struct busy *b)
{
	struct busy **p = &b->s->followers;

	while (*p != b) {
		SC_ASSERT(*p != NULL);
		p = &(*p)->fnext;
	}
	*p = b->fnext;
	b->follower = false;
}

/* w's follower of key, with (want) or without a share; NULL if none. */
static struct busy *
follower_of(struct worker *w, const char *key, size_t klen, bool shared)
{
	struct busy *b = w->followers;

	for (; b != NULL; b = b->fnext)
		if (b->klen == klen && memcmp(b->key, key, klen) == 0 &&
		    (b->share != NULL) == shared)
			return b;
	return NULL;
}

/* b, a follower, reads sh (its reference taken): its waiters become
 * readers of the leader's body as it arrives, as the leader's own. */
static void
attach(struct busy *b, struct crowd_share *sh)
{
	b->share = sh;
	b->own = (struct busy_source){.copy = crowd_share_copy(sh),
	    .length = (int64_t)crowd_share_length(sh)};
	busy_share(b, crowd_share_shape(sh), &b->own, NULL);
}

/* On a follower's worker: the leader of key shares its body. */
static void
followed_shared(struct worker *w, const char *key, size_t klen,
    struct crowd_share *sh)
{
	struct busy *b = follower_of(w, key, klen, false);

	if (b != NULL && b->shape == NULL)
		attach(b, sh);
	else
		crowd_share_unref(&sh);
}

/* On a follower's worker: more of the leader's body is in. */
static void
followed_more(struct worker *w, const char *key, size_t klen,
    struct crowd_share *sh)
{
	(void)key;  /* the share names its follower: w's has it */
	(void)klen;
	for (struct busy *b = w->followers; b != NULL; b = b->fnext)
		if (b->share == sh) {
			busy_body(b);
			return;
		}
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

/*
 * t's worker has no fetch of t's URL: another worker may lead one, which
 * t then waits for at a follower here (returned); or t leads the next
 * (the claim is t's until its fetch opens its busy object); NULL.
 */
static struct busy *
follow(struct txn *t)
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
	*slot(b->table, b->hash, b->key, b->klen) = b;
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

/* ---- the fetch's side ---- */

struct busy *
busy_open(struct worker *s, struct txn *t)
{
	/* a range sent on to the origin is nobody else's answer */
	if (!t->is_get || t->body != NULL || (!t->range_whole &&
	    http_field_find(&t->req, "range") != NULL)) {
		busy_unclaim(t);
		return NULL;
	}
	struct busy *b = busy_new(s, t);
	if (b == NULL) {
		busy_unclaim(t);
		return NULL;
	}
	struct busy **p = slot(b->table, b->hash, b->key, b->klen);
	if (*p != NULL) {
		busy_unclaim(t);
		return b;  /* somebody leads it already */
	}
	b->started_ms = mono_ms();
	*p = b;
	b->in_table = true;
	lead(b, t);
	return b;
}

bool
busy_running(struct worker *s, const char *key, size_t klen)
{
	return *slot(s->busy, XXH3_64bits(key, klen), key, klen) != NULL ||
	    (s->node->crowd != NULL && crowd_running(s->node->crowd, key,
	    klen));
}

bool
busy_join(struct txn *t, busy_again_f *again)
{
	struct worker *s = t->w;

	if (s->node->conf.collapsed_forwarding_timeout_ms == 0 ||
	    (!t->is_get && !t->is_head) || t->body != NULL ||
	    t->no_collapse || t->reqcc.no_cache ||
	    http_field_find(&t->req, "authorization") != NULL)
		return false;
	uint64_t hash = XXH3_64bits(t->url.norm, t->url.len);
	struct busy *b = *slot(s->busy, hash, t->url.norm, t->url.len);
	if (b == NULL)
		b = follow(t);
	if (b == NULL || (t->for_peer && b->asking_peer && b->shape == NULL))
		return false;
	if (b->shape == NULL) {
		/* the bound's timer costs nothing to a fetch nobody joins */
		if (b->deadline == NULL && !arm_deadline(b))
			return false;
		struct busy_seat *st = seat_new(t, again);
		if (st == NULL)
			return false;
		st->b = b;
		seat_link(&b->waiting, st);
		return true;
	}
	/* the head is in: read from the first byte, if it is our variant
	 * and the source can give what it asks */
	if (!stored_vary_matches(b->shape, &t->req) ||
	    !readable_by(b->src, t))
		return false;
	start_reading(b, t, NULL, false);
	return true;
}

void
busy_share(struct busy *b, struct store_obj *shape,
    const struct busy_source *src, struct txn *leader)
{
	b->shape = store_obj_ref(shape);
	b->src = src;
	if (b->deadline != NULL)
		evtimer_del(b->deadline);
	if (leader != NULL)
		start_reading(b, leader, NULL, true);
	struct busy_seat *st = b->waiting, *next;
	b->waiting = NULL;
	for (; st != NULL; st = next) {
		next = st->next;
		st->b = NULL;
		st->prev = st->next = NULL;
		if (stored_vary_matches(shape, &st->t->req) &&
		    readable_by(src, st->t))
			start_reading(b, st->t, st, false);
		else
			release(st, true);
	}
	/* other workers' readers read a copy that never moves (crowd.c):
	 * a known length in memory, reserved whole */
	if (b->claim != NULL && src->copy != NULL && src->file == NULL &&
	    src->length >= 0 && src->base == 0) {
		crowd_share(b->claim, shape, src->copy, (uint64_t)src->length);
		crowd_have(b->claim, src->have);
	}
}

void
busy_unshare(struct busy *b)
{
	if (b != NULL)
		crowd_unshare(b->claim);
}

void
busy_asking_peer(struct busy *b, bool asking)
{
	b->asking_peer = asking;
}

void
busy_body(struct busy *b)
{
	struct busy_seat *st = b->readers, *next;

	for (; st != NULL; st = next) {
		next = st->next;
		pump(b, st);
	}
	crowd_have(b->claim, b->src->have);
}

uint64_t
busy_slowest(const struct busy *b)
{
	uint64_t least = b->src->have;

	for (const struct busy_seat *st = b->readers; st != NULL;
	    st = st->next)
		if (st->sent < least)
			least = st->sent;
	return least;
}

bool
busy_waiting(const struct busy *b)
{
	for (const struct busy_seat *st = b->readers; st != NULL;
	    st = st->next)
		if (st->sent == b->src->have)
			return true;
	return false;
}

void
busy_on_taken(struct busy *b, void (*taken)(void *arg), void *arg)
{
	b->taken = taken;
	b->taken_arg = arg;
}

bool
busy_read(const struct busy *b)
{
	return b->readers != NULL;
}

void
busy_unlist(struct busy *b)
{
	leave_table(b);
}

void
busy_drained(struct txn *t)
{
	struct busy_seat *st = t->seat;

	if (st == NULL || st->b == NULL || !st->reading)
		return;
	struct busy *b = st->b;
	pump(b, st);
	if (b->taken != NULL)
		b->taken(b->taken_arg);
}

void
busy_fail(struct busy **bp, int status, bool disconnected, const char *cause)
{
	struct busy *b = *bp;

	if (b == NULL)
		return;
	struct worker *s = b->s;
	size_t clen = strlen(cause);
	/* the other workers' waiters are told the same */
	struct crowd_outcome out = {.end = BUSY_FAILED, .failed = true,
	    .status = status, .disconnected = disconnected};
	snprintf(out.cause, sizeof(out.cause), "%s", cause);
	crowd_end(&b->claim, &out);
	/* the waiters are taken off b first: busy_close frees it */
	struct busy_seat *st = b->waiting, *next;
	b->waiting = NULL;
	for (struct busy_seat *w = st; w != NULL; w = w->next)
		w->b = NULL;
	busy_close(bp, BUSY_FAILED, NULL);
	for (; st != NULL; st = next) {
		next = st->next;
		struct txn *t = st->t;
		busy_again_f *again = st->again;
		busy_leave(t);
		t->no_collapse = true;
		txn_hold(t, &busy_part);
		t->failed = malloc(sizeof(*t->failed) + clen + 1);
		if (t->failed != NULL) {
			t->failed->status = status;
			t->failed->disconnected = disconnected;
			memcpy(t->failed->cause, cause, clen + 1);
		}
		METRIC_INC(s->m.collapsed_failed);
		/* without memory for the failure it fetches by itself */
		again(t);
	}
}

/*
 * A reader (st: its seat as it was; it has left it) of a complete fetch
 * is sent the rest of its body, from obj (the stored object) when there
 * is one, else from the source (a tee's window, or the disk's file
 * through the disk's sender, which ends t itself), and finished. false
 * when there is nothing to send it from.
 */
static bool
rest_of(const struct busy *b, const struct busy_seat *st,
    struct store_obj *obj)
{
	const struct busy_source *src = b->src;
	struct txn *t = st->t;
	struct store_body *body = obj != NULL ? obj->body : src->copy != NULL ?
	    src->copy : src->file;
	uint64_t base = obj != NULL || src->copy == NULL ? 0 : src->base;

	if (body == NULL)
		return false;
	uint64_t rest = base + body->len - st->sent;
	if (t->range != NULL) {
		range_send(t, st->sent, body, NULL);
	} else if (disksend_wanted(body)) {
		return disksend_start(t, body, st->sent, rest, st->by_ref,
		    NULL) == 0;
	} else {
		writer_body(t, body, st->sent - base, rest, false, NULL);
	}
	client_txn_done(t->c);
	return true;
}

void
busy_close(struct busy **bp, enum busy_end end, struct store_obj *obj)
{
	struct busy *b = *bp;

	if (b == NULL)
		return;
	*bp = NULL;
	b->taken = NULL;   /* the fetch ends: its readers leave for good */
	leave_table(b);
	crowd_end(&b->claim, &(struct crowd_outcome){.end = end, .obj = obj});
	if (b->follower)
		unfollow(b);
	/* a follower's readers get the rest from obj: the leader's copy
	 * may be gone */
	b->own.copy = NULL;
	if (b->deadline != NULL)
		event_free(b->deadline);
	struct busy_seat *st, *next;
	for (st = b->readers; st != NULL; st = next) {
		next = st->next;
		struct txn *t = st->t;
		struct busy_seat was = *st;
		busy_leave(t);
		if (end != BUSY_DONE || !rest_of(b, &was, obj))
			client_fail(t->c, end == BUSY_TIMED_OUT ? CUT_TIMEDOUT :
			    CUT_ABORTED);
	}
	release_all(b, end != BUSY_DONE && end != BUSY_LEADER_GONE);
	crowd_share_unref(&b->share);
	store_obj_unref(&b->shape);
	b->magic = 0;
	free(b);
}
