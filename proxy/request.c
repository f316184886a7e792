/*
 * Answering one request.
 *
 * Order of decisions, following RFC 9111 for a shared cache:
 *   origin-form target      -> an internal page (/metrics) or 400
 *   CONNECT                 -> tunnel.c (dispatched by client.c)
 *   GET/HEAD                -> cache lookup (key: normalized URL, Vary)
 *       fresh, or stale within the client's max-stale -> served from memory
 *       stale with a validator -> conditional GET to the origin
 *       nothing usable        -> only-if-cached ? 504 : origin
 *   any other method        -> forwarded (fetch.c); a successful unsafe
 *                              method invalidates the URL
 *
 * Hits are written with the body as a zero-copy reference: the client's
 * output buffer points into the stored body and holds a reference on it.
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "bodyfd.h"
#include "budget.h"
#include "discover.h"
#include "icpsock.h"
#include "sqdigest.h"
#include "status.h"
#include "peers.h"
#include "client.h"
#include "fetch.h"
#include "sc_assert.h"

const char *
http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 203: return "Non-Authoritative Information";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 300: return "Multiple Choices";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 422: return "Unprocessable Content";
	case 408: return "Request Timeout";
	case 410: return "Gone";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return status < 300 ? "OK" : status < 400 ? "Redirect" :
	    status < 500 ? "Client Error" : "Server Error";
	}
}

void
request_connection_field(struct txn *t, struct evbuffer *out)
{
	/* unread request body would be parsed as the next request */
	if (t->body_kind != BODY_NONE && !t->body_done)
		t->keep_alive = false;
	if (t->srv->draining)
		t->keep_alive = false;
	if (!t->keep_alive)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (t->req.version == 10)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
}

void
request_error(struct txn *t, int status, const char *code, const char *cause,
    bool close)
{
	struct evbuffer *out = client_out(t->c);
	size_t before = evbuffer_get_length(out);
	char body[512];
	int n = snprintf(body, sizeof(body), "sumcache: %d %s: %s\n", status,
	    http_reason(status), cause);

	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)strlen(body);
	if (close)
		t->keep_alive = false;
	t->status = status;
	t->code = code;
	t->result = RESULT_ERROR;
	snprintf(t->ctype, sizeof(t->ctype), "text/plain");
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %d\r\nCache-Control: no-store\r\nVia: %s\r\n",
	    status, http_reason(status), n, t->srv->via);
	request_connection_field(t, out);
	evbuffer_add(out, "\r\n", 2);
	if (!t->is_head)
		evbuffer_add(out, body, (size_t)n);
	client_sent(t, evbuffer_get_length(out) - before);
	client_txn_done(t->c);
}

void
txn_account(struct txn *t)
{
	struct server *s = t->srv;
	struct accesslog_entry e = {
		.start = t->start, .client = t->c->addr, .code = t->code,
		.status = t->status, .bytes = t->bytes_out,
		.method = t->req.method ? t->req.method : "NONE",
		.method_len = t->req.method ? (int)t->req.method_len : 4,
		.url = t->url.norm ? t->url.norm : "error:invalid-request",
		.hier = t->hier,
		.hier_host = t->hier_host[0] ? t->hier_host : "-",
		.content_type = t->ctype, .content_type_len = (int)strlen(t->ctype),
	};

	if (t->result == RESULT_INTERNAL)
		return;  /* internal pages are not logged */
	if (t->for_peer) {
		if (t->result == RESULT_LOCAL_HIT)
			s->m.peer_served_hit++;
		else
			s->m.peer_served_miss++;
	} else {
		switch (t->result) {
		case RESULT_LOCAL_HIT: s->m.req_local_hit++; break;
		case RESULT_MISS: s->m.req_miss++; break;
		case RESULT_REMOTE_HIT: s->m.req_remote_hit++; break;
		case RESULT_ERROR: s->m.req_error++; break;
		case RESULT_INTERNAL: break;
		}
	}
	evutil_gettimeofday(&e.end, NULL);
	accesslog_write(s->log, &e);
}

void
txn_free(struct txn **tp)
{
	struct txn *t = *tp;

	if (t == NULL)
		return;
	*tp = NULL;
	fetch_free(&t->fetch);
	if (t->summary_post)
		peers_receive_end(t->srv->peers,
		    (const struct sockaddr *)&t->c->sa,
		    (uint64_t)t->req.content_length);
	free(t->peer_msg);
	store_obj_unref(&t->stale);
	http_head_clear(&t->req);
	url_clear(&t->url);
	if (t->body)
		evbuffer_free(t->body);
	free(t);
}

