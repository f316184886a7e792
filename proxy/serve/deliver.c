/*
 * Writing answers to the client: a short text or error, a stored object's
 * head (304, 206 or 416 as the request's conditionals and Range decide)
 * and its body from memory, a memfd or the disk. What to answer is
 * request.c's; how it goes on the wire is here, and every path that
 * answers from the cache (hit, collapsed, stale, disk) writes through it.
 *
 * Hits are written with the body as a zero-copy reference: the client's
 * output buffer points into the stored body and holds a reference on it.
 */
#include "deliver.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "bodyfd.h"
#include "cachectl.h"
#include "client.h"
#include "disksend.h"
#include "range.h"
#include "tiers.h"
#include "txn.h"
#include "writer.h"

/* A short text answer, with an Allow field when allow is not NULL. */
static void
text_reply(struct txn *t, int status, enum squid_code code,
    enum txn_result result, const char *allow, const char *text, bool close)
{
	size_t n = strlen(text);

	if (close)
		t->keep_alive = false;
	t->status = status;
	t->code = code;
	t->result = result;
	snprintf(t->ctype, sizeof(t->ctype), "text/plain");
	struct evbuffer *fb = writer_head_start(t, status, NULL, 0);
	writer_field(fb, "Content-Type", 12, "text/plain", 10);
	writer_field(fb, "Cache-Control", 13, "no-store", 8);
	if (allow != NULL)
		writer_field(fb, "Allow", 5, allow, strlen(allow));
	/* a PURGE's answer is the node's own, no cache's doing */
	writer_head(t, &(struct writer_head){.age = -1, .via = true,
	    .length = (int64_t)n, .body = !t->is_head,
	    .internal = result == RESULT_ADMIN});
	if (!t->is_head)
		writer_data(t, text, n);
	client_txn_done(t->c);
}

void
deliver_text(struct txn *t, int status, enum squid_code code,
    enum txn_result result, const char *text, bool close)
{
	text_reply(t, status, code, result, NULL, text, close);
}

void
deliver_error(struct txn *t, int status, enum squid_code code,
    const char *cause,
    bool close)
{
	char body[512];

	snprintf(body, sizeof(body), "sumcache: %d %s: %s\n", status,
	    http_reason_phrase(status), cause);
	deliver_text(t, status, code, RESULT_ERROR, body, close);
}

void
deliver_not_allowed(struct txn *t, const char *allow, const char *cause)
{
	char body[512];

	snprintf(body, sizeof(body), "sumcache: 405 %s: %s\n",
	    http_reason_phrase(405), cause);
	text_reply(t, 405, SQ_TCP_DENIED, RESULT_ERROR, allow, body, false);
}

static bool
client_not_modified(const struct txn *t, const struct store_obj *o)
{
	const char *etag = NULL, *lmv;
	size_t elen = 0, lml;
	time_t lm = -1;

	if (http_field_find(&t->req, "if-none-match") == NULL &&
	    http_field_find(&t->req, "if-modified-since") == NULL)
		return false;
	store_head_find(o, "etag", &etag, &elen);
	if (store_head_find(o, "last-modified", &lmv, &lml))
		lm = http_date_parse(lmv, lml);
	return cachectl_not_modified(&t->req, etag, elen, lm);
}

/* o's stored fields but those called name. */
static void
object_fields_except(const struct store_obj *o, const char *name,
    struct evbuffer *out)
{
	const char *n, *v;
	size_t pos = 0, nl, vl;

	while (store_head_next(o, &pos, &n, &nl, &v, &vl))
		if (!http_token_eq(n, nl, name))
			writer_field(out, n, nl, v, vl);
}

/*
 * What t's Range asks of o, a 200 of length bytes: t->range is set for a
 * 206. A body on disk goes out through the disk's sender (disksend.c),
 * which sends one part; several ranges of it are copied (range_send),
 * up to DISKSEND_COPY_WHOLE bytes in all, and beyond that get the whole
 * (RFC 9110 14.2 lets a server ignore Range).
 */
