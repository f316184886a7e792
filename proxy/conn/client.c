/*
 * Client connections.
 *
 * One bufferevent per client. Requests are answered strictly one at a time:
 * a pipelined request stays in the input buffer until the previous response
 * is fully queued, which answers pipelines in order with no response
 * buffering of our own. Parsing also waits while the output holds more than
 * CLIENT_OUT_HIGH, and reading stops once a head's worth of input waits
 * behind it (input_cap), so a client that sends but never reads costs a
 * bounded input and output buffer, however much it sends.
 *
 * A response that fails after its head was queued (the origin dies
 * mid-body) cannot be repaired: what is queued is still flushed, so earlier
 * pipelined answers arrive whole and the broken one arrives short of its
 * framing, and the connection closes. Its log line is written at the
 * close, with the bytes that really left.
 *
 * Timers: a connection with no request in progress has header_timeout to
 * complete a head once its first byte arrived (then 408) and idle_timeout
 * between requests (then a quiet close); a request body that stalls for
 * idle_timeout is abandoned. A client that stops reading its response is
 * cut by the bufferevent write timeout.
 */
#include "client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "accept.h"
#include "budget.h"
#include "client_impl.h"
#include "loop.h"
#include "peers.h"
#include "sc_assert.h"
#include "tiers.h"
#include "tls.h"
#include "writer.h"

static void client_next_request(struct client *c);

/* How far client_make_room looks: a bounded cost per accept. */
#define IDLE_SCAN_MAX 64

/* Unparsed input held while the previous answer is pending: one head's
 * worth (a read may go CLIENT_READ_CHUNK past it). A client that
 * pipelines without reading its answers costs this much, not what it
 * sends. */
static size_t
input_cap(const struct client *c)
{
	return c->w->node->limits.max_head + 4;
}

size_t
client_buffers_bound(const struct http_limits *l)
{
	size_t input = l->max_head + 4 + CLIENT_READ_CHUNK;
	size_t head = l->max_head + l->max_fields * sizeof(struct http_field);
	size_t body = CLIENT_BODY_HIGH + CLIENT_READ_CHUNK;
	size_t conn = sizeof(struct client) + sizeof(struct txn) + 4096;

	return conn + input + head + body;
}

static void
timer_set(struct client *c, uint32_t ms)
{
	struct timeval tv = tv_ms(ms);

	evtimer_add(c->timer, &tv);
}

/* The tail of s's list is c now: other workers read when it came. */
static void
oldest_is(struct worker *s, struct client *c)
{
	s->oldest_client = c;
	atomic_store_explicit(&s->oldest_us, c != NULL ? c->accepted_us :
	    UINT64_MAX, memory_order_relaxed);
}

void
client_free(struct client *c)
{
	struct worker *s = c->w;
	struct node *n = s->node;

	/* the parse loop still holds c: it frees it on the way out */
	if (c->in_loop) {
		c->dead = true;
		if (c->bev)
			bufferevent_disable(c->bev, EV_READ | EV_WRITE);
		return;
	}
	if (c->txn != NULL && c->txn->cut != CUT_NONE) {
		struct txn *t = c->txn;
		size_t unsent = c->bev ? evbuffer_get_length(client_out(c)) : 0;
		t->bytes_out -= unsent < t->bytes_out ? unsent : t->bytes_out;
		n->client_ops->account(t);
	}
	n->client_ops->free(&c->txn);
	if (c->linger != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_output(
		    bufferevent_get_underlying(c->bev)), c->linger);
	if (c->all_sent != NULL)
		event_free(c->all_sent);
	if (c->bev)
		bufferevent_free(c->bev);
	tls_conn_free(&c->tls);
	event_free(c->timer);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		oldest_is(s, c->prev);
	METRIC_ADD(s->m.active_clients, -1);
	if (!c->slot_moved)
		budget_conns(n->budget,
		    atomic_fetch_sub(&n->open_conns, 1) - 1);
	c->magic = 0;
	free(c);
	accept_conn_closed(s);
}

void
client_fail(struct client *c, enum log_cut why)
{
	struct txn *t = c->txn;

	SC_ASSERT(t != NULL && why != CUT_NONE);
	c->w->node->client_ops->stop(t);
	t->cut = why;
	client_close_after_output(c);
}