/* ---- hits ---- */

static bool
vary_matches(const struct store_obj *o, void *arg)
{
	const struct txn *t = arg;
	char stack[2048];
	size_t len = 0, pos = 0, nl, vl;
	const char *n, *v;
	bool same = true;

	if (o->vary_len == 0)
		return true;
	/* a key that outgrows the stored one cannot match it: room for
	 * that much is enough, whatever the request's size */
	size_t cap = o->vary_len + 3;
	char *key = cap <= sizeof(stack) ? stack : malloc(cap);
	if (key == NULL)
		return false;
	while (same && store_head_next(o, &pos, &n, &nl, &v, &vl))
		if (http_token_eq(n, nl, "vary"))
			same = cachectl_varykey(&t->req, v, vl, key, cap, &len);
	same = same && len == o->vary_len &&
	    memcmp(key, store_obj_varykey(o), len) == 0;
	if (key != stack)
		free(key);
	return same;
}

static int64_t
current_age(const struct store_obj *o, time_t now)
{
	int64_t resident = (int64_t)(now - o->meta.response_time);

	return o->meta.initial_age + (resident > 0 ? resident : 0);
}

enum icp_op
request_icp_lookup(void *arg, const char *url, size_t len)
{
	struct server *s = arg;
	struct url u;
	const char *why;

	if (url_parse_absolute(url, len, &u, &why) < 0 || u.https) {
		url_clear(&u);
		return ICP_OP_ERR;
	}
	/* any variant: ICP cannot say which one the asker wants */
	struct store_obj *o = store_lookup(s->store, u.norm, u.len, NULL,
	    NULL);
	url_clear(&u);
	if (o == NULL)
		return ICP_OP_MISS;
	bool fresh = !o->meta.no_cache && o->meta.lifetime -
	    current_age(o, time(NULL)) >= ICP_HIT_FRESH;
	store_obj_unref(&o);
	return fresh ? ICP_OP_HIT : ICP_OP_MISS;
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

void
request_serve_object(struct txn *t, struct store_obj *o, const char *code)
{
	struct evbuffer *out = client_out(t->c);
	size_t before = evbuffer_get_length(out);
	bool not_modified = o->meta.status == 200 && client_not_modified(t, o);
	int status = not_modified ? 304 : o->meta.status;
	bool body = !t->is_head && status != 304 && status != 204;
	int64_t age = current_age(o, time(NULL));
	const char *ct;
	size_t ctl;

	t->status = status;
	t->code = not_modified && strcmp(code, "TCP_MEM_HIT") == 0 ?
	    "TCP_IMS_HIT" : code;
	t->result = RESULT_LOCAL_HIT;
	if (store_head_find(o, "content-type", &ct, &ctl))
		snprintf(t->ctype, sizeof(t->ctype), "%.*s", (int)ctl, ct);
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status,
	    http_reason(status));
	evbuffer_add(out, store_obj_head(o), o->head_len);
	evbuffer_add_printf(out, "Age: %lld\r\nVia: %s\r\nX-Cache: HIT from "
	    "%s\r\n", (long long)(age < 2147483648LL ? age : 2147483648LL),
	    t->srv->via, t->srv->conf.node_name);
	if (status != 304 && status != 204)
		evbuffer_add_printf(out, "Content-Length: %zu\r\n",
		    o->body->len);
	request_connection_field(t, out);
	evbuffer_add(out, "\r\n", 2);
	if (body)
		bodyfd_send(o->body, out);
	client_sent(t, evbuffer_get_length(out) - before);
	client_txn_done(t->c);
}

/* ---- internal pages ---- */

/* The head of an internal answer; extra is more header lines (each
 * ending in CRLF) or "". Not a client request in the counts. */
static void
internal_head(struct txn *t, int status, const char *ctype,
    const char *extra, size_t len)
{
	struct evbuffer *out = client_out(t->c);

	t->status = status;
	t->result = RESULT_INTERNAL;
	evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nCache-Control: no-store\r\n"
	    "%s", status, http_reason(status), extra);
	if (status != 204)
		evbuffer_add_printf(out, "Content-Type: %s\r\n"
		    "Content-Length: %zu\r\n", ctype, len);
	request_connection_field(t, out);
	evbuffer_add(out, "\r\n", 2);
}

