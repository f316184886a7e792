/*
 * See h1.h and writer.h.
 */
#include "h1.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "bodyfd.h"
#include "client.h"
#include "http_parse.h"
#include "sc_assert.h"
#include "wire.h"
#include "writer.h"

/*
 * The status line and the tail below are made by hand, not with printf:
 * on a 1 KB hit printf's formatting was 5 % of the node's CPU (perf,
 * issue 37), more than the lookup. Each put has room by its caller's
 * bound: the parts are short and their lengths known.
 */
static void
put_mem(char *buf, size_t cap, size_t *n, const char *s, size_t len)
{
	SC_ASSERT(len < cap - *n);
	memcpy(buf + *n, s, len);
	*n += len;
}

static void
put_str(char *buf, size_t cap, size_t *n, const char *s)
{
	put_mem(buf, cap, n, s, strlen(s));
}

static void
put_num(char *buf, size_t cap, size_t *n, uint64_t v)
{
	char digits[20];
	size_t k = sizeof(digits);

	do
		digits[--k] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	put_mem(buf, cap, n, digits + k, sizeof(digits) - k);
}

void
h1_status(struct evbuffer *out, int status, const char *reason,
    size_t reason_len)
{
	char line[32];
	size_t n = 0;

	if (reason == NULL) {
		reason = http_reason_phrase(status);
		reason_len = strlen(reason);
	}
	/* three digits (http_parse.c takes no other), and any number
	 * would fit */
	put_str(line, sizeof(line), &n, "HTTP/1.1 ");
	put_num(line, sizeof(line), &n, (uint64_t)status);
	put_mem(line, sizeof(line), &n, " ", 1);
	evbuffer_add(out, line, n);
	evbuffer_add(out, reason, reason_len);
	evbuffer_add(out, "\r\n", 2);
}

/* t's Connection field, settling t->keep_alive: no reuse with request
 * body left unread, while draining, or on request. */
static void
connection_field(struct txn *t, struct evbuffer *out)
{
	/* unread request body would be parsed as the next request */
	if (t->body_unread)
		t->keep_alive = false;
	if (t->w->node->draining)
		t->keep_alive = false;
	if (!t->keep_alive)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (t->req.version == 10)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
}

/*
 * Cache-Status (RFC 9211): what this node did, after whatever an upstream
 * cache said (a stored or passed-on field of theirs comes first, as the
 * RFC orders them). The parameters are the access log's code's
 * (accesslog.h), but for a method that is never cached, and a miss a
 * peer answered.
 */
static void
cache_status(const struct worker *s, const struct txn *t, char *buf,
    size_t cap, size_t *n)
{
	const char *params = squid_code_cache_status(t->code);
	const char *more = "";

	if (t->code == SQ_TCP_MISS && !t->is_get && !t->is_head)
		params = "fwd=method";
	else if (t->code == SQ_TCP_MISS && (t->hier == SQ_SIBLING_HIT ||
	    t->hier == SQ_CD_SIBLING_HIT || t->hier == SQ_CARP))
		more = "; detail=peer";
	put_str(buf, cap, n, "Cache-Status: sumcache-");
	put_str(buf, cap, n, s->node->conf.node_name);
	put_mem(buf, cap, n, "; ", 2);
	put_str(buf, cap, n, params);
	put_str(buf, cap, n, more);
	put_mem(buf, cap, n, "\r\n", 2);
}

void
h1_tail(const struct worker *s, struct txn *t, struct evbuffer *out,
    const struct head_tail *tl)
{
	/* the hit path's tail: composed once, added to out once */
	char buf[64 + sizeof(s->node->via) + 2 * WIRE_MAX_SENDER + 192];
	size_t n = 0;

	size_t cap = sizeof(buf);

	if (tl->age >= 0) {
		put_str(buf, cap, &n, "Age: ");
		put_num(buf, cap, &n, (uint64_t)(tl->age < 2147483648LL ?
		    tl->age : 2147483648LL));
		put_mem(buf, cap, &n, "\r\n", 2);
	}
	if (tl->via) {
		put_str(buf, cap, &n, "Via: ");
		put_str(buf, cap, &n, s->node->via);
		put_mem(buf, cap, &n, "\r\n", 2);
	}
	if (tl->x_cache != NULL) {
		put_str(buf, cap, &n, "X-Cache: ");
		put_str(buf, cap, &n, tl->x_cache);
		put_str(buf, cap, &n, " from ");
		put_str(buf, cap, &n, s->node->conf.node_name);
		put_mem(buf, cap, &n, "\r\n", 2);
	}
	if (t != NULL && !tl->internal)
		cache_status(s, t, buf, cap, &n);
	if (tl->length >= 0) {
		put_str(buf, cap, &n, "Content-Length: ");
		put_num(buf, cap, &n, (uint64_t)tl->length);
		put_mem(buf, cap, &n, "\r\n", 2);
	} else if (tl->chunked)
		put_str(buf, cap, &n, "Transfer-Encoding: chunked\r\n");
	evbuffer_add(out, buf, n);
	if (t != NULL && t->c != NULL)
		client_response_begins(t->c, tl->length);
	if (t != NULL)
		connection_field(t, out);
	else
		evbuffer_add(out, "Connection: close\r\n", 19);
	evbuffer_add(out, "\r\n", 2);
}

