/*
 * What a fetch receives: the head decided and written, the body sent to
 * the client and copied for the store; how it ends is fetchend.c's.
 *
 * We rebuild the head for the client from the source's fields minus
 * hop-by-hop ones, and frame the body ourselves; what is stored or
 * invalidated of a response is stored.c's.
 *
 * Back-pressure: the write callback returns CURL_WRITEFUNC_PAUSE while the
 * client's output holds more than FETCH_OUT_HIGH; the client's write
 * callback (at the same low-water mark) unpauses. curl keeps the chunk it
 * could not deliver, so a fetch holds at most its output, curl's buffer
 * and that chunk: fetch_mem_bound(). So a response of any size through a
 * slow client costs a bounded buffer.
 *
 * The body is also copied into a store_body while it stays within
 * max_object_size and the response is storable; on a clean finish it
 * becomes a store object. The copy reserves inflight_mem as it grows (a
 * known length at once); when the pool is taken, the response streams on
 * uncached. A body of known length too large for memory is not copied:
 * it goes to the disk tier as it arrives (a disk stream, reserving its
 * bounded buffers), and a disk slower than the origin pauses the fetch
 * as a slow client does.
 *
 * A copy that will be stored is shared (busy.c): the memory copy (of
 * known length, reserved whole, or of unknown length, growing), or the
 * disk stream's file as the body goes down. Every client, the one that
 * started the fetch too, reads it at its own pace, and the fetch never
 * pauses for any of them; it pauses for the disk when the disk is
 * slower. A copy of unknown length that outgrows what memory may hold is
 * not stored after all: it becomes a tee (busy.c), a window the slowest
 * reader holds the fetch to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "budget.h"
#include "busy.h"
#include "client.h"
#include "disk.h"
#include "fetch_impl.h"
#include "range.h"
#include "deliver.h"
#include "clock.h"
#include "pass.h"
#include "writer.h"
#include "sc_assert.h"
#include "stale.h"
#include "stored.h"
#include "txn.h"
#include "tiers.h"

/* The copy for the store is given up (or was stored): its reservation
 * goes back to inflight_mem. */
void
fetch_drop_copy(struct fetch *f)
{
	busy_unshare(f->busy);
	disk_stream_abort(&f->stream);
	if (f->body != NULL && f->body->refs == 1)
		budget_freed(f->w->node->budget, f->body->cap);
	store_body_unref(&f->body);
	if (f->reserved > 0)
		budget_give(f->w->node->budget, f->reserved);
	f->reserved = 0;
}

/*
 * The copy may grow to need bytes: store_body_append's doubling makes its
 * capacity less than twice that, so twice is reserved. false when
 * inflight_mem cannot hold it.
 */
static bool
reserve_copy_keep(struct fetch *f, size_t need)
{
	size_t want = need < 4096 ? 4096 : 2 * need;

	if (want <= f->reserved)
		return true;
	if (!budget_take(f->w->node->budget, want - f->reserved))
		return false;
	f->reserved = want;
	return true;
}

/* The same, the copy dropped when it cannot grow. */
static bool
reserve_copy(struct fetch *f, size_t need)
{
	if (reserve_copy_keep(f, need))
		return true;
	fetch_drop_copy(f);
	return false;
}

static void
forward_interim(struct fetch *f)
{
	struct txn *t = f->t;

	/* 101 needs Upgrade, which we never forward */
	if (f->resp.status == 101)
		return;
	struct evbuffer *fb = writer_interim(t, f->resp.status, f->resp.reason,
	    f->resp.reason_len);
	if (fb == NULL)
		return;
	stored_fields(&f->resp, fb, true, NULL);
	writer_interim_end(t);
}

/* The response's fields as the store keeps them, in f->stored_head. */
static bool
keep_head(struct fetch *f)
{
	f->stored_head = stored_fields_copy(&f->resp, &f->stored_head_len);
	return f->stored_head != NULL;
}