/* A short internal answer: status, optional body of type ctype. */
static void
internal_reply(struct txn *t, int status, const char *ctype,
    const void *body, size_t len)
{
	internal_head(t, status, ctype, "", len);
	if (status != 204 && !t->is_head)
		evbuffer_add(client_out(t->c), body, len);
	client_txn_done(t->c);
}

/* A 200 whose body was built in buf (freed here); NULL buf is 503. */
static void
internal_buffer(struct txn *t, const char *ctype, struct evbuffer *buf)
{
	if (buf == NULL) {
		request_error(t, 503, "NONE_NONE", "out of memory", true);
		return;
	}
	internal_head(t, 200, ctype, "", evbuffer_get_length(buf));
	if (!t->is_head)
		evbuffer_add_buffer(client_out(t->c), buf);
	evbuffer_free(buf);
	client_txn_done(t->c);
}

static void
serve_metrics(struct txn *t)
{
	struct server *s = t->srv;
	const struct store_stats *st = store_stats(s->store);
	struct evbuffer *body = evbuffer_new();

	const struct budget_stats *bs = budget_stats(s->budget);
	s->m.cache_objects = st->objects;
	s->m.cache_bytes = st->bytes;
	s->m.cache_pinned = st->pinned;
	s->m.evictions = st->evictions;
	s->m.inflight_bytes = bs->inflight;
	s->m.inflight_refused = bs->inflight_refused;
	s->m.heap_trims = bs->trims;
	s->m.conn_mem_bound = client_mem_bound(s);
	if (body != NULL) {
		metrics_render(&s->m, body);
		if (s->peers != NULL)
			peers_render_metrics(s->peers, body);
		if (s->discover != NULL)
			discover_render_metrics(s->discover, body);
		if (s->icp != NULL)
			icpsock_render_metrics(s->icp, body);
	}
	internal_buffer(t, "text/plain; version=0.0.4", body);
}

/* The page may run its own script and styles and read this node's JSON,
 * nothing else: the browser itself refuses any asset from elsewhere. */
static void
serve_status_page(struct txn *t)
{
	internal_head(t, 200, "text/html; charset=utf-8",
	    "Content-Security-Policy: default-src 'none'; "
	    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
	    "connect-src 'self'; img-src data:\r\n"
	    "X-Content-Type-Options: nosniff\r\n", status_html_len);
	if (!t->is_head)
		evbuffer_add_reference(client_out(t->c), status_html,
		    status_html_len, NULL, NULL);
	client_txn_done(t->c);
}

static void
serve_status_json(struct txn *t)
{
	struct evbuffer *body = evbuffer_new();

	if (body != NULL)
		status_render_json(t->srv->status, body);
	internal_buffer(t, "application/json", body);
}

/* Peer-protocol refusals: a reason line, and not a client request (the
 * peers module has counted and logged it). */
static void
internal_text(struct txn *t, int status, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%s\n", why);

	internal_reply(t, status, "text/plain", line, (size_t)n);
}

/* GET /sumcache/v1/summary: a peer pulls our full summary. */
static void
serve_summary_pull(struct txn *t)
{
	struct sum_buf b = {0};
	int status = peers_pull_response(t->srv->peers,
	    (const struct sockaddr *)&t->c->sa, &b);

	if (status == 200)
		internal_reply(t, 200, "application/x-protobuf", b.p, b.len);
	else
		internal_text(t, status, status == 403 ?
		    "not a configured peer" : "summary unavailable");
	free(b.p);
}

/* POST /sumcache/v1/summary: checked before a byte of body is read, then
 * read into a buffer of its declared size within peer_timeout, in all;
 * peers_receive_begin says how much of that may be held at once. */
static void
start_summary_push(struct txn *t)
{
	struct server *s = t->srv;
	const struct sockaddr *from = (const struct sockaddr *)&t->c->sa;
	const char *why;

	if (peers_by_addr(s->peers, from) == NULL) {
		peers_refused(s->peers, REJ_NOT_PEER, t->c->addr);
		internal_text(t, 403, "not a configured peer");
		return;
	}
	if (t->body_kind == BODY_CHUNKED || t->req.content_length < 0) {
		internal_text(t, 411, "a summary needs a Content-Length");
		return;
	}
	uint64_t len = (uint64_t)t->req.content_length;
	int status = peers_receive_begin(s->peers, from, t->c->addr, len,
	    &why);
	if (status != 0) {
		internal_text(t, status, why);
		return;
	}
	t->summary_post = true;
	t->peer_msg = malloc(len > 0 ? len : 1);
	if (t->peer_msg == NULL) {
		request_error(t, 503, "NONE_NONE", "out of memory", true);
		return;
	}
	client_body_deadline(t->c, s->conf.peer_timeout_ms);
	request_feed_body(t, bufferevent_get_input(t->c->bev));
}