/* ---- the writer ---- */

bool
writer_field(struct evbuffer *fb, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	/* in parts, not printf: this runs for every field of every miss */
	return evbuffer_add(fb, name, nlen) == 0 &&
	    evbuffer_add(fb, ": ", 2) == 0 &&
	    evbuffer_add(fb, value, vlen) == 0 &&
	    evbuffer_add(fb, "\r\n", 2) == 0;
}

void
writer_fieldf(struct evbuffer *fb, const char *name, const char *fmt, ...)
{
	va_list ap;

	evbuffer_add(fb, name, strlen(name));
	evbuffer_add(fb, ": ", 2);
	va_start(ap, fmt);
	evbuffer_add_vprintf(fb, fmt, ap);
	va_end(ap);
	evbuffer_add(fb, "\r\n", 2);
}

/* The bytes out grew by since mark, counted to t. */
static void
count_since(struct txn *t, uint64_t mark)
{
	client_sent(t, client_out_mark(t->c) - mark);
}

static struct evbuffer *
h1_head_start(struct txn *t, int status, const char *reason,
    size_t reason_len)
{
	struct evbuffer *out = client_out(t->c);

	t->c->head_mark = client_out_mark(t->c);
	h1_status(out, status, reason, reason_len);
	return out;
}

static struct evbuffer *
h1_interim(struct txn *t, int status, const char *reason, size_t reason_len)
{
	/* HTTP/1.0 clients do not understand 1xx */
	if (t->req.version != 11)
		return NULL;
	return h1_head_start(t, status, reason, reason_len);
}

static void
h1_interim_end(struct txn *t)
{
	/* a 1xx head has no framing or Connection of ours */
	evbuffer_add(client_out(t->c), "\r\n", 2);
	count_since(t, t->c->head_mark);
}

static void
h1_head(struct txn *t, const struct writer_head *h)
{
	struct client *c = t->c;
	struct head_tail tl = {.age = h->age, .via = h->via,
	    .x_cache = h->x_cache, .length = h->length,
	    .chunked = h->body && h->length < 0 && t->req.version == 11,
	    .internal = h->internal};

	if (h->body && h->length < 0 && !tl.chunked)
		t->keep_alive = false;  /* the close ends the body */
	c->chunked = tl.chunked;
	h1_tail(t->w, t, client_out(c), &tl);
	count_since(t, c->head_mark);
}

static void
h1_established(struct txn *t)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	evbuffer_add(client_out(t->c), ok, sizeof(ok) - 1);
}

/* A chunk's size line before n bytes of a chunked body. */
static void
chunk_open(struct client *c, struct evbuffer *out, uint64_t n)
{
	if (c->chunked)
		evbuffer_add_printf(out, "%llx\r\n", (unsigned long long)n);
}

static void
chunk_close(struct client *c, struct evbuffer *out)
{
	if (c->chunked)
		evbuffer_add(out, "\r\n", 2);
}

static void
h1_data(struct txn *t, const void *p, size_t n)
{
	struct evbuffer *out = client_out(t->c);
	uint64_t mark = client_out_mark(t->c);

	if (n == 0)   /* an empty chunk would end the body */
		return;
	chunk_open(t->c, out, n);
	evbuffer_add(out, p, n);
	chunk_close(t->c, out);
	count_since(t, mark);
}

static void
h1_data_buffer(struct txn *t, struct evbuffer *b)
{
	struct evbuffer *out = client_out(t->c);
	uint64_t mark = client_out_mark(t->c);
	size_t n = evbuffer_get_length(b);

	if (n == 0)
		return;
	chunk_open(t->c, out, n);
	evbuffer_add_buffer(out, b);
	chunk_close(t->c, out);
	count_since(t, mark);
}

static bool
h1_body(struct txn *t, struct store_body *b, uint64_t from, uint64_t len,
    bool copy, const struct disk_sent *claim)
{
	struct evbuffer *out = client_out(t->c);
	uint64_t mark = client_out_mark(t->c);
	bool ok = true;

	if (len == 0)
		return true;
	if (claim != NULL && claim->failed != NULL)
		t->c->sent = *claim;
	chunk_open(t->c, out, len);
	if (copy)
		ok = bodyfd_copy_part(b, out, from, len);
	else
		bodyfd_send_part(b, out, from, len);
	/* a short copy ends the answer short: no chunk end after it */
	if (ok)
		chunk_close(t->c, out);
	count_since(t, mark);
	return ok;
}

static void
h1_end(struct txn *t)
{
	struct client *c = t->c;

	if (!c->chunked)
		return;
	c->chunked = false;
	evbuffer_add(client_out(c), "0\r\n\r\n", 5);
	client_sent(t, 5);
}

static size_t
h1_queued(const struct txn *t)
{
	return evbuffer_get_length(client_out(t->c));
}

static bool
h1_copies(const struct txn *t)
{
	return client_is_tls(t->c);
}

const struct writer_ops h1_writer = {
	.interim = h1_interim,
	.interim_end = h1_interim_end,
	.head_start = h1_head_start,
	.head = h1_head,
	.established = h1_established,
	.data = h1_data,
	.data_buffer = h1_data_buffer,
	.body = h1_body,
	.end = h1_end,
	.queued = h1_queued,
	.copies = h1_copies,
};
