/*
 * The node's own pages: /metrics, the status page and its JSON, the Squid
 * Cache Digest, and the summary exchange (a peer's pull, a peer's push).
 * Answered for origin-form requests, and the read-only ones also in
 * absolute form when the URL names this node (a browser whose proxy is
 * this node asks for them so). None of them is a client request in the
 * counts; the peer protocol's refusals are counted by peers.c.
 */
#include "pages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "budget.h"
#include "client.h"
#include "curlev.h"
#include "discover.h"
#include "disk.h"
#include "icpsock.h"
#include "peers.h"
#include "deliver.h"
#include "reqbody.h"
#include "sc_assert.h"
#include "sqdigest.h"
#include "store.h"
#include "status.h"
#include "tiers.h"
#include "tls.h"
#include "txn.h"
#include "writer.h"


/* The head of an internal answer begins: its fields go in the buffer
 * returned, and internal_head ends it. Not a client request in the
 * counts. */
static struct evbuffer *
internal_start(struct txn *t, int status)
{
	t->status = status;
	t->result = RESULT_INTERNAL;
	return writer_head_start(t, status, NULL, 0);
}

static void
internal_head(struct txn *t, struct evbuffer *fb, const char *ctype,
    size_t len)
{
	int status = t->status;

	writer_field(fb, "Cache-Control", 13, "no-store", 8);
	if (status != 204)
		writer_field(fb, "Content-Type", 12, ctype, strlen(ctype));
	writer_head(t, &(struct writer_head){.age = -1,
	    .length = status != 204 ? (int64_t)len : -1,
	    .body = status != 204 && !t->is_head, .internal = true});
}

/* A short internal answer: status, optional body of type ctype. */
static void
internal_reply(struct txn *t, int status, const char *ctype,
    const void *body, size_t len)
{
	internal_head(t, internal_start(t, status), ctype, len);
	if (status != 204 && !t->is_head)
		writer_data(t, body, len);
	client_txn_done(t->c);
}

/* A 200 whose body was built in buf (freed here); NULL buf is 503. */
static void
internal_buffer(struct txn *t, const char *ctype, struct evbuffer *buf)
{
	if (buf == NULL) {
		deliver_error(t, 503, SQ_NONE_NONE, "out of memory", true);
		return;
	}
	internal_head(t, internal_start(t, 200), ctype,
	    evbuffer_get_length(buf));
	if (!t->is_head)
		writer_data_buffer(t, buf);
	evbuffer_free(buf);
	client_txn_done(t->c);
}

void
pages_metrics_view(struct worker *s, struct metrics_view *v)
{
	struct node *n = s->node;
	/* copies taken now, each under its owner's lock, and the workers'
	 * counters summed: the view points into them */
	memset(v, 0, sizeof(*v));
	v->taken.store = store_stats(n->store);
	v->taken.budget = budget_stats(n->budget);
	if (n->digest != NULL)
		v->taken.digest = sqdigest_stats(n->digest);
	if (n->tls != NULL)
		v->taken.leaves = tls_server_leaves(n->tls);
	for (unsigned i = 0; i < n->nworkers; i++) {
		metrics_sum(&v->taken.own, &n->workers[i]->m);
		v->taken.curl.excess +=
		    curlev_stats(n->workers[i]->curl).excess;
	}
	v->own = &v->taken.own;
	v->taken.node = n->gauges;
	v->taken.node.connections_peak = atomic_load_explicit(&n->conns_peak,
	    memory_order_relaxed);
	v->node = &v->taken.node;
	v->store = &v->taken.store;
	v->budget = &v->taken.budget;
	v->digest = n->digest != NULL ? &v->taken.digest : NULL;
	v->leaves = n->tls != NULL ? &v->taken.leaves : NULL;
	v->curl = &v->taken.curl;
	v->disk = tiers_disk_stats(n->tiers, &v->taken.disk) ?
	    &v->taken.disk : NULL;
}

static void
serve_metrics(struct txn *t)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	struct evbuffer *body = evbuffer_new();
	struct metrics_view v;

	pages_metrics_view(s, &v);
	if (body != NULL) {
		metrics_render(&v, body);
		if (n->peers != NULL)
			peers_render_metrics(n->peers, body);
		if (n->discover != NULL)
			discover_render_metrics(n->discover, body);
		if (n->icp != NULL)
			icpsock_render_metrics(n->icp, body);
	}
	internal_buffer(t, "text/plain; version=0.0.4", body);
}