void
client_txn_done(struct client *c)
{
	struct txn *t = c->txn;

	/* once per transaction, by whoever finished it */
	SC_ASSERT(t != NULL && t->c == c);
	bool keep = t->keep_alive && !c->w->node->draining;

	c->wr->end(t);
	/* the reply is whole: under TLS, its first record's worth is made
	 * one piece, since the layer makes a record of each piece (status
	 * line, head, closing fields, body), and a record's encryption and
	 * framing cost more than a copy of a few KB (tls-bench: a tenth of
	 * a 1 KB hit) */
	if (c->tls != NULL) {
		size_t len = evbuffer_get_length(client_out(c));
		evbuffer_pullup(client_out(c), (ev_ssize_t)(len <
		    TLS_MAX_RECORD ? len : TLS_MAX_RECORD));
	}

	c->w->node->client_ops->account(t);
	c->w->node->client_ops->free(&c->txn);
	c->served = true;
	c->body_deadline = false;
	if (!keep) {
		client_close_after_output(c);
		return;
	}
	bufferevent_enable(c->bev, EV_READ);
	if (!c->in_loop)
		client_next_request(c);
}

void
client_body_deadline(struct client *c, uint32_t ms)
{
	c->body_deadline = true;
	timer_set(c, ms);
}

enum body_feed
client_feed_body(struct client *c)
{
	struct txn *t = c->txn;

	SC_ASSERT(t != NULL);
	enum body_feed rc = c->w->node->client_ops->feed_body(t,
	    bufferevent_get_input(c->bev));
	/* the transaction may have finished meanwhile: then there is
	 * nothing to hold */
	if (rc == BODY_FEED_FULL && c->txn == t)
		bufferevent_disable(c->bev, EV_READ);
	return rc;
}

void
client_body_resume(struct client *c)
{
	if (!c->closing)
		bufferevent_enable(c->bev, EV_READ);
}

/* A parse error or refusal before any transaction exists. */
static void
client_reject(struct client *c, struct txn *t, int status, const char *why)
{
	c->txn = t;
	t->keep_alive = false;
	c->w->node->client_ops->refuse(t, status, SQ_NONE_NONE, why, true);
}

/* Leading CRLFs between pipelined requests are skipped (RFC 9112 2.2). */
static void
skip_empty_lines(struct evbuffer *in)
{
	for (int i = 0; i < 4; i++) {
		unsigned char two[2];
		if (evbuffer_copyout(in, two, 2) != 2 || two[0] != '\r' ||
		    two[1] != '\n')
			return;
		evbuffer_drain(in, 2);
	}
}

static void use_bev(struct client *c, struct bufferevent *bev);

/* 0: the link's handshake goes on; -1: it could not start (closing). */
static int
start_link(struct client *c)
{
	char err[128];
	struct bufferevent *bev = tls_link_wrap(c->w->node->link, c->w->base,
	    c->bev, &c->w->m, &c->tls, err, sizeof(err));

	if (bev == NULL) {
		fprintf(stderr, "sumcache: %s\n", err);
		METRIC_INC(c->w->m.link_refused);
		c->dead = true;
		return -1;
	}
	use_bev(c, bev);
	return 0;
}

/* 0: need more; 1: a transaction was started (c may be dead: a tunnel
 * took its socket); -1: connection closing */
static int
parse_one(struct client *c)
{
	struct worker *s = c->w;
	struct node *n = s->node;
	struct evbuffer *in = bufferevent_get_input(c->bev);
	const struct http_limits *lim = &n->limits;

	/* a node of the cluster opening a peer link: its first bytes are
	 * a TLS handshake, its requests come through it */
	if (n->link != NULL && c->tls == NULL && !c->served &&
	    c->scan == 0 && !c->head_started && tls_link_offered(in))
		return start_link(c);
	if (c->scan == 0)
		skip_empty_lines(in);
	size_t have = evbuffer_get_length(in);
	if (have == 0)
		return 0;
	if (!c->head_started) {
		c->head_started = true;
		timer_set(c, n->conf.header_timeout_ms);
		client_set_bulk(c, false);
	}
	size_t window = have < lim->max_head + 4 ? have : lim->max_head + 4;
	const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)window);
	size_t end = http_head_end(p, window, &c->scan);
	struct txn *t;
	if (end == HTTP_HEAD_BARE_LF) {
		if ((t = c->w->node->client_ops->make(c)) == NULL)
			return -1;
		METRIC_INC(s->m.parse_errors);
		client_reject(c, t, 400, "bare LF in request head");
		return -1;
	}
	if (end == 0) {
		bool line_done = memchr(p, '\n', window) != NULL;
		int status = 0;
		if (!line_done && window > lim->max_line + 2)
			status = 414;
		else if (window >= lim->max_head + 4)
			status = 431;
		if (status == 0)
			return 0;
		if ((t = c->w->node->client_ops->make(c)) == NULL)
			return -1;
		METRIC_INC(s->m.parse_errors);
		client_reject(c, t, status, status == 414 ?
		    "request line too long" : "header section too large");
		return -1;
	}
	if ((t = c->w->node->client_ops->make(c)) == NULL)
		return -1;
	const char *why;
	int rc = http_parse_request(p, end, lim, &t->req, &why);
	evbuffer_drain(in, end);
	c->scan = 0;
	c->head_started = false;
	evtimer_del(c->timer);
	if (rc < 0) {
		METRIC_INC(s->m.parse_errors);
		client_reject(c, t, http_err_status(rc), why);
		return -1;
	}
	t->keep_alive = t->req.version == 11 ? !t->req.conn_close :
	    t->req.conn_keep_alive;
	c->txn = t;
	if (!c->allowed) {
		METRIC_INC(s->m.client_denied);
		t->keep_alive = false;
		n->client_ops->refuse(t, 403, SQ_TCP_DENIED,
		    "access denied: your address is not in the allow list",
		    true);
		return -1;
	}
	/* everything below may finish (and even close) synchronously; a
	 * CONNECT may hand the socket to a tunnel (c is then dead) */
	n->client_ops->start(t);
	return 1;
}