/* The disk's stream has room again. */
static void
stream_drained(void *arg)
{
	fetch_output_drained(arg);
}

/* A body too large for memory goes to the disk as it arrives, or is not
 * kept at all. */
static void
start_stream(struct fetch *f, uint64_t clen)
{
	struct txn *t = f->t;
	struct worker *s = t->w;
	struct store_body *none = store_body_new(0);
	struct store_obj *o = none != NULL && keep_head(f) ? stored_object(t,
	    &f->resp, f->stored_head, f->stored_head_len, none,
	    f->request_time) : NULL;

	store_body_unref(&none);
	if (o != NULL && budget_take(s->node->budget, DISK_STREAM_MEM)) {
		f->reserved = DISK_STREAM_MEM;
		f->stream = tiers_stream(s->node->tiers, o, clen);
		if (f->stream != NULL)
			disk_stream_on_drained(f->stream, stream_drained, f);
		else
			fetch_drop_copy(f);
	}
	store_obj_unref(&o);
}

/* The disk stream wrote more of the body, or failed: taken up on the
 * loop, off the disk's callback, which may not end the stream
 * (stream_progress, fetchend.c). */
static void
stream_written(void *arg, uint64_t readable, bool failed)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);

	f->stream_readable = readable;
	f->stream_failed = f->stream_failed || failed;
	event_active(f->wake, 0, 0);
}

/* Whether the kept body can be its readers': in memory, or on its way
 * to the disk (a range asked of that goes to the source, busy.c). */
static bool
shareable(const struct fetch *f)
{
	return f->body != NULL || (f->stream != NULL &&
	    !range_asked(&f->t->req));
}

/*
 * The body will be kept, in memory or on the disk as it arrives (clen
 * -1: of a length known at its end): the fetch goes on for every client
 * that reads it (busy.c), the one that started it too, which may be
 * answered at once (its condition matched) or leave. false when the
 * object's shape or the stream's readers' body cannot be made.
 */
static bool
share(struct fetch *f, int64_t clen)
{
	struct txn *t = f->t;
	struct store_body *none = store_body_new(0);

	f->shape = none != NULL ? stored_object(t, &f->resp, f->stored_head,
	    f->stored_head_len, none, f->request_time) : NULL;
	store_body_unref(&none);
	if (f->shape == NULL)
		return false;
	f->src = (struct busy_source){.copy = f->body, .length = clen};
	if (f->stream != NULL) {
		f->wake = event_new(f->w->base, -1, 0, stream_progress, f);
		f->src.file = disk_stream_body(f->stream);
		if (f->wake == NULL || f->src.file == NULL) {
			store_obj_unref(&f->shape);
			return false;
		}
		disk_stream_on_written(f->stream, stream_written, f);
	}
	f->shared = true;
	f->t = NULL;
	t->fetch = NULL;
	f->next = f->w->shared_fetches;
	if (f->next != NULL)
		f->next->prev = f;
	f->w->shared_fetches = f;
	if (t->c != NULL) {
		busy_share(f->busy, f->shape, &f->src, t);
		return true;
	}
	/* a revalidation behind a stale answer: its own line, and done */
	busy_share(f->busy, f->shape, &f->src, NULL);
	txn_clientless_end(t, f->resp.status, t->code);
	return true;
}

/* What the client's Range asks of a whole 200 of clen bytes fetched for
 * it: t->range is set for a 206. */
static enum range_verdict
fetched_range(struct fetch *f, int64_t clen)
{
	struct txn *t = f->t;

	if (!t->range_whole || f->resp.status != 200 || clen < 0)
		return RANGE_WHOLE;
	const struct http_field *et = http_field_find(&f->resp, "etag");
	const struct http_field *lm = http_field_find(&f->resp,
	    "last-modified");
	const struct http_field *ct = http_field_find(&f->resp,
	    "content-type");
	txn_hold(t, &range_part);
	return range_count(&t->w->m, range_plan(&t->req, (uint64_t)clen,
	    et != NULL ? et->value : NULL, et != NULL ? et->vlen : 0,
	    lm != NULL ? http_date_parse(lm->value, lm->vlen) : -1,
	    ct != NULL ? ct->value : NULL, ct != NULL ? ct->vlen : 0,
	    &t->range));
}