static void
finish_summary_push(struct txn *t)
{
	const char *why = "";
	int status = peers_receive(t->srv->peers,
	    (const struct sockaddr *)&t->c->sa, t->peer_msg,
	    (size_t)t->req.content_length, &why);

	/* large: give it back now rather than when the connection goes */
	free(t->peer_msg);
	t->peer_msg = NULL;
	budget_freed(t->srv->budget, (size_t)t->req.content_length);
	if (status == 204)
		internal_reply(t, 204, NULL, NULL, 0);
	else
		internal_text(t, status, why);
}

void
request_body_stalled(struct txn *t)
{
	if (t->summary_post)
		peers_receive_slow(t->srv->peers, t->c->addr);
	else
		t->srv->m.client_aborts++;
}

/* Our Squid Cache Digest, for a Squid sibling (PROTOCOLS.md 2). */
static void
serve_digest(struct txn *t)
{
	struct server *s = t->srv;
	time_t made, expires;
	char lm[64], ex[64];
	const struct sum_buf *b = s->digest == NULL ? NULL :
	    sqdigest_get(s->digest, time(NULL), &made, &expires);

	if (b == NULL) {
		request_error(t, 404, "NONE_NONE", "no cache digest here "
		    "(digest_generation off)", false);
		return;
	}
	struct evbuffer *out = client_out(t->c);
	size_t before = evbuffer_get_length(out);
	http_date_format(made, lm);
	http_date_format(expires, ex);
	t->status = 200;
	t->result = RESULT_INTERNAL;
	evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: "
	    "application/cache-digest\r\nContent-Length: %zu\r\n"
	    "Last-Modified: %s\r\nExpires: %s\r\nVia: %s\r\n", b->len, lm,
	    ex, s->via);
	request_connection_field(t, out);
	evbuffer_add(out, "\r\n", 2);
	if (!t->is_head)
		evbuffer_add(out, b->p, b->len);
	s->m.digests_served++;
	if (s->peers != NULL && !t->is_head)
		peers_digest_served(s->peers,
		    (const struct sockaddr *)&t->c->sa, b->len);
	client_sent(t, evbuffer_get_length(out) - before);
	client_txn_done(t->c);
}

/*
 * Whether t's absolute URL names this proxy: our port, and our listen
 * address or node name as the host (any host when we listen on a
 * wildcard address, where we cannot tell our names from others').
 */
static bool
names_us(const struct txn *t)
{
	const struct server *s = t->srv;
	const struct sockaddr_storage *a = &s->listen_addr;
	uint16_t port = ntohs(a->ss_family == AF_INET6 ?
	    ((const struct sockaddr_in6 *)a)->sin6_port :
	    ((const struct sockaddr_in *)a)->sin_port);
	const char *h = t->url.norm + t->url.host_off;
	size_t hl = t->url.host_len;

	if (t->url.port != port)
		return false;
	if (hl >= 2 && h[0] == '[') {   /* [v6] */
		h++;
		hl -= 2;
	}
	/* peer_source is "host!IP" exactly when we listen on one address */
	const char *ip = s->peer_source[0] ? s->peer_source + 5 : NULL;
	return ip == NULL || (strlen(ip) == hl && memcmp(ip, h, hl) == 0) ||
	    (strlen(s->conf.node_name) == hl &&
	    strncasecmp(s->conf.node_name, h, hl) == 0);
}

/* Pages that only read (GET or HEAD). A Squid sibling asks for the
 * digest, and a browser whose proxy is this node for the others, in
 * absolute form too. */
#define PAGE(path, serve) {path, sizeof(path) - 1, serve}
static const struct page {
	const char *path;
	size_t len;
	void (*serve)(struct txn *t);
} pages[] = {
	PAGE(SQDIGEST_PATH, serve_digest),
	PAGE("/metrics", serve_metrics),
	PAGE("/sumcache/status", serve_status_page),
	PAGE("/sumcache/v1/status", serve_status_json),
};
#undef PAGE

/* The read-only page at path p (n bytes), or NULL. Every absolute-form
 * request comes through here: a length compare rules out nearly all. */