/* How long c may wait for its next request: idle_timeout between
 * requests; header_timeout for the first after an intercepted CONNECT
 * while its handshake runs (a stalled handshake was held 60 s). */
static uint32_t
next_request_ms(const struct client *c)
{
	const struct conf *conf = &c->w->node->conf;

	return c->tls != NULL && !tls_conn_handshaken(c->tls) ?
	    conf->header_timeout_ms : conf->idle_timeout_ms;
}

static void
client_next_request(struct client *c)
{
	c->in_loop = true;
	while (!c->dead && c->txn == NULL && !c->closing &&
	    evbuffer_get_length(client_out(c)) < CLIENT_OUT_HIGH) {
		int rc = parse_one(c);
		if (rc == 0 && !c->dead) {
			if (!c->head_started)
				timer_set(c, next_request_ms(c));
			break;
		}
		if (rc < 0)
			break;
		/* a transaction still running keeps the loop waiting;
		 * client_txn_done() restarts it */
	}
	/* parsing waits for the client to read its answers: so does
	 * reading, once a head's worth of requests is waiting */
	if (!c->dead && !c->closing && c->txn == NULL) {
		bool full = evbuffer_get_length(bufferevent_get_input(c->bev)) >
		    input_cap(c);
		bool reading = bufferevent_get_enabled(c->bev) & EV_READ;
		if (full && reading)
			bufferevent_disable(c->bev, EV_READ);
		else if (!full && !reading)
			bufferevent_enable(c->bev, EV_READ);
	}
	c->in_loop = false;
	if (c->dead)
		client_free(c);
	else if (c->closing && evbuffer_get_length(client_out(c)) == 0)
		client_close_now(c);
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct client *c = SC_CAST(struct client, arg, CLIENT_MAGIC);
	struct txn *t = c->txn;

	(void)bev;
	if (c->closing) {
		evbuffer_drain(bufferevent_get_input(c->bev), (size_t)-1);
		return;
	}
	if (t == NULL) {
		client_next_request(c);
		return;
	}
	if (t->body_unread) {
		if (!c->body_deadline)
			timer_set(c, c->w->node->conf.idle_timeout_ms);
		/* the body may finish the transaction here (a summary POST
		 * is answered at once) and even close the connection: hold
		 * c as the parse loop does, and look at c->txn afresh */
		c->in_loop = true;
		enum body_feed rc = client_feed_body(c);
		c->in_loop = false;
		if (c->dead) {
			client_free(c);
			return;
		}
		if (c->closing && evbuffer_get_length(client_out(c)) == 0) {
			client_close_now(c);
			return;
		}
		if (rc == BODY_FEED_FAILED || c->closing)
			return;
		if (c->txn == NULL)
			client_next_request(c);  /* pipelined, or idle */
		return;
	}
	/* the next pipelined request waits; stop reading once it is a full
	 * head's worth so a flood cannot grow the buffer */
	if (evbuffer_get_length(bufferevent_get_input(c->bev)) > input_cap(c))
		bufferevent_disable(c->bev, EV_READ);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct client *c = SC_CAST(struct client, arg, CLIENT_MAGIC);

	(void)bev;
	if (c->closing) {
		if (evbuffer_get_length(client_out(c)) == 0)
			client_close_now(c);
		return;
	}
	if (c->txn != NULL)
		c->w->node->client_ops->drained(c->txn);
	else
		client_next_request(c);
}

