/*
 * See txn.h. A txn's parts are a small array, not a list: a txn holds a
 * handful (a fetch, a disk send, a seat...), and a hold that finds its
 * part there already is a no-op, so a feature may hold each time it
 * attaches its state without counting.
 */
#include "txn.h"

#include <stdlib.h>
#include <string.h>

#include <event2/util.h>

#include "client.h"
#include "sc_assert.h"

void
txn_account(struct txn *t)
{
	struct worker *s = t->w;
	struct accesslog_entry e = {
		.start = t->start, .client = t->c != NULL ? t->c->addr : "-",
		.code = t->code, .cut = t->cut,
		.status = t->status, .bytes = t->bytes_out,
		.method = t->req.method ? t->req.method : "NONE",
		.method_len = t->req.method ? (int)t->req.method_len : 4,
		.url = t->url.norm ? t->url.norm : "error:invalid-request",
		.hier = t->hier,
		.hier_host = t->hier_host[0] ? t->hier_host : "-",
		.content_type = t->ctype,
		.content_type_len = (int)strlen(t->ctype),
	};

	if (t->result == RESULT_INTERNAL)
		return;  /* internal pages are not logged */
	if (t->c == NULL) {
		/* a revalidation behind a stale answer: logged, not a
		 * client's request */
	} else if (t->for_peer) {
		if (s->node->peers != NULL)
			peers_asked(s->node->peers);
		if (t->result == RESULT_LOCAL_HIT)
			METRIC_INC(s->m.peer_served_hit);
		else
			METRIC_INC(s->m.peer_served_miss);
	} else {
		switch (t->result) {
		case RESULT_LOCAL_HIT: METRIC_INC(s->m.req_local_hit); break;
		case RESULT_MISS: METRIC_INC(s->m.req_miss); break;
		case RESULT_REMOTE_HIT: METRIC_INC(s->m.req_remote_hit); break;
		case RESULT_ERROR: METRIC_INC(s->m.req_error); break;
		case RESULT_INTERNAL: case RESULT_ADMIN: break;
		}
	}
	evutil_gettimeofday(&e.end, NULL);
	accesslog_write(s->node->log, s->logbuf, &e);
}

struct txn *
txn_new(struct worker *w, struct client *c)
{
	struct txn *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->magic = TXN_MAGIC;
	t->w = w;
	t->c = c;
	t->req.content_length = -1;
	t->code = SQ_NONE_NONE;
	t->hier = SQ_HIER_NONE;
	evutil_gettimeofday(&t->start, NULL);
	return t;
}

/* A clientless t leaves the worker's list. */
static void
forget(struct txn *t)
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
txn_hold(struct txn *t, const struct txn_part *p)
{
	for (unsigned i = 0; i < t->nparts; i++)
		if (t->parts[i] == p)
			return;
	/* the array is sized for every feature there is: one more is a
	 * bug of the one adding it */
	SC_ASSERT(t->nparts < TXN_PARTS_MAX);
	t->parts[t->nparts++] = p;
}

void
txn_free(struct txn **tp)
{
	struct txn *t = *tp;

	if (t == NULL)
		return;
	SC_ASSERT(t->magic == TXN_MAGIC);
	*tp = NULL;
	if (t->c == NULL)
		forget(t);
	while (t->nparts > 0)
		t->parts[--t->nparts]->drop(t);
	http_head_clear(&t->req);
	url_clear(&t->url);
	t->magic = 0;
	free(t);
}

struct txn *
txn_clientless(const struct txn *t)
{
	struct txn *b = txn_new(t->w, NULL);
	const char *why;

	if (b == NULL)
		return NULL;
	b->is_get = true;
	b->looped = t->looped;
	b->disk_read = true;
	b->result = RESULT_MISS;
	b->code = SQ_TCP_MISS;
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
	return b;
}

void
txn_clientless_end(struct txn *t, int status, enum squid_code code)
{
	SC_ASSERT(t->c == NULL);
	t->status = status;
	t->code = code;
	txn_account(t);
	txn_free(&t);
}

void
txn_clientless_free_all(struct worker *s)
{
	while (s->background != NULL) {
		struct txn *t = s->background;
		txn_free(&t);
	}
}
