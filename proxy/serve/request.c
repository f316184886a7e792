/*
 * Answering one request.
 *
 * Order of decisions, following RFC 9111 for a shared cache:
 *   origin-form target      -> an internal page (pages.c) or 400
 *   CONNECT                 -> tunnel.c
 *   GET/HEAD                -> cache lookup (key: normalized URL, Vary)
 *       fresh, or stale within the client's max-stale -> served from memory
 *       stale with a validator -> conditional GET to the origin
 *       nothing usable        -> only-if-cached ? 504 : origin
 *   any other method        -> forwarded (fetch.c); a successful unsafe
 *                              method invalidates the URL
 *
 * How an answer is written on the wire is deliver.c's.
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "busy.h"
#include "deliver.h"
#include "disksend.h"
#include "client.h"
#include "fetch.h"
#include "hostpat.h"
#include "pages.h"
#include "sc_assert.h"
#include "stale.h"
#include "peers.h"
#include "purge.h"
#include "range.h"
#include "reqbody.h"
#include "tiers.h"
#include "tls.h"
#include "stored.h"
#include "tunnel.h"
#include "txn.h"
#include "upstream.h"
#include "writer.h"

static void
drop_reqbody(struct txn *t)
{
	reqbody_free(&t->body);
}

static const struct txn_part reqbody_part = {"request body", drop_reqbody};

/* client_ops' make: the txn of a request beginning on c. */
static struct txn *
txn_for_client(struct client *c)
{
	return txn_new(c->w, c);
}

/* ---- ICP ---- */

enum icp_op
request_icp_lookup(void *arg, const char *url, size_t len)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);
	struct url u;
	const char *why;

	if (url_parse_absolute(url, len, &u, &why) < 0 || u.https) {
		url_clear(&u);
		return ICP_OP_ERR;
	}
	/* any variant: ICP cannot say which one the asker wants */
	struct store_obj *o = store_lookup(s->node->store, u.norm, u.len, NULL,
	    NULL);
	struct store_meta m;
	int on_disk = o != NULL ? 1 :
	    tiers_peek(s->node->tiers, u.norm, u.len, &m);
	url_clear(&u);
	if (o != NULL) {
		m = o->meta;
		store_obj_unref(&o);
	}
	/* on disk, its head not in the page cache: a hit, as the summary
	 * says (an answer cannot wait for the device) */
	if (on_disk <= 0)
		return on_disk == 0 ? ICP_OP_HIT : ICP_OP_MISS;
	bool fresh = !m.no_cache &&
	    m.lifetime - store_meta_age(&m, time(NULL)) >= ICP_HIT_FRESH;
	return fresh ? ICP_OP_HIT : ICP_OP_MISS;
}

/* ---- bodies ---- */

bool
request_body_stalled(struct txn *t)
{
	if (t->peer_post != PEER_POST_SUMMARY)
		return false;
	peers_receive_slow(t->w->node->peers, t->c->addr);
	return true;
}

enum body_feed
request_feed_body(struct txn *t, struct evbuffer *in)
{
	const char *why;

	if (t->body_unread && reqbody_feed(t->body, in, &why) ==
	    REQBODY_BAD) {
		METRIC_INC(t->w->m.parse_errors);
		/* once a response is under way, only a close can tell the
		 * client */
		if (t->status == 0)
			deliver_error(t, 400, SQ_NONE_NONE, why, true);
		else
			client_fail(t->c, CUT_ABORTED);
		return BODY_FEED_FAILED;
	}
	t->body_unread = t->body != NULL && !reqbody_done(t->body);
	if (t->peer_post != PEER_POST_NONE) {
		/* read whole (its size was checked); answering it may
		 * finish t */
		if (!t->body_unread)
			pages_peer_post_arrived(t);
		return BODY_FEED_MORE;
	}
	/* a body waits for its fetch beyond CLIENT_BODY_HIGH; decided
	 * before the fetch hears of it, which may finish t */
	enum body_feed r = t->body != NULL && reqbody_waiting(t->body) >
	    CLIENT_BODY_HIGH ? BODY_FEED_FULL : BODY_FEED_MORE;
	if (t->fetch != NULL)
		fetch_body_ready(t->fetch);
	return r;
}