static const struct page *
find_page(const char *p, size_t n)
{
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++)
		if (n == pages[i].len && memcmp(p, pages[i].path, n) == 0)
			return &pages[i];
	return NULL;
}

static void
serve_page(struct txn *t, const struct page *pg)
{
	if (t->is_get || t->is_head)
		pg->serve(t);
	else
		internal_text(t, 405, "GET or HEAD");
}

/* An origin-form request (path p, n bytes): an internal page or 400. */
static void
serve_internal(struct txn *t, const char *p, size_t n)
{
	const struct page *pg = find_page(p, n);

	if (pg != NULL) {
		serve_page(t, pg);
		return;
	}
	if (http_token_eq(p, n, "/sumcache/v1/summary")) {
		if (t->srv->conf.sharing != SHARING_SUMMARY)
			request_error(t, 404, "NONE_NONE", "this node shares "
			    "no summary (sharing none)", false);
		else if (t->is_get)
			serve_summary_pull(t);
		else if (http_token_eq(t->req.method, t->req.method_len,
		    "POST"))
			start_summary_push(t);
		else
			internal_text(t, 405, "GET or POST");
		return;
	}
	request_error(t, 400, "NONE_NONE", "this is a forward proxy: the "
	    "request target must be an absolute URL", false);
}

/* ---- bodies ---- */

static bool
setup_body(struct txn *t)
{
	if (t->req.chunked)
		t->body_kind = BODY_CHUNKED;
	else if (t->req.content_length > 0)
		t->body_kind = BODY_LENGTH;
	else
		return true;
	t->body_left = t->req.chunked ? 0 : (uint64_t)t->req.content_length;
	t->body = evbuffer_new();
	return t->body != NULL;
}

int
request_feed_body(struct txn *t, struct evbuffer *in)
{
	size_t avail = evbuffer_get_length(in);

	while (avail > 0 && !t->body_done) {
		if (t->body_kind == BODY_LENGTH) {
			size_t n = avail < t->body_left ? avail :
			    (size_t)t->body_left;
			if (t->peer_msg != NULL)
				evbuffer_remove(in, t->peer_msg +
				    (t->req.content_length - t->body_left), n);
			else
				evbuffer_remove_buffer(in, t->body, n);
			t->body_left -= n;
			avail -= n;
			t->body_done = t->body_left == 0;
			continue;
		}
		/* chunked: decode from a contiguous window of the input */
		size_t win = avail < 65536 ? avail : 65536;
		const char *p = (const char *)evbuffer_pullup(in,
		    (ev_ssize_t)win);
		const char *data, *why;
		size_t dlen;
		ssize_t used = http_chunked_feed(&t->chunk, p, win, &data,
		    &dlen, &why);
		if (used < 0) {
			t->srv->m.parse_errors++;
			/* once a response is under way, only a close can
			 * tell the client */
			if (t->status == 0) {
				request_error(t, 400, "NONE_NONE", why, true);
			} else {
				t->code = "TCP_MISS_ABORTED";
				client_fail(t->c);
			}
			return -1;
		}
		if (dlen > 0)
			evbuffer_add(t->body, data, dlen);
		evbuffer_drain(in, (size_t)used);
		avail -= (size_t)used;
		t->body_done = http_chunked_done(&t->chunk);
	}
	if (t->fetch != NULL)
		fetch_body_ready(t->fetch);
	else if (t->summary_post && t->body_done)
		finish_summary_push(t);
	return 0;
}

void
request_output_drained(struct txn *t)
{
	if (t->fetch != NULL)
		fetch_output_drained(t->fetch);
}

/* ---- dispatch ---- */

/*
 * Whether a Via element was added by a proxy called node: the request has
 * been through us already. Via elements are "protocol received-by
 * [comment]". *any says whether the request has a Via at all (it came
 * through a proxy).
 */
static bool
via_names(const struct http_head *h, const char *node, bool *any)
{
	size_t nl = strlen(node);

	*any = false;
	for (unsigned i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];
		const char *e;
		size_t el, pos = 0;

		if (!http_field_is(f, "via"))
			continue;
		*any = true;
		while (http_list_next(f->value, f->vlen, &pos, &e, &el)) {
			const char *sp = memchr(e, ' ', el);
			if (sp == NULL)
				continue;
			const char *by = sp + 1;
			size_t bl = strcspn(by, " \t,");
			if (by + bl > e + el)
				bl = (size_t)(e + el - by);
			if (bl == nl && strncasecmp(by, node, nl) == 0)
				return true;
		}
	}
	return false;
}

