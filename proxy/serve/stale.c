/*
 * Stale copies served on purpose (RFC 5861).
 *
 * stale-while-revalidate: a copy stale by no more than the window is
 * served at once, and a revalidation runs behind it. That revalidation
 * is a transaction of its own with no client (t->c == NULL): the request
 * that found the stale copy, parsed again, so that the fetch asks for the
 * same variant. It is a busy object's fetch like any other (busy.c): one
 * at a time per URL while it runs, joined by whoever misses meanwhile;
 * what it gets is stored (a 304 refreshes the copy; a 200 that memory
 * can hold replaces it); what it cannot keep (a body too large for
 * memory) it drops. It writes an access-log line as a client's would.
 * The same kind of transaction carries on a range request's fetch of
 * the whole object once the client has its bytes (fetchrecv.c).
 *
 * stale-if-error: when the origin answers 500, 502, 503 or 504, or cannot
 * be reached, a stale copy within the window answers instead. Neither
 * ever serves past must-revalidate, proxy-revalidate, s-maxage or
 * no-cache (cachectl.c has the rules).
 */
#include "stale.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/util.h>

#include "busy.h"
#include "fetch.h"
#include "request.h"

void
stale_entry(const struct store_obj *o, struct cachectl_entry *e)
{
	*e = (struct cachectl_entry){
		.lifetime = o->meta.lifetime,
		.age = store_meta_age(&o->meta, time(NULL)),
		.must_revalidate = o->meta.must_revalidate,
		.no_cache = o->meta.no_cache,
		.swr = CC_ABSENT,
		.sie = CC_ABSENT,
	};
	if (e->age < e->lifetime)
		return;
	struct cc cc;
	size_t pos = 0, nl, vl;
	const char *n, *v;
	cc_init(&cc);
	while (store_head_next(o, &pos, &n, &nl, &v, &vl))
		if (http_token_eq(n, nl, "cache-control"))
			cc_parse_value(&cc, v, vl, false);
	cachectl_entry_stale_rules(e, &cc);
}

bool
stale_error_status(int status)
{
	return status == 500 || status == 502 || status == 503 ||
	    status == 504;
}

bool
stale_on_error(const struct txn *t, bool disconnected)
{
	struct cachectl_entry e;

	if (t->stale == NULL)
		return false;
	stale_entry(t->stale, &e);
	return cachectl_stale_on_error(&e, &t->reqcc, disconnected);
}

/* A transaction with no client, for t's URL and request, o its stale
 * copy (or NULL). NULL on ENOMEM or when the request does not parse
 * again (it did once). */
static struct txn *
background_txn(const struct txn *t, struct store_obj *o)
{
	struct txn *b = calloc(1, sizeof(*b));
	const char *why;

	if (b == NULL)
		return NULL;
	b->magic = TXN_MAGIC;
	b->w = t->w;
	b->req.content_length = -1;
	b->hier = SQ_HIER_NONE;
	b->is_get = true;
	b->looped = t->looped;
	b->disk_read = true;
	b->result = RESULT_MISS;
	evutil_gettimeofday(&b->start, NULL);
	/* on the list before anything can fail: txn_free takes it off */
	b->bg_next = t->w->background;
	if (b->bg_next != NULL)
		b->bg_next->bg_prev = b;
	t->w->background = b;
	if (http_parse_request(t->req.buf, t->req.len, &t->w->node->limits,
	    &b->req, &why) < 0 || url_parse_absolute(b->req.target,
	    b->req.target_len, &b->url, &why) < 0) {
		txn_free(&b);
		return NULL;
	}
	cc_parse(&b->req, true, &b->reqcc);
	b->stale = o != NULL ? store_obj_ref(o) : NULL;
	return b;
}

struct txn *
stale_background_txn(const struct txn *t)
{
	return background_txn(t, t->stale);
}

void
stale_background_end(struct txn *t, int status, enum squid_code code)
{
	t->status = status;
	t->code = code;
	txn_account(t);
	txn_free(&t);
}

void
stale_forget(struct txn *t)
{
	if (t->bg_prev != NULL)
		t->bg_prev->bg_next = t->bg_next;
	else if (t->w->background == t)
		t->w->background = t->bg_next;
	if (t->bg_next != NULL)
		t->bg_next->bg_prev = t->bg_prev;
	t->bg_prev = t->bg_next = NULL;
}

void
stale_free_all(struct worker *s)
{
	while (s->background != NULL) {
		struct txn *t = s->background;
		txn_free(&t);
	}
}

void
stale_refresh_behind(const struct txn *t, struct store_obj *o)
{
	struct worker *s = t->w;
	const char *v;
	size_t vl;

	if (busy_running(s, t->url.norm, t->url.len))
		return;
	struct txn *b = background_txn(t, o);
	if (b == NULL)
		return;
	bool validator = store_head_find(o, "etag", &v, &vl) ||
	    store_head_find(o, "last-modified", &v, &vl);
	b->code = validator ? SQ_TCP_REFRESH_MODIFIED : SQ_TCP_MISS;
	if (fetch_start(b, validator ? FETCH_REVALIDATE : FETCH_MISS) < 0)
		txn_free(&b);
}