void
request_output_drained(struct txn *t)
{
	/* one of them answers t, and each may finish it */
	if (t->fetch != NULL)
		fetch_output_drained(t->fetch);
	else if (t->send != NULL)
		disksend_drained(t->send);
	else
		busy_drained(t);
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
	if (t->body_unread &&
	    client_feed_body(t->c) == BODY_FEED_FAILED)
		return;
	if (fetch_start(t, kind) < 0)
		deliver_error(t, 503, SQ_NONE_NONE, "cannot start origin fetch",
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

/*
 * t is about to be answered with the stale o (stale-while-revalidate):
 * unless a fetch of its URL is running already, a revalidation starts
 * behind it, for no client, and stores what it gets. o is borrowed.
 */
static void
refresh_behind(const struct txn *t, struct store_obj *o)
{
	if (busy_running(t->w, t->url.norm, t->url.len))
		return;
	struct txn *b = txn_clientless(t);
	if (b == NULL)
		return;
	stale_keep(b, store_obj_ref(o));
	b->code = has_validator(o) ? SQ_TCP_REFRESH_MODIFIED : SQ_TCP_MISS;
	if (fetch_start(b, has_validator(o) ? FETCH_REVALIDATE : FETCH_MISS) <
	    0)
		txn_free(&b);
}

static void lookup(struct txn *t);

static void
drop_disk_wait(struct txn *t)
{
	tiers_wait_cancel(&t->disk_wait);
}

static const struct txn_part disk_wait_part = {"disk read",
    drop_disk_wait};

/* The disk's copies are in memory now, if they were good: look again. */
static void
disk_read_done(void *arg)
{
	struct txn *t = SC_CAST(struct txn, arg, TXN_MAGIC);

	t->disk_wait = NULL;
	t->disk_read = true;
	lookup(t);
}

static void
lookup(struct txn *t)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	struct store_obj *o = store_lookup(n->store, t->url.norm, t->url.len,
	    stored_vary_matches, &t->req);

	/* a body left in the disk's file that changed: read and checked
	 * again below */
	if (o != NULL && !tiers_sendable(n->tiers, o))
		store_obj_unref(&o);
	if (o == NULL && !t->disk_read) {
		SC_ASSERT(t->disk_wait == NULL);
		txn_hold(t, &disk_wait_part);
		switch (tiers_read(n->tiers, t->url.norm, t->url.len,
		    disk_read_done, t, &t->disk_wait)) {
		case TIERS_NONE:
			break;
		case TIERS_READ:
			t->disk_read = true;
			o = store_lookup(n->store, t->url.norm, t->url.len,
			    stored_vary_matches, &t->req);
			break;
		case TIERS_WAIT:
			return;
		}
	}
	if (o == NULL) {
		/* a fetch of it is running: wait for it, a peer's
		 * only-if-cached question too */
		if (busy_join(t, lookup))
			return;
		if (t->reqcc.only_if_cached) {
			deliver_error(t, 504, SQ_TCP_MISS, "not in cache "
			    "(only-if-cached)", false);
			return;
		}
		if (t->failed != NULL) {
			deliver_error(t, t->failed->status, SQ_TCP_MISS,
			    t->failed->cause, false);
			return;
		}
		t->code = SQ_TCP_MISS;
		start_fetch(t, FETCH_MISS);
		return;
	}
	struct cachectl_entry e;
	stale_entry(o, &e);
	enum cachectl_verdict v = cachectl_judge(&e, &t->reqcc);
	if (v == CACHECTL_STALE_REVALIDATE && t->is_get) {
		/* the revalidation starts first: serving finishes t */
		METRIC_INC(s->m.stale_while_revalidate);
		refresh_behind(t, o);
		deliver_object(t, o, SQ_TCP_STALE_HIT);
		store_obj_unref(&o);
		return;
	}
	if (v == CACHECTL_FRESH || v == CACHECTL_STALE_OK) {
		/* a copy just read from disk is Squid's TCP_HIT; one another
		 * worker's fetch just stored for a waiter here, a collapse */
		bool followed = t->followed && v == CACHECTL_FRESH;
		t->followed = false;
		if (followed)
			METRIC_INC(s->m.collapsed_served);
		deliver_object(t, o, v != CACHECTL_FRESH ?
		    SQ_TCP_STALE_HIT : followed ? SQ_TCP_CF_HIT :
		    t->disk_read ? SQ_TCP_HIT : SQ_TCP_MEM_HIT);
		store_obj_unref(&o);
		return;
	}
	if (t->reqcc.only_if_cached) {
		store_obj_unref(&o);
		deliver_error(t, 504, SQ_TCP_MISS, "no fresh copy in cache "
		    "(only-if-cached)", false);
		return;
	}
	if (busy_join(t, lookup)) {
		store_obj_unref(&o);
		return;
	}
	if (t->failed != NULL) {
		/* the fetch this one waited for failed: its stale copy, as
		 * the leader's would have been, or the failure */
		stale_keep(t, o);
		if (stale_on_error(t, t->failed->disconnected)) {
			METRIC_INC(s->m.stale_if_error);
			deliver_object(t, o, SQ_TCP_REFRESH_FAIL_OLD);
			return;
		}
		deliver_error(t, t->failed->status, SQ_TCP_MISS,
		    t->failed->cause, false);
		return;
	}
	if (t->is_get && has_validator(o)) {
		stale_keep(t, o);
		t->code = SQ_TCP_REFRESH_MODIFIED;
		start_fetch(t, FETCH_REVALIDATE);
		return;
	}
	/* no validator: fetched again whole, the stale copy kept for
	 * stale-if-error */
	stale_keep(t, o);
	t->code = t->reqcc.no_cache ? SQ_TCP_CLIENT_REFRESH_MISS : SQ_TCP_MISS;
	start_fetch(t, FETCH_MISS);
}

/* ---- CONNECT ---- */

/* An intercepted CONNECT: the 200 in clear, then the connection's bytes
 * pass through our TLS (conn/tls.c) and its requests are read as ever.
 * The CONNECT itself is not logged: the requests inside are, with their
 * https:// URLs. */
static void
intercept(struct txn *t, const char *host, uint16_t port)
{
	struct client *c = t->c;
	char err[512];

	writer_established(t);
	/* a refusal is logged below (a line a second) */
	if (client_start_tls(c, host, port, err, sizeof(err)) < 0) {
		client_fail(c, CUT_ABORTED);
		return;
	}
	t->result = RESULT_INTERNAL;
	t->keep_alive = true;
	client_txn_done(c);
}

/* CONNECT: intercepted if the lists say so (conn/tls.c), else a tunnel. */
static void
connect_start(struct txn *t)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	enum squid_code code;
	const char *refusal;
	struct url u;

	/* inside an intercepted session (or a peer link) the client already
	 * has its tunnel: a second would be intercepted again, a session in
	 * a session */
	if (client_is_tls(t->c)) {
		deliver_not_allowed(t, "GET, HEAD, POST, PUT, DELETE, OPTIONS, "
		    "PATCH", "CONNECT inside a TLS connection to this node");
		return;
	}
	if (n->tls != NULL && url_parse_authority(t->req.target,
	    t->req.target_len, &u, &refusal) == 0) {
		char host[256];
		url_host(&u, host, sizeof(host));
		uint16_t port = u.port;
		url_clear(&u);
		if (tunnel_port_allowed(&n->conf, port) &&
		    tls_server_wants(n->tls, &n->conf, t->c->addr, host,
		    mono_ms(), &t->w->m)) {
			intercept(t, host, port);
			return;
		}
	}
	int status = tunnel_start(t, &code, &refusal);
	/* 0: the tunnel has the socket, t is gone; a port refused is a
	 * policy answer: the connection stays */
	if (status != 0)
		deliver_error(t, status, code, refusal, status != 403);
}