/* The page may run its own script and styles and read this node's JSON,
 * nothing else: the browser itself refuses any asset from elsewhere. */
static void
serve_status_page(struct txn *t)
{
	static const char csp[] = "default-src 'none'; "
	    "script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
	    "connect-src 'self'; img-src data:";
	struct evbuffer *fb = internal_start(t, 200);

	writer_field(fb, "Content-Security-Policy", 23, csp, sizeof(csp) - 1);
	writer_field(fb, "X-Content-Type-Options", 22, "nosniff", 7);
	internal_head(t, fb, "text/html; charset=utf-8", status_html_len);
	if (!t->is_head)
		writer_data(t, status_html, status_html_len);
	client_txn_done(t->c);
}

static void
serve_status_json(struct txn *t)
{
	struct evbuffer *body = evbuffer_new();

	if (body != NULL)
		status_render_json(t->w->node->status, body);
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
	int status = peers_pull_response(t->w->node->peers,
	    (const struct sockaddr *)&t->c->sa, &b);

	if (status == 200)
		internal_reply(t, 200, "application/x-protobuf", b.p, b.len);
	else
		internal_text(t, status, status == 403 ?
		    "not a configured peer" : "summary unavailable");
	free(b.p);
}

static void
drop_peer_post(struct txn *t)
{
	pages_peer_post_end(t);
}

static const struct txn_part peer_post_part = {"peer message",
    drop_peer_post};

/* A peer's POSTed message, checked as far as it can be before its body:
 * read whole into one block within peer_timeout, then
 * pages_peer_post_arrived. */
static void
read_peer_post(struct txn *t, enum peer_post kind)
{
	t->peer_post = kind;
	txn_hold(t, &peer_post_part);
	if (t->body != NULL && reqbody_into_block(t->body) < 0) {
		deliver_error(t, 503, SQ_NONE_NONE, "out of memory", true);
		return;
	}
	client_body_deadline(t->c, t->w->node->conf.peer_timeout_ms);
	client_feed_body(t->c);
}

/* POST /sumcache/v1/summary: checked before a byte of body is read, then
 * read into a buffer of its declared size within peer_timeout, in all;
 * peers_receive_begin says how much of that may be held at once. */
static void
start_summary_push(struct txn *t)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	const struct sockaddr *from = (const struct sockaddr *)&t->c->sa;
	const char *why;

	if (peers_by_addr(n->peers, from) == NULL) {
		peers_refused(n->peers, REJ_NOT_PEER, t->c->addr);
		internal_text(t, 403, "not a configured peer");
		return;
	}
	if (t->req.chunked || t->req.content_length < 0) {
		internal_text(t, 411, "a summary needs a Content-Length");
		return;
	}
	uint64_t len = (uint64_t)t->req.content_length;
	int status = peers_receive_begin(n->peers, from, t->c->addr, len,
	    &why);
	if (status != 0) {
		internal_text(t, status, why);
		return;
	}
	read_peer_post(t, PEER_POST_SUMMARY);
}

/* POST /sumcache/v1/invalidate: small, from a peer's address only; read
 * whole within peer_timeout. */
static void
start_invalidation(struct txn *t)
{
	struct worker *s = t->w;

	if (peers_by_addr(s->node->peers, (const struct sockaddr *)&t->c->sa) ==
	    NULL) {
		internal_text(t, 403, "not a configured peer");
		return;
	}
	if (t->req.chunked || t->req.content_length <= 0 ||
	    t->req.content_length > INVAL_MAX_BYTES) {
		internal_text(t, 413, "an invalidation has a Content-Length "
		    "of at most 64KB");
		return;
	}
	read_peer_post(t, PEER_POST_INVALIDATION);
}

/* A peer's invalidation names url: its copies leave, here only (an
 * invalidation is never passed on). */
static bool
drop_for_peer(void *arg, const char *url, size_t len)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);
	struct url u;
	const char *why;

	if (url_parse_absolute(url, len, &u, &why) < 0)
		return false;
	METRIC_ADD(s->m.invalidations, tiers_invalidate(s->node->tiers,
	    u.norm, u.len));
	url_clear(&u);
	return true;
}