/* Whether the key's owner answered from its cache: its X-Cache says so
 * under its name (a response it fetched says MISS; fields of the origin's
 * own are under other names). */
static bool
owner_had_it(const struct fetch *f)
{
	const char *name = f->peer_as.name;
	size_t nl = strlen(name);

	for (unsigned i = 0; i < f->resp.nfields; i++) {
		const struct http_field *fl = &f->resp.fields[i];
		if (http_field_is(fl, "x-cache") && fl->vlen == 9 + nl &&
		    memcmp(fl->value, "HIT from ", 9) == 0 &&
		    memcmp(fl->value + 9, name, nl) == 0)
			return true;
	}
	return false;
}

/*
 * A miss's answer decides whether its URL is passed next time (pass.h):
 * marked when it could not be stored for what it says itself, not for
 * what the request asked (no-store, credentials) nor for a server error
 * (a crowd on a failing origin must keep collapsing: busy.c); cleared
 * when it could be.
 */
static void
note_pass(const struct fetch *f, bool cacheable)
{
	const struct txn *t = f->t;
	struct worker *s = t->w;

	if (f->kind != FETCH_MISS || !t->is_get)
		return;
	if (cacheable)
		pass_clear(s->node->pass, t->url.norm, t->url.len);
	else if (f->resp.status < 500 && !t->reqcc.no_store &&
	    http_field_find(&t->req, "authorization") == NULL)
		pass_note(s->node->pass, t->url.norm, t->url.len, mono_ms());
}

/*
 * Whether f's answer (clen bytes; -1 unknown) is kept, and the copy for
 * the store started when it is: in memory within inflight_mem, or
 * streamed to the disk when memory may not hold it. Notes the pass table
 * and the owner's copy decision on the way.
 */
static bool
keep_for_store(struct fetch *f, const struct cc *respcc, int64_t clen)
{
	struct txn *t = f->t;
	struct worker *s = t->w;
	const struct http_head *resp = &f->resp;
	const char *why;
	bool proxy_only = f->peer != NULL && f->peer_as.proxy_only;
	bool cacheable = cachectl_storable(&t->req, &t->reqcc, resp, respcc,
	    refresh_find(&s->node->conf.refresh, t->url.norm), &why) &&
	    (clen < 0 || (uint64_t)clen <= s->node->conf.max_object_size);

	note_pass(f, cacheable);
	bool storable = f->kind != FETCH_FORWARD && t->is_get && !proxy_only &&
	    cacheable;
	/* a copy from a peer of an object another node owns: admission
	 * decided when the fetch started */
	if (storable && f->peer != NULL && f->owner != NULL) {
		storable = f->keep_copy;
		if (storable)
			METRIC_INC(s->m.owner_copy_kept);
		else
			METRIC_INC(s->m.owner_copy_passed);
	}
	if (storable && clen > 0 &&
	    (uint64_t)clen > s->node->conf.max_memory_object_size) {
		start_stream(f, (uint64_t)clen);
	} else if (storable && budget_take(s->node->budget,
	    clen > 0 ? (size_t)clen : 0)) {
		/* a known length is reserved exactly: the copy never grows */
		f->reserved = clen > 0 ? (size_t)clen : 0;
		f->body = store_body_new(clen > 0 ? (size_t)clen : 0);
		if (!keep_head(f) || f->body == NULL)
			fetch_drop_copy(f);
	}
	return storable;
}

/* What the answer counts as: a remote hit when a sibling answered, or
 * the key's owner from its cache; else a miss. */
