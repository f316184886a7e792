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
 * follower: a busy object of this worker with no fetch, driven by the
 * leader's news (follow.c); the leader shares its body with the other
 * workers' readers through crowd.c. busy_impl.h is what the two files
 * share.
 */
#include "busy_impl.h"

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

struct busy_table {
	struct busy *buckets[BUSY_BUCKETS];
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

struct busy **
busy_slot(struct busy_table *tb, uint64_t hash, const char *key, size_t klen)
{
	struct busy **p = &tb->buckets[hash % BUSY_BUCKETS];

	while (*p != NULL && ((*p)->hash != hash || (*p)->klen != klen ||
	    memcmp((*p)->key, key, klen) != 0))
		p = &(*p)->hnext;
	return p;
}

void
busy_leave_table(struct busy *b)
{
	if (!b->in_table)
		return;
	struct busy **p = busy_slot(b->table, b->hash, b->key, b->klen);
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
	busy_leave_table(b);
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

	/* a follower reads the leader's copy while the leader lets it (not
	 * while it moves: the next news says more; unshared, the rest
	 * comes from the stored object at the end) */
	if (sh != NULL && !crowd_read_begin(sh, &b->own))
		return;
	/* a window that slid past a follower joining as it did */
	bool ok = st->sent >= src->base;
	if (sh != NULL && src->base > 0)
		busy_leave_table(b);  /* a newcomer would miss the start */
	size_t queued = writer_queued(t);
	uint64_t have = src->have;
	int64_t end = t->range != NULL ? (int64_t)t->range->total :
	    src->length;

	if (!ok) {
		/* the reader is cut below */
	} else if (queued < 2 * BUSY_OUT_LOW && t->range != NULL) {
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

struct busy *
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
	struct busy **p = busy_slot(b->table, b->hash, b->key, b->klen);
	if (*p != NULL) {
		busy_unclaim(t);
		return b;  /* somebody leads it already */
	}
	b->started_ms = mono_ms();
	*p = b;
	b->in_table = true;
	busy_lead(b, t);
	return b;
}

bool
busy_running(struct worker *s, const char *key, size_t klen)
{
	return *busy_slot(s->busy, XXH3_64bits(key, klen), key, klen) != NULL ||
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
	struct busy *b = *busy_slot(s->busy, hash, t->url.norm, t->url.len);
	if (b == NULL)
		b = busy_follow(t);
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
	 * and the source can give what it asks (another worker's window
	 * may have let it go: nobody joins it here any more) */
	if (b->share != NULL && !busy_follower_from_start(b)) {
		busy_leave_table(b);
		return false;
	}
	if (!stored_vary_matches(b->shape, &t->req) ||
	    !readable_by(b->src, t))
		return false;
	start_reading(b, t, NULL, false);
	return true;
}

/* On a leader's loop: another worker's readers took more, or left. */
static void
leader_taken(void *arg)
{
	struct busy *b = SC_CAST(struct busy, arg, BUSY_MAGIC);

	if (b->taken != NULL)
		b->taken(b->taken_arg);
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
	/* other workers' readers read the copy in memory, or the record
	 * on its way to the disk (crowd.c) */
	if (b->claim != NULL && (src->copy != NULL || src->file != NULL)) {
		crowd_share(b->claim, shape, src->copy, src->file,
		    src->length, leader_taken, b);
		crowd_have(b->claim, src->have, src->length);
	}
}

void
busy_moving(struct busy *b)
{
	crowd_move_begin(b->claim);
}

void
busy_moved(struct busy *b)
{
	crowd_move_end(b->claim, b->src->copy, b->src->base);
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
	crowd_have(b->claim, b->src->have, b->src->length);
}

uint64_t
busy_slowest(const struct busy *b)
{
	uint64_t least = b->src->have, elsewhere = crowd_slowest(b->claim);

	if (elsewhere < least)
		least = elsewhere;

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
	crowd_windowed(b->claim);  /* the other workers' readers too */
}

bool
busy_read(const struct busy *b)
{
	return b->readers != NULL || busy_read_elsewhere(b);
}

bool
busy_read_elsewhere(const struct busy *b)
{
	return crowd_slowest(b->claim) != CROWD_NONE;
}

void
busy_unlist(struct busy *b)
{
	busy_leave_table(b);
	crowd_unlist(b->claim);
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
	busy_leave_table(b);
	crowd_end(&b->claim, &(struct crowd_outcome){.end = end, .obj = obj});
	if (b->follower)
		busy_unfollow(b);
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