void
pages_peer_post_end(struct txn *t)
{
	if (t->peer_post == PEER_POST_SUMMARY)
		peers_receive_end(t->w->node->peers,
		    (const struct sockaddr *)&t->c->sa,
		    (uint64_t)t->req.content_length);
}

void
pages_peer_post_arrived(struct txn *t)
{
	static const uint8_t empty[1];
	const char *why = "";
	const struct sockaddr *from = (const struct sockaddr *)&t->c->sa;
	size_t len = (size_t)t->req.content_length;
	/* a summary of no bytes has no body to read: the peer protocol
	 * refuses it, as any message it cannot decode */
	uint8_t *msg = t->body != NULL ? reqbody_take_block(t->body) : NULL;
	int status = t->peer_post == PEER_POST_INVALIDATION ?
	    peers_receive_invalidation(t->w->node->peers, from, msg, len,
	    drop_for_peer, t->w, &why) :
	    peers_receive(t->w->node->peers, from, msg != NULL ? msg : empty,
	    len, &why);

	/* large: give it back now rather than when the connection goes */
	free(msg);
	if (t->peer_post == PEER_POST_SUMMARY)
		budget_freed(t->w->node->budget, len);
	if (status == 204)
		internal_reply(t, 204, NULL, NULL, 0);
	else
		internal_text(t, status, why);
}

/* Our Squid Cache Digest, for a Squid sibling (PROTOCOLS.md 2). */
static void
serve_digest(struct txn *t)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	time_t made, expires;
	char lm[64], ex[64];
	struct sum_buf copy = {0}, *b = &copy;

	if (n->digest == NULL || sqdigest_get(n->digest, time(NULL), &copy,
	    &made, &expires) < 0) {
		deliver_error(t, 404, SQ_NONE_NONE, "no cache digest here "
		    "(digest_generation off)", false);
		return;
	}
	http_date_format(made, lm);
	http_date_format(expires, ex);
	t->status = 200;
	t->result = RESULT_INTERNAL;
	struct evbuffer *fb = writer_head_start(t, 200, NULL, 0);
	writer_field(fb, "Content-Type", 12, "application/cache-digest", 24);
	writer_field(fb, "Last-Modified", 13, lm, strlen(lm));
	writer_field(fb, "Expires", 7, ex, strlen(ex));
	writer_head(t, &(struct writer_head){.age = -1, .via = true,
	    .length = (int64_t)b->len, .body = !t->is_head, .internal = true});
	if (!t->is_head)
		writer_data(t, b->p, b->len);
	METRIC_INC(s->m.digests_served);
	if (n->peers != NULL && !t->is_head)
		peers_digest_served(n->peers,
		    (const struct sockaddr *)&t->c->sa, b->len);
	free(copy.p);
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
	const struct worker *s = t->w;
	struct node *n = s->node;
	const struct sockaddr_storage *a = &n->listen_addr;
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
	const char *ip = n->peer_source[0] ? n->peer_source + 5 : NULL;
	return ip == NULL || (strlen(ip) == hl && memcmp(ip, h, hl) == 0) ||
	    (strlen(n->conf.node_name) == hl &&
	    strncasecmp(n->conf.node_name, h, hl) == 0);
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

void
pages_answer(struct txn *t, const char *p, size_t n)
{
	const struct page *pg = find_page(p, n);

	if (pg != NULL) {
		serve_page(t, pg);
		return;
	}
	if (http_token_eq(p, n, "/sumcache/v1/summary")) {
		if (t->w->node->conf.sharing != SHARING_SUMMARY)
			deliver_error(t, 404, SQ_NONE_NONE, "this node shares "
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
	if (http_token_eq(p, n, "/sumcache/v1/invalidate")) {
		if (t->w->node->peers == NULL)
			deliver_error(t, 404, SQ_NONE_NONE, "this node has no "
			    "peers", false);
		else if (http_token_eq(t->req.method, t->req.method_len,
		    "POST"))
			start_invalidation(t);
		else
			internal_text(t, 405, "POST");
		return;
	}
	deliver_error(t, 400, SQ_NONE_NONE, "this is a forward proxy: the "
	    "request target must be an absolute URL", false);
}

bool
pages_answer_absolute(struct txn *t)
{
	const struct page *pg = find_page(t->url.norm + t->url.path_off,
	    t->url.len - t->url.path_off);

	if (pg == NULL || !names_us(t))
		return false;
	serve_page(t, pg);
	return true;
}