/* The client left (or its socket failed) in the middle of t: t is
 * logged as Squid logs it, CODE_ABORTED, and counted as what it was
 * becoming; one still waiting for its answer was a miss. */
static void
client_left(struct client *c, struct txn *t)
{
	METRIC_INC(c->w->m.client_aborts);
	t->cut = CUT_ABORTED;
	if (t->result == RESULT_INTERNAL && t->url.norm != NULL) {
		t->result = RESULT_MISS;
		if (t->code == SQ_NONE_NONE)
			t->code = SQ_TCP_MISS;
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct client *c = SC_CAST(struct client, arg, CLIENT_MAGIC);

	/* under TLS: the handshake's end goes on; its failure is counted,
	 * and the alert the layer wrote goes to the client before the
	 * close (it was thrown away with the socket: every refusal looked
	 * like "unexpected eof" to the client) */
	switch (c->tls != NULL ? tls_conn_event(&c->w->node->conf, c->tls, bev,
	    what, mono_ms()) : TLS_EVENT_END) {
	case TLS_EVENT_DONE:
		return;
	case TLS_EVENT_FAILED:
		/* the layer has failed: nothing more of it is heard (its
		 * events after the failure freed the connection under its
		 * own callbacks), and the alert's write has a second */
		c->closing = true;
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
		timer_set(c, 1000);
		client_free_when_written(c, bufferevent_get_output(
		    bufferevent_get_underlying(bev)));
		return;
	case TLS_EVENT_END:
		break;
	}
	/* a write that ended (0) or failed with EIO was a file's read: the
	 * disk body being sent is cut, and its record is checked again */
	if ((what & BEV_EVENT_WRITING) && ((what & BEV_EVENT_EOF) ||
	    EVUTIL_SOCKET_ERROR() == EIO) && c->sent.failed != NULL)
		c->sent.failed(&c->sent);
	if (c->txn != NULL && !c->closing)
		client_left(c, c->txn);
	client_free(c);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = SC_CAST(struct client, arg, CLIENT_MAGIC);
	struct txn *t;

	(void)fd;
	(void)what;
	if (c->closing) {
		/* a failed handshake's alert did not go in its time */
		if (c->linger != NULL)
			client_free(c);
		return;
	}
	if (c->txn != NULL) {
		/* a request body stalled, or missed its deadline: a peer's
		 * summary is counted as such, anything else is the client's
		 * abort */
		if (!c->w->node->client_ops->stalled(c->txn))
			client_left(c, c->txn);
		client_free(c);
		return;
	}
	if (!c->head_started) {
		client_free(c); /* idle keep-alive connection */
		return;
	}
	METRIC_INC(c->w->m.header_timeouts);
	if ((t = c->w->node->client_ops->make(c)) == NULL) {
		client_free(c);
		return;
	}
	client_reject(c, t, 408, "request head not received in time");
}

bool
client_accept(struct worker *s, evutil_socket_t fd, const struct sockaddr *sa)
{
	/* responses go out as soon as they are queued: with Nagle on, the
	 * tail of a response waits for the client's delayed ACK (40 ms) */
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct bufferevent *bev = bufferevent_socket_new(s->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		evutil_closesocket(fd);
		return false;
	}
	return client_attach(s, bev, sa);
}

/* c reads and writes through bev from now on: its socket's, or the TLS
 * layer's over it (which took the socket's bufferevent over). */
static void
use_bev(struct client *c, struct bufferevent *bev)
{
	struct timeval wto = tv_ms(c->w->node->conf.idle_timeout_ms);

	/* a TLS layer writes what a reply appended from the loop, once the
	 * reply is whole; called at each append (libevent's way), it made
	 * each of a head's pieces a record of its own */
	if (c->tls != NULL)
		evbuffer_defer_callbacks(bufferevent_get_output(bev),
		    c->w->base);
	c->bev = bev;
	bufferevent_setcb(bev, on_read, on_write, on_event, c);
	/* libevent writes 16 KB per call by default; a hit of a few hundred
	 * KB should leave in one writev */
	bufferevent_set_max_single_write(bev, 4 * CLIENT_OUT_HIGH);
	bufferevent_set_max_single_read(bev, CLIENT_READ_CHUNK);
	bufferevent_setwatermark(bev, EV_WRITE, CLIENT_OUT_HIGH / 4, 0);
	bufferevent_set_timeouts(bev, NULL, &wto);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

bool
client_attach(struct worker *s, struct bufferevent *bev,
    const struct sockaddr *sa)
{
	struct node *n = s->node;
	struct client *c = calloc(1, sizeof(*c));

	if (c == NULL || (c->timer = evtimer_new(s->base, on_timer, c)) ==
	    NULL) {
		bufferevent_free(bev);
		free(c);
		return false;
	}
	c->magic = CLIENT_MAGIC;
	c->w = s;
	c->wr = &h1_writer;
	c->bev = NULL;
	c->accepted_us = mono_us();
	/* configured peers may always talk to us: summaries and sibling
	 * requests come from them */
	c->allowed = acl_allows(&n->conf.allow, sa) ||
	    (n->peers != NULL && peers_by_addr(n->peers, sa) != NULL);
	memcpy(&c->sa, sa, sa->sa_family == AF_INET6 ?
	    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    c->addr, sizeof(c->addr));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)sa)->sin6_addr, c->addr,
		    sizeof(c->addr));
	else
		strcpy(c->addr, "-");
	c->next = s->clients;
	if (s->clients)
		s->clients->prev = c;
	else
		oldest_is(s, c);
	s->clients = c;
	METRIC_INC(s->m.client_connections);
	METRIC_INC(s->m.active_clients);
	use_bev(c, bev);
	/* a connection that never sends a byte is closed quietly */
	timer_set(c, n->conf.header_timeout_ms);
	return true;
}