static void
note_result(struct fetch *f)
{
	struct txn *t = f->t;
	bool owner_hit = false;

	if (f->to == UPSTREAM_OWNER) {
		owner_hit = owner_had_it(f);
		if (owner_hit)
			METRIC_INC(t->w->m.owner_hit);
		else
			METRIC_INC(t->w->m.owner_miss);
	}
	t->result = f->to == UPSTREAM_SIBLING || owner_hit ?
	    RESULT_REMOTE_HIT : RESULT_MISS;
}

/*
 * The requests waiting for f's URL (busy.c): shared the answer as it
 * streams when it can be, else let go (a server error is their answer
 * too). true when shared: the waiters, f's own client among them, are
 * answered from it.
 */
static bool
share_or_let_go(struct fetch *f, int64_t clen)
{
	const struct http_head *resp = &f->resp;

	if (f->busy != NULL && shareable(f) && share(f, clen))
		return true;
	/* not shared: whoever waits fetches alone, unless it is a server
	 * error, which is their answer too */
	if (f->busy != NULL && stale_error_status(resp->status)) {
		char cause[512];
		snprintf(cause, sizeof(cause), "origin answered %d (%s)",
		    resp->status, f->t->url.norm);
		busy_fail(&f->busy, resp->status, false, cause);
	}
	busy_close(&f->busy, BUSY_UNSHARED, NULL);
	return false;
}

/* f's client's head (a 206 or 416 for its Range), through its writer. */
static void
client_head(struct fetch *f, int64_t clen)
{
	struct txn *t = f->t;
	const struct http_head *resp = &f->resp;
	bool no_body = t->is_head || resp->status == 204 ||
	    resp->status == 304;

	if (fetched_range(f, clen) == RANGE_UNSATISFIABLE) {
		/* the rest of the body is the store's alone */
		f->client_done = true;
		deliver_unsatisfiable(t, (uint64_t)clen, "MISS");
		return;
	}
	t->status = t->range != NULL ? 206 : resp->status;
	struct evbuffer *fb = t->range != NULL ?
	    writer_head_start(t, 206, NULL, 0) :
	    writer_head_start(t, resp->status, resp->reason, resp->reason_len);
	stored_fields(resp, fb, true, t->range != NULL && t->range->n > 1 ?
	    "content-type" : NULL);
	if (t->range != NULL) {
		range_fields(t->range, fb);
		clen = (int64_t)t->range->total;
	}
	writer_head(t, &(struct writer_head){.age = -1, .via = true,
	    .x_cache = "MISS", .length = resp->status == 204 ? -1 : clen,
	    .body = !no_body});
}

/* The final head has come: the storage decision, the waiters, then the
 * client's head. false aborts the fetch. */
static bool
final_head(struct fetch *f)
{
	struct txn *t = f->t;
	const struct http_head *resp = &f->resp;
	struct cc respcc;
	const struct http_field *ct = http_field_find(resp, "content-type");

	if (ct != NULL)
		deliver_note_ctype(t, ct->value, ct->vlen);
	stored_invalidate(t, &f->resp);
	if (f->kind == FETCH_REVALIDATE && resp->status == 304) {
		f->not_modified = true;
		return true; /* answered from the store when done */
	}
	cc_parse(resp, false, &respcc);
	bool has_te = http_field_find(resp, "transfer-encoding") != NULL;
	int64_t clen = has_te ? -1 : resp->content_length;
	bool storable = keep_for_store(f, &respcc, clen);
	note_result(f);
	if (share_or_let_go(f, clen))
		return true;
	if (t->c == NULL) {
		/* behind a stale answer, nobody reads it: what memory cannot
		 * hold is dropped; one that may not be stored makes the
		 * stale copy wrong, unless it is a server's error */
		if (!storable && !stale_error_status(resp->status))
			tiers_invalidate(t->w->node->tiers, t->url.norm,
			    t->url.len);
		f->proto_error = "not kept (a revalidation behind a stale "
		    "answer)";
		return false;
	}
	client_head(f, clen);
	return true;
}

