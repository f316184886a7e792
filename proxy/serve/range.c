/*
 * Byte ranges: what a Range asks of a 200, and the 206 that answers it.
 *
 * A request's ranges are read only against a whole 200 whose length is
 * known: a stored object, or an answer arriving from the origin with a
 * Content-Length (the cache fetches the whole object for a range request
 * it may keep, fetch.c). A Range that does not parse, in a unit other
 * than bytes, or with an If-Range its validator does not pass, is
 * ignored: the 200 is the answer, as RFC 9110 14.2 allows.
 *
 * The plan sorts the ranges and merges those that overlap or touch. RFC
 * 9110 lets a server coalesce them, and it buys two things: a body
 * arriving from the origin meets its ranges in order, so a 206 streams
 * from a fetch as it comes; and a request of many small overlapping
 * ranges (the 2011 Apache denial of service) costs no more than the
 * object. More than RANGE_MAX ranges left, or a 206 no shorter than the
 * 200: the 200.
 *
 * A 206 of several ranges is multipart/byteranges (RFC 9110 14.6): each
 * part's head (delimiter, Content-Type, Content-Range), its bytes, and a
 * closing delimiter; the plan lays the heads out once in one buffer, so
 * a sender is an offset into the 206's body and range_piece_at tells it
 * what lies there.
 */
#include "range.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <xxhash.h>

#include "bodyfd.h"
#include "cachectl.h"
#include "metrics.h"
#include "store.h"
#include "txn.h"
#include "writer.h"

/* ---- reading a Range ---- */

struct asked {
	bool suffix;            /* "-N": the last N bytes */
	uint64_t first, last;   /* last UINT64_MAX: "N-" */
};

/* Digits as a number, saturating: a position past any length is just
 * past it. */
static bool
number(const char *s, size_t n, uint64_t *v)
{
	*v = 0;
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		*v = *v > (UINT64_MAX - d) / 10 ? UINT64_MAX : *v * 10 + d;
	}
	return true;
}

/* One range-spec; false when it does not parse (the Range is then
 * ignored whole). */
static bool
parse_spec(const char *e, size_t el, struct asked *a)
{
	const char *dash = memchr(e, '-', el);

	if (dash == NULL)
		return false;
	size_t fl = (size_t)(dash - e), ll = el - fl - 1;
	a->suffix = fl == 0;
	if (a->suffix)
		return number(dash + 1, ll, &a->last);
	if (!number(e, fl, &a->first))
		return false;
	if (ll == 0) {
		a->last = UINT64_MAX;
		return true;
	}
	return number(dash + 1, ll, &a->last) && a->first <= a->last;
}

/* Calls each for every range-spec of req's Range; false when there is
 * none, it is not in bytes, it does not parse, or each says stop. */
static bool
each_spec(const struct http_head *req, bool (*each)(void *, const struct
    asked *), void *arg)
{
	const struct http_field *f = http_field_find(req, "range");
	size_t pos, el, specs = 0;
	const char *e;

	if (f == NULL || f->vlen < 6 || strncasecmp(f->value, "bytes=", 6) != 0)
		return false;
	pos = 6;
	while (http_list_next(f->value, f->vlen, &pos, &e, &el)) {
		struct asked a;
		if (!parse_spec(e, el, &a) || !each(arg, &a))
			return false;
		specs++;
	}
	return specs > 0;
}

static bool
count_spec(void *arg, const struct asked *a)
{
	(void)a;
	return ++*(unsigned *)arg <= 4 * RANGE_MAX;
}

bool
range_asked(const struct http_head *req)
{
	unsigned n = 0;

	return http_token_eq(req->method, req->method_len, "GET") &&
	    each_spec(req, count_spec, &n);
}

/* If-Range (RFC 9110 13.1.5): an entity-tag matches the stored one by
 * strong comparison, a date the Last-Modified exactly. */
static bool
if_range_holds(const struct http_head *req, const char *etag, size_t elen,
    time_t last_modified)
{
	const struct http_field *f = http_field_find(req, "if-range");

	if (f == NULL)
		return true;
	if (f->vlen > 0 && (f->value[0] == '"' || (f->vlen > 2 &&
	    f->value[0] == 'W' && f->value[1] == '/')))
		return etag != NULL && f->value[0] == '"' && f->vlen == elen &&
		    elen >= 2 && etag[0] == '"' &&
		    memcmp(f->value, etag, elen) == 0;
	time_t d = http_date_parse(f->value, f->vlen);
	return d >= 0 && last_modified >= 0 && d == last_modified;
}