/* A request inside an intercepted connection: an origin-form target is
 * a path of the CONNECT's authority, over https. */
static int
url_parse_inside(struct txn *t, const char *authority, const char **why)
{
	if (t->req.target_len == 0 || t->req.target[0] != '/')
		return url_parse_absolute(t->req.target, t->req.target_len,
		    &t->url, why);
	size_t n = 8 + strlen(authority) + t->req.target_len;
	char *abs = malloc(n + 1);
	if (abs == NULL) {
		*why = "out of memory";
		return -1;
	}
	snprintf(abs, n + 1, "https://%s%.*s", authority,
	    (int)t->req.target_len, t->req.target);
	int rc = url_parse_absolute(abs, n, &t->url, why);
	free(abs);
	return rc;
}

/* An https URL in absolute form asks this node to make the TLS itself
 * and read what comes back: for a host tls_no_intercept names (a bank,
 * a pinned app) it is refused, as its CONNECT would be tunnelled, and
 * nothing of it is ever cached. */
static bool
never_looked_into(const struct txn *t)
{
	char host[256];

	if (!t->url.https)
		return false;
	url_host(&t->url, host, sizeof(host));
	return hostpat_match(&t->w->node->conf.tls_no_intercept, host);
}

void
request_start(struct txn *t)
{
	const char *why;

	t->is_get = http_token_eq(t->req.method, t->req.method_len, "GET");
	t->is_head = http_token_eq(t->req.method, t->req.method_len, "HEAD");
	txn_hold(t, &reqbody_part);
	if (reqbody_new(&t->req, &t->body) < 0) {
		deliver_error(t, 503, SQ_NONE_NONE, "out of memory", true);
		return;
	}
	t->body_unread = t->body != NULL;
	if (http_token_eq(t->req.method, t->req.method_len, "CONNECT")) {
		connect_start(t);
		return;
	}
	const char *authority = client_tls_authority(t->c);
	if (authority == NULL && t->req.target_len > 0 &&
	    t->req.target[0] == '/') {
		pages_answer(t, t->req.target, t->req.target_len);
		return;
	}
	if ((authority != NULL ? url_parse_inside(t, authority, &why) :
	    url_parse_absolute(t->req.target, t->req.target_len, &t->url,
	    &why)) < 0) {
		METRIC_INC(t->w->m.parse_errors);
		deliver_error(t, 400, SQ_NONE_NONE, why, false);
		return;
	}
	/* our own pages, named in absolute form: answered here, not fetched
	 * from ourselves (every status page refresh a client miss) */
	if (pages_answer_absolute(t))
		return;
	if (authority == NULL && never_looked_into(t)) {
		deliver_error(t, 403, SQ_TCP_DENIED, "this node never looks "
		    "into https for this host (tls_no_intercept): ask for it "
		    "with CONNECT", false);
		return;
	}
	if (purge_asked(t)) {
		purge_request(t);
		return;
	}
	cc_parse(&t->req, true, &t->reqcc);
	t->range_whole = t->w->node->conf.range_fetch_limit > 0 &&
	    range_asked(&t->req);
	/* PROTOCOLS.md 4: a request that has been through us goes to the
	 * origin, never to a peer again */
	bool proxied;
	t->looped = via_names(&t->req, t->w->node->conf.node_name, &proxied);
	if (t->looped)
		METRIC_INC(t->w->m.forwarding_loops);
	/* a peer's request came through a proxy (Via) from a peer's
	 * address: the client hit ratio leaves it out, or every remote hit
	 * would count twice, once as a local hit where it was served */
	t->for_peer = proxied && t->w->node->peers != NULL &&
	    peers_by_addr(t->w->node->peers,
	    (const struct sockaddr *)&t->c->sa) != NULL;
	/* a peer asks us as the key's owner: one hop, never two (a
	 * client's field counts for nothing) */
	t->placed = t->for_peer &&
	    http_field_find(&t->req, UPSTREAM_HOP_FIELD) != NULL;
	/* an https object is a peer's over a peer link only, which
	 * authenticated both ends: in clear, anyone on the path reads it */
	if (t->for_peer && t->url.https && !client_on_link(t->c)) {
		METRIC_INC(t->w->m.link_plain_refused);
		deliver_error(t, 403, SQ_TCP_DENIED, "an https object is "
		    "served to peers over a peer link only", true);
		return;
	}
	if (t->is_get || t->is_head) {
		lookup(t);
		return;
	}
	t->code = SQ_TCP_MISS;
	start_fetch(t, FETCH_FORWARD);
}

/* A response failed midway: nothing feeds it any more. */
static void
request_stop(struct txn *t)
{
	fetch_free(&t->fetch);
}

const struct client_ops request_client_ops = {
	.make = txn_for_client,
	.start = request_start,
	.feed_body = request_feed_body,
	.drained = request_output_drained,
	.stalled = request_body_stalled,
	.refuse = deliver_error,
	.stop = request_stop,
	.account = txn_account,
	.free = txn_free,
};