static enum range_verdict
object_range(struct txn *t, const struct store_obj *o, uint64_t length)
{
	const char *etag = NULL, *lmv, *ct = NULL;
	size_t elen = 0, lml, ctl = 0;
	time_t lm = -1;

	if (!t->is_get || http_field_find(&t->req, "range") == NULL)
		return RANGE_WHOLE;
	store_head_find(o, "etag", &etag, &elen);
	if (store_head_find(o, "last-modified", &lmv, &lml))
		lm = http_date_parse(lmv, lml);
	store_head_find(o, "content-type", &ct, &ctl);
	txn_hold(t, &range_part);
	enum range_verdict v = range_plan(&t->req, length, etag, elen, lm, ct,
	    ctl, &t->range);
	if (v == RANGE_PARTIAL && t->range->n > 1 &&
	    disksend_wanted(o->body) && t->range->total > DISKSEND_COPY_WHOLE) {
		range_plan_free(&t->range);
		v = RANGE_WHOLE;
	}
	return range_count(&t->w->m, v);
}

void
deliver_unsatisfiable(struct txn *t, uint64_t length, const char *x_cache)
{
	t->status = 416;
	range_unsatisfiable_field(length, writer_head_start(t, 416, NULL, 0));
	writer_head(t, &(struct writer_head){.age = -1, .via = true,
	    .x_cache = x_cache, .length = 0});
}

void
deliver_note_ctype(struct txn *t, const char *v, size_t len)
{
	if (len >= sizeof(t->ctype))
		len = sizeof(t->ctype) - 1;
	memcpy(t->ctype, v, len);
	t->ctype[len] = '\0';
}

bool
deliver_head(struct txn *t, const struct store_obj *o,
    enum squid_code code, const char *x_cache, int64_t length)
{
	bool not_modified = o->meta.status == 200 && client_not_modified(t, o);
	int status = not_modified ? 304 : o->meta.status;
	int64_t age = store_meta_age(&o->meta, time(NULL));
	const char *ct;
	size_t ctl;
	enum range_verdict rv = status == 200 && length >= 0 ?
	    object_range(t, o, (uint64_t)length) : RANGE_WHOLE;

	t->code = not_modified && (code == SQ_TCP_MEM_HIT ||
	    code == SQ_TCP_HIT || code == SQ_TCP_CF_HIT) ? SQ_TCP_IMS_HIT :
	    code;
	if (store_head_find(o, "content-type", &ct, &ctl))
		deliver_note_ctype(t, ct, ctl);
	if (rv == RANGE_UNSATISFIABLE) {
		deliver_unsatisfiable(t, (uint64_t)length, x_cache);
		return false;
	}
	if (t->range != NULL)
		status = 206;
	t->status = status;
	struct evbuffer *fb = writer_head_start(t, status, NULL, 0);
	if (t->range != NULL && t->range->n > 1)
		object_fields_except(o, "content-type", fb);
	else
		evbuffer_add(fb, store_obj_head(o), o->head_len);
	if (t->range != NULL) {
		range_fields(t->range, fb);
		length = (int64_t)t->range->total;
	}
	bool body = !t->is_head && status != 304 && status != 204;
	writer_head(t, &(struct writer_head){.age = age, .via = true,
	    .x_cache = x_cache,
	    .length = status != 304 && status != 204 ? length : -1,
	    .body = body});
	return body;
}

void
deliver_object(struct txn *t, struct store_obj *o,
    enum squid_code code)
{
	bool body = deliver_head(t, o, code, "HIT",
	    (int64_t)o->body->len);

	t->result = RESULT_LOCAL_HIT;
	if (t->disk_read)
		METRIC_INC(t->w->m.hit_disk);
	else
		METRIC_INC(t->w->m.hit_memory);
	/* a body on disk goes through its sender, which ends the
	 * transaction */
	struct range_span whole = {0, o->body->len};
	const struct range_span *part = t->range != NULL ? &t->range->span[0] :
	    &whole;
	/* a send from the disk's file that fails has its record checked:
	 * the claim goes with the body to whoever sends it */
	struct disk_sent claim;
	tiers_sending(t->w->node->tiers, o, &claim);
	if (body && disksend_wanted(o->body) && (t->range == NULL ||
	    t->range->n == 1) && disksend_start(t, o->body, part->from,
	    part->len, false, &claim) == 0)
		return;
	bool all = true;
	if (body && t->range != NULL)
		all = range_send(t, 0, o->body, &claim) == t->range->total;
	else if (body)
		writer_body(t, o->body, 0, o->body->len, false, &claim);
	if (!all) {
		/* several ranges copied off a disk file that ended first */
		if (claim.failed != NULL)
			claim.failed(&claim);
		client_fail(t->c, CUT_ABORTED);
		return;
	}
	client_txn_done(t->c);
}