/* ---- planning ---- */

struct gather {
	uint64_t length;
	struct range_span *spans;
	unsigned n, cap;
};

/* Keeps the satisfiable part of a range-spec (RFC 9110 14.1.2). */
static bool
gather_spec(void *arg, const struct asked *a)
{
	struct gather *g = arg;
	uint64_t from, to;

	if (a->suffix) {
		if (a->last == 0 || g->length == 0)
			return true;
		from = a->last >= g->length ? 0 : g->length - a->last;
		to = g->length - 1;
	} else {
		if (a->first >= g->length)
			return true;
		from = a->first;
		to = a->last >= g->length ? g->length - 1 : a->last;
	}
	if (g->n == g->cap)
		return false; /* checked by range_asked; a bound still */
	g->spans[g->n++] = (struct range_span){from, to - from + 1};
	return true;
}

static int
by_start(const void *a, const void *b)
{
	const struct range_span *x = a, *y = b;

	return x->from < y->from ? -1 : x->from > y->from;
}

/* Sorts and merges spans that overlap or touch; returns how many are
 * left. */
static unsigned
coalesce(struct range_span *s, unsigned n)
{
	unsigned k = 0;

	qsort(s, n, sizeof(*s), by_start);
	for (unsigned i = 1; i < n; i++) {
		uint64_t end = s[k].from + s[k].len;
		if (s[i].from <= end) {
			uint64_t e2 = s[i].from + s[i].len;
			if (e2 > end)
				s[k].len = e2 - s[k].from;
		} else {
			s[++k] = s[i];
		}
	}
	return n == 0 ? 0 : k + 1;
}

/* Lays out the part heads and the closing delimiter; false on ENOMEM. */
static bool
frame(struct range_plan *p, const char *ctype, size_t ctl)
{
	struct evbuffer *b = evbuffer_new();
	bool ok = b != NULL;

	for (unsigned i = 0; ok && i < p->n; i++) {
		const struct range_span *s = &p->span[i];
		p->frame_at[i] = (uint32_t)evbuffer_get_length(b);
		/* the CRLF before a delimiter belongs to it (RFC 2046) */
		ok = evbuffer_add_printf(b, "%s--%s\r\n", i > 0 ? "\r\n" : "",
		    p->boundary) >= 0;
		if (ok && ctype != NULL)
			ok = evbuffer_add_printf(b, "Content-Type: %.*s\r\n",
			    (int)ctl, ctype) >= 0;
		ok = ok && evbuffer_add_printf(b, "Content-Range: bytes "
		    "%llu-%llu/%llu\r\n\r\n", (unsigned long long)s->from,
		    (unsigned long long)(s->from + s->len - 1),
		    (unsigned long long)p->length) >= 0;
	}
	if (ok) {
		p->frame_at[p->n] = (uint32_t)evbuffer_get_length(b);
		ok = evbuffer_add_printf(b, "\r\n--%s--\r\n", p->boundary) >= 0;
	}
	if (ok) {
		size_t len = evbuffer_get_length(b);
		p->frame_at[p->n + 1] = (uint32_t)len;
		p->frame = malloc(len);
		ok = p->frame != NULL;
		if (ok)
			evbuffer_remove(b, p->frame, len);
	}
	if (b != NULL)
		evbuffer_free(b);
	return ok;
}

enum range_verdict
range_plan(const struct http_head *req, uint64_t length, const char *etag,
    size_t elen, time_t last_modified, const char *ctype, size_t ctl,
    struct range_plan **plan)
{
	struct range_span spans[4 * RANGE_MAX];
	struct gather g = {length, spans, 0, 4 * RANGE_MAX};

	*plan = NULL;
	if (!range_asked(req) || !if_range_holds(req, etag, elen,
	    last_modified) || !each_spec(req, gather_spec, &g))
		return RANGE_WHOLE;
	if (g.n == 0)
		return RANGE_UNSATISFIABLE;
	unsigned n = coalesce(spans, g.n);
	uint64_t sum = 0;
	for (unsigned i = 0; i < n; i++)
		sum += spans[i].len;
	if (n > RANGE_MAX || sum == length)
		return RANGE_WHOLE;
	struct range_plan *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return RANGE_WHOLE;
	p->length = length;
	p->n = n;
	memcpy(p->span, spans, n * sizeof(*spans));
	p->total = sum;
	if (n > 1) {
		/* not in any body by chance: a hash of what it frames */
		snprintf(p->boundary, sizeof(p->boundary), "sumcache-%016llx",
		    (unsigned long long)XXH3_64bits_withSeed(spans,
		    n * sizeof(*spans), length));
		if (!frame(p, ctype, ctl)) {
			range_plan_free(&p);
			return RANGE_WHOLE;
		}
		p->total += p->frame_at[n + 1];
	}
	*plan = p;
	return RANGE_PARTIAL;
}