size_t
fetch_on_header(char *buf, size_t size, size_t n, void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);
	size_t len = size * n;
	const char *why;

	if (f->head_done)
		return len; /* trailers: not forwarded */
	fetch_heard(f);
	/* lenient with origins on one point: a bare LF ends a line too */
	if (len >= 1 && buf[len - 1] == '\n' && (len < 2 || buf[len - 2] !=
	    '\r')) {
		evbuffer_add(f->headbuf, buf, len - 1);
		evbuffer_add(f->headbuf, "\r\n", 2);
	} else {
		evbuffer_add(f->headbuf, buf, len);
	}
	if (evbuffer_get_length(f->headbuf) > RESPONSE_HEAD_MAX) {
		f->proto_error = "response head too large";
		return 0;
	}
	bool blank = (len == 2 && buf[0] == '\r' && buf[1] == '\n') ||
	    (len == 1 && buf[0] == '\n');
	if (!blank)
		return len; /* not the end of the head yet */

	size_t hlen = evbuffer_get_length(f->headbuf);
	const char *p = (const char *)evbuffer_pullup(f->headbuf, -1);
	struct http_limits lim = {RESPONSE_HEAD_MAX, RESPONSE_HEAD_MAX, 1000};
	http_head_clear(&f->resp);
	int rc = http_parse_response(p, hlen, &lim, &f->resp, &why);
	evbuffer_drain(f->headbuf, hlen);
	if (rc < 0) {
		f->proto_error = why;
		return 0;
	}
	if (f->resp.status < 200) {
		if (f->peer == NULL && f->t->c != NULL)
			forward_interim(f);
		return len;
	}
	if (f->peer != NULL && (f->resp.status >= 500 ||
	    f->resp.status == 403 || f->resp.status == 407)) {
		/* nothing has reached the client: try the next source; a
		 * 403 or 407 says the peer does not take us as a client (it
		 * dropped us from its peers, or its allow list): the answer
		 * is about us, not the object */
		f->peer_refused = true;
		return 0;
	}
	if (stale_error_status(f->resp.status) && stale_on_error(f->t, false)) {
		/* stale-if-error: the stale copy answers instead */
		f->stale_instead = true;
		return 0;
	}
	/* curl decodes chunked and nothing else: anything else fails after
	 * the head, so it is refused before a byte of it is written */
	bool te, chunked;
	if (http_transfer_coding(&f->resp, &te, &chunked, &why) < 0) {
		f->proto_error = "Transfer-Encoding that this proxy cannot "
		    "decode";
		return 0;
	}
	if (f->t->range_whole && f->resp.status == 200 && (te ||
	    f->resp.content_length < 0 || (uint64_t)f->resp.content_length >
	    f->w->node->conf.range_fetch_limit)) {
		/* too large (or of unknown size) to wait for whole: the
		 * range goes to the source instead (fetch.c) */
		f->range_too_large = true;
		return 0;
	}
	f->head_done = true;
	char *ip = NULL;
	if (f->peer != NULL) {
		/* Squid's codes for a sibling chosen by ICP, by its digest
		 * (a summary is one), and for a parent chosen by hashing */
		f->t->hier = f->to == UPSTREAM_OWNER ? SQ_CARP : f->by_icp ?
		    SQ_SIBLING_HIT : SQ_CD_SIBLING_HIT;
		snprintf(f->t->hier_host, sizeof(f->t->hier_host), "%s",
		    f->peer_as.name);
	} else {
		f->t->hier = SQ_HIER_DIRECT;
		if (curl_easy_getinfo(f->easy, CURLINFO_PRIMARY_IP, &ip) ==
		    CURLE_OK && ip != NULL)
			snprintf(f->t->hier_host, sizeof(f->t->hier_host),
			    "%s", ip);
	}
	return final_head(f) ? len : 0;
}

static bool alone_for_the_store(struct fetch *f);

/* Waits for the disk (or for a tee's slowest reader): curl keeps the
 * chunk, and the silence timer rests. */