static void
start_fetch(struct txn *t, enum fetch_kind kind)
{
	/* body bytes that arrived with the head are checked before the
	 * origin hears of the request: a framing error never reaches it */
	if (t->body_kind != BODY_NONE &&
	    request_feed_body(t, bufferevent_get_input(t->c->bev)) < 0)
		return;
	if (fetch_start(t, kind) < 0)
		request_error(t, 503, "NONE_NONE", "cannot start origin fetch",
		    true);
}

static bool
has_validator(const struct store_obj *o)
{
	const char *v;
	size_t vl;

	return store_head_find(o, "etag", &v, &vl) ||
	    store_head_find(o, "last-modified", &v, &vl);
}

static void
lookup(struct txn *t)
{
	struct server *s = t->srv;
	struct store_obj *o = store_lookup(s->store, t->url.norm, t->url.len,
	    vary_matches, t);

	if (o == NULL) {
		if (t->reqcc.only_if_cached) {
			request_error(t, 504, "TCP_MISS", "not in cache "
			    "(only-if-cached)", false);
			return;
		}
		t->code = "TCP_MISS";
		start_fetch(t, FETCH_MISS);
		return;
	}
	struct cachectl_entry e = {
		.lifetime = o->meta.lifetime,
		.age = current_age(o, time(NULL)),
		.must_revalidate = o->meta.must_revalidate,
		.no_cache = o->meta.no_cache,
	};
	enum cachectl_verdict v = cachectl_judge(&e, &t->reqcc);
	if (v != CACHECTL_REVALIDATE) {
		request_serve_object(t, o, v == CACHECTL_FRESH ? "TCP_MEM_HIT" :
		    "TCP_STALE_HIT");
		store_obj_unref(&o);
		return;
	}
	if (t->reqcc.only_if_cached) {
		store_obj_unref(&o);
		request_error(t, 504, "TCP_MISS", "no fresh copy in cache "
		    "(only-if-cached)", false);
		return;
	}
	if (t->is_get && has_validator(o)) {
		t->stale = o;
		t->code = "TCP_REFRESH_MODIFIED";
		start_fetch(t, FETCH_REVALIDATE);
		return;
	}
	store_obj_unref(&o);
	t->code = t->reqcc.no_cache ? "TCP_CLIENT_REFRESH_MISS" : "TCP_MISS";
	start_fetch(t, FETCH_MISS);
}

void
request_start(struct txn *t)
{
	const char *why;

	t->is_get = http_token_eq(t->req.method, t->req.method_len, "GET");
	t->is_head = http_token_eq(t->req.method, t->req.method_len, "HEAD");
	if (!setup_body(t)) {
		request_error(t, 503, "NONE_NONE", "out of memory", true);
		return;
	}
	t->body_done = t->body_kind == BODY_NONE;
	if (t->req.target_len > 0 && t->req.target[0] == '/') {
		serve_internal(t, t->req.target, t->req.target_len);
		return;
	}
	if (url_parse_absolute(t->req.target, t->req.target_len, &t->url,
	    &why) < 0) {
		t->srv->m.parse_errors++;
		request_error(t, 400, "NONE_NONE", why, false);
		return;
	}
	/* our own pages, named in absolute form: answered here, not fetched
	 * from ourselves (every status page refresh a client miss) */
	const struct page *pg = find_page(t->url.norm + t->url.path_off,
	    t->url.len - t->url.path_off);
	if (pg != NULL && names_us(t)) {
		serve_page(t, pg);
		return;
	}
	cc_parse(&t->req, true, &t->reqcc);
	/* PROTOCOLS.md 4: a request that has been through us goes to the
	 * origin, never to a peer again */
	bool proxied;
	t->looped = via_names(&t->req, t->srv->conf.node_name, &proxied);
	if (t->looped)
		t->srv->m.forwarding_loops++;
	/* a peer's request came through a proxy (Via) from a peer's
	 * address: the client hit ratio leaves it out, or every remote hit
	 * would count twice, once as a local hit where it was served */
	t->for_peer = proxied && t->srv->peers != NULL &&
	    peers_by_addr(t->srv->peers,
	    (const struct sockaddr *)&t->c->sa) != NULL;
	if (t->is_get || t->is_head) {
		lookup(t);
		return;
	}
	t->code = "TCP_MISS";
	start_fetch(t, FETCH_FORWARD);
}