int
client_start_tls(struct client *c, const char *host, uint16_t port,
    char *err, size_t elen)
{
	struct bufferevent *plain = c->bev;
	struct bufferevent *bev = tls_server_wrap(c->w->node->tls, c->w->base,
	    plain, c->addr, host, port, &c->w->m, &c->tls, err, elen);

	if (bev == NULL)
		return -1;
	/* the layer encrypts what its socket has room for, no more: with
	 * no mark it encrypted a whole body at once, and a slow client of a
	 * 100 MB hit had the node hold 100 MB of its ciphertext */
	bufferevent_setwatermark(plain, EV_WRITE, CLIENT_OUT_HIGH / 4,
	    CLIENT_OUT_HIGH);
	use_bev(c, bev);
	return 0;
}

const char *
client_tls_authority(const struct client *c)
{
	return c->tls != NULL ? tls_conn_authority(c->tls) : NULL;
}

bool
client_on_link(const struct client *c)
{
	return c->tls != NULL && tls_conn_is_link(c->tls);
}

struct bufferevent *
client_detach(struct client *c)
{
	struct bufferevent *bev = c->bev;

	/* nothing of c may be reached from the socket once c is gone */
	c->bev = NULL;
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	c->slot_moved = true;
	client_free(c);
	return bev;
}

/* A connection whose client has had every answer and sent nothing more. */
static bool
idle_keep_alive(struct client *c)
{
	return c->served && c->txn == NULL && !c->head_started &&
	    evbuffer_get_length(client_out(c)) == 0;
}

bool
client_make_room(struct worker *s, uint64_t *retry_ms)
{
	struct client *c = s->oldest_client, *slow = NULL;
	uint64_t now = mono_ms();

	*retry_ms = CLIENT_HEAD_GRACE_MS;
	/* newest first in the list: from its tail, the longest-open ones
	 * (the newest too: one just accepted is in its grace, but on a
	 * worker asked by another it may be the node's oldest idle one) */
	for (int i = 0; i < IDLE_SCAN_MAX && c != NULL; i++, c = c->prev) {
		if (c->closing || c->in_loop || c->txn != NULL)
			continue;
		if (idle_keep_alive(c))
			break;
		if (c->served || slow != NULL)
			continue;
		uint64_t age = now - c->accepted_us / 1000;
		if (age >= CLIENT_HEAD_GRACE_MS)
			slow = c;
		else if (CLIENT_HEAD_GRACE_MS - age < *retry_ms)
			*retry_ms = CLIENT_HEAD_GRACE_MS - age;
	}
	if (c == NULL || !idle_keep_alive(c))
		c = slow;
	if (c == NULL)
		return false;
	METRIC_INC(s->m.idle_closed_at_limit);
	client_free(c);
	return true;
}

void
client_drain_all(struct worker *s)
{
	struct client *c = s->clients, *next;

	for (; c != NULL; c = next) {
		next = c->next;
		if (c->txn == NULL && !c->closing)
			client_close_after_output(c);
	}
}

void
client_free_all(struct worker *s)
{
	while (s->clients != NULL)
		client_free(s->clients);
}