static size_t
pause_recv(struct fetch *f)
{
	f->recv_paused = true;
	evtimer_del(f->timer);
	return CURL_WRITEFUNC_PAUSE;
}

/* A shared body on its way to the disk: its readers read the file as it
 * goes down (stream_progress tells them); those waiting at its end have
 * the partial piece handed to the disk at once. */
static size_t
shared_to_disk(struct fetch *f, const char *data, size_t len)
{
	if (disk_stream_full(f->stream))
		return pause_recv(f);
	fetch_heard(f);
	/* more than Content-Length said is not the object */
	if (f->streamed + len > (uint64_t)f->src.length ||
	    disk_stream_write(f->stream, data, len) < 0)
		return 0;
	f->streamed += len;
	if (busy_waiting(f->busy) && disk_stream_flush(f->stream, false) < 0)
		return 0;
	return len;
}

/* What a tee's window holds past its slowest reader. */
static size_t
tee_held(struct fetch *f)
{
	return f->body->len - (size_t)(busy_slowest(f->busy) - f->src.base);
}

/* A tee's news on the loop: with nobody reading, the transfer stops
 * (the body is not kept: reading on would fetch it for no one); with
 * room for curl's chunk again, the fetch reads on (the chunk is
 * delivered at once). */
static void
tee_wake(evutil_socket_t fd, short what, void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);

	(void)fd;
	(void)what;
	if (f->tee_ending) {
		/* complete: it ends once other workers' readers are done */
		if (!busy_read_elsewhere(f->busy)) {
			busy_close(&f->busy, BUSY_DONE, NULL);
			fetch_free(&f);
		}
		return;
	}
	if (!busy_read(f->busy)) {
		fetch_free(&f);
		return;
	}
	if (f->recv_paused && tee_held(f) + FETCH_CHUNK <= f->tee_room)
		fetch_output_drained(f);
}

/* A tee's readers took more, or one left (busy_on_taken): wherever that
 * happens, the fetch hears of it on the loop. */
static void
tee_taken(void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);

	event_active(f->wake, 0, 0);
}

/* The copy of unknown length may not grow to need: not stored after
 * all, it becomes a tee (busy.c), a window of what it holds now or
 * TEE_ROOM, whichever is more. false when even that cannot be had. */
static bool
become_tee(struct fetch *f)
{
	f->tee = true;
	f->tee_room = f->body->cap > TEE_ROOM ? f->body->cap : TEE_ROOM;
	METRIC_INC(f->w->m.collapsed_tee);
	if (!reserve_copy_keep(f, f->tee_room) || (f->wake = event_new(
	    f->w->base, -1, 0, tee_wake, f)) == NULL)
		return false;
	busy_on_taken(f->busy, tee_taken, f);
	return true;
}

/* A tee: what every reader has taken leaves the window, and with its
 * first bytes gone no newcomer may join it (busy_unlist). */
static void
tee_trim(struct fetch *f)
{
	struct store_body *b = f->body;
	uint64_t drop = busy_slowest(f->busy) - f->src.base;

	if (drop == 0)
		return;
	if (f->src.base == 0)
		busy_unlist(f->busy);
	memmove(b->data, b->data + drop, b->len - (size_t)drop);
	b->len -= (size_t)drop;
	f->src.base += drop;
}

/* A shared body in memory: the copy grows (within what was reserved for
 * a known length; as inflight_mem allows for an unknown one), or, a
 * tee, slides past what every reader has taken. */