enum range_verdict
range_count(struct metrics *m, enum range_verdict v)
{
	if (v == RANGE_PARTIAL)
		METRIC_INC(m->range_partial);
	else if (v == RANGE_UNSATISFIABLE)
		METRIC_INC(m->range_unsatisfiable);
	return v;
}

void
range_plan_free(struct range_plan **pp)
{
	struct range_plan *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	free(p->frame);
	free(p);
}

static void
drop_range(struct txn *t)
{
	range_plan_free(&t->range);
}

const struct txn_part range_part = {"range", drop_range};

void
range_fields(const struct range_plan *p, struct evbuffer *out)
{
	if (p->n > 1) {
		writer_fieldf(out, "Content-Type", "multipart/byteranges; "
		    "boundary=%s", p->boundary);
		return;
	}
	writer_fieldf(out, "Content-Range", "bytes %llu-%llu/%llu",
	    (unsigned long long)p->span[0].from,
	    (unsigned long long)(p->span[0].from + p->span[0].len - 1),
	    (unsigned long long)p->length);
}

void
range_unsatisfiable_field(uint64_t length, struct evbuffer *out)
{
	writer_fieldf(out, "Content-Range", "bytes */%llu",
	    (unsigned long long)length);
}

/* ---- sending ---- */

void
range_piece_at(const struct range_plan *p, uint64_t at,
    struct range_piece *pc, uint64_t *into)
{
	if (p->n == 1) {
		*pc = (struct range_piece){NULL, p->span[0].from,
		    p->span[0].len};
		*into = at;
		return;
	}
	/* part i: its head, then its bytes; then the closing */
	for (unsigned i = 0; i < p->n; i++) {
		uint64_t hl = p->frame_at[i + 1] - p->frame_at[i];
		if (at < hl) {
			*pc = (struct range_piece){p->frame + p->frame_at[i], 0,
			    hl};
			*into = at;
			return;
		}
		at -= hl;
		if (at < p->span[i].len) {
			*pc = (struct range_piece){NULL, p->span[i].from,
			    p->span[i].len};
			*into = at;
			return;
		}
		at -= p->span[i].len;
	}
	*pc = (struct range_piece){p->frame + p->frame_at[p->n], 0,
	    p->frame_at[p->n + 1] - p->frame_at[p->n]};
	*into = at;
}

uint64_t
range_copy(const struct range_plan *p, uint64_t *at, const char *src,
    uint64_t src_off, uint64_t len, uint64_t max, struct evbuffer *out)
{
	uint64_t added = 0;

	while (*at < p->total && added < max) {
		struct range_piece pc;
		uint64_t into, n;
		range_piece_at(p, *at, &pc, &into);
		n = pc.len - into;
		if (n > max - added)
			n = max - added;
		if (pc.text != NULL) {
			evbuffer_add(out, pc.text + into, (size_t)n);
		} else {
			uint64_t from = pc.from + into;
			if (from < src_off || from >= src_off + len)
				break; /* not arrived yet (or gone) */
			if (n > src_off + len - from)
				n = src_off + len - from;
			evbuffer_add(out, src + (from - src_off), (size_t)n);
		}
		*at += n;
		added += n;
	}
	return added;
}

uint64_t
range_send(struct txn *t, uint64_t at, struct store_body *b,
    const struct disk_sent *claim)
{
	const struct range_plan *p = t->range;
	uint64_t added = 0;

	while (at < p->total) {
		struct range_piece pc;
		uint64_t into;
		range_piece_at(p, at, &pc, &into);
		uint64_t n = pc.len - into;
		if (pc.text != NULL)
			writer_data(t, pc.text + into, (size_t)n);
		else if (!writer_body(t, b, pc.from + into, n,
		    b->ext != NULL && b->ext->on_disk, claim))
			break;  /* copied: what the file no longer holds stops it */
		at += n;
		added += n;
	}
	return added;
}