static size_t
shared_in_memory(struct fetch *f, const char *data, size_t len)
{
	struct store_body *b = f->body;
	size_t need = b->len + len;

	if (!f->tee && f->src.length >= 0 && need > b->cap)
		return 0;   /* more than Content-Length said: not the object */
	if (!f->tee && f->src.length < 0 && (need >
	    f->w->node->conf.max_memory_object_size || (need > b->cap &&
	    !reserve_copy_keep(f, need))) && !become_tee(f))
		return 0;
	if (f->tee && !busy_read(f->busy)) {
		/* nobody reads it: tee_wake ends the transfer */
		event_active(f->wake, 0, 0);
		return pause_recv(f);
	}
	/* a window slides, a copy grows past its room: readers on other
	 * workers stay off bytes that move */
	bool moves = f->tee || b->len + len > b->cap;
	if (moves)
		busy_moving(f->busy);
	if (f->tee)
		tee_trim(f);
	if (f->tee && b->len + len > f->tee_room) {
		busy_moved(f->busy);
		return pause_recv(f);
	}
	fetch_heard(f);
	int grown = store_body_append(&f->body, data, len);
	f->src.copy = f->body;
	if (moves)
		busy_moved(f->busy);
	if (grown < 0)
		return 0;
	f->src.have += len;
	busy_body(f->busy);
	return len;
}

size_t
fetch_on_body(char *data, size_t size, size_t n, void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);
	struct txn *t = f->t;
	size_t len = size * n;

	if (!f->head_done || f->not_modified)
		return len;
	if (f->shared)
		return f->stream != NULL ? shared_to_disk(f, data, len) :
		    shared_in_memory(f, data, len);
	/* no client once it has its answer (alone_for_the_store) */
	bool out = t->c != NULL;
	if ((out && writer_queued(t) > FETCH_OUT_HIGH) ||
	    (f->stream != NULL && disk_stream_full(f->stream))) {
		f->recv_paused = true;
		evtimer_del(f->timer);
		return CURL_WRITEFUNC_PAUSE;
	}
	fetch_heard(f);
	if (out && t->range != NULL) {
		struct evbuffer *part = evbuffer_new();
		if (part != NULL) {
			range_copy(t->range, &f->range_at, data, f->received,
			    len, UINT64_MAX, part);
			writer_data_buffer(t, part);
			evbuffer_free(part);
		}
	} else if (out && !f->client_done) {
		writer_data(t, data, len);
	}
	f->received += len;
	if (f->stream != NULL) {
		/* more than Content-Length said is not the object */
		if (f->streamed + len > (uint64_t)f->resp.content_length ||
		    disk_stream_write(f->stream, data, len) < 0)
			fetch_drop_copy(f);
		else
			f->streamed += len;
	}
	if (f->body != NULL) {
		size_t need = f->body->len + len;
		if (need > f->w->node->conf.max_object_size ||
		    (need > f->body->cap && !reserve_copy(f, need)) ||
		    store_body_append(&f->body, data, len) < 0)
			fetch_drop_copy(f);
	}
	bool answered = f->client_done || (t->range != NULL &&
	    f->range_at == t->range->total);
	if (out && answered && f->resp.content_length >= 0 &&
	    f->received < (uint64_t)f->resp.content_length)
		return alone_for_the_store(f) ? len : 0;
	return len;
}

/*
 * The client has its whole answer (its ranges, or a 416) before the body
 * is all in: the fetch goes on for the store under a transaction with no
 * client (stale.c's), and the client is done. false when there is
 * nothing to keep, or no memory for it: the transfer then stops, and
 * fetch_finish_error finishes the client.
 */
static bool
alone_for_the_store(struct fetch *f)
{
	struct txn *t = f->t;
	struct txn *b = f->body != NULL || f->stream != NULL ?
	    txn_clientless(t) : NULL;

	f->client_done = true;
	if (b == NULL)
		return false;
	if (t->stale != NULL)
		stale_keep(b, store_obj_ref(t->stale));
	b->code = t->code;
	b->hier = t->hier;
	memcpy(b->hier_host, t->hier_host, sizeof(b->hier_host));
	memcpy(b->ctype, t->ctype, sizeof(b->ctype));
	b->fetch = f;
	txn_hold(b, &fetch_part);
	t->fetch = NULL;
	f->t = b;
	client_txn_done(t->c);
	return true;
}
