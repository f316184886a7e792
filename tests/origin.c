/*
 * test-origin: a small HTTP/1.1 origin for sumcache's integration tests,
 * shaped by the request path so each test gets exactly the response it
 * needs, and counting what it receives (GET /__log).
 *
 *   /obj/NAME?max_age=N&size=N&etag=1&lm=1&nostore=1&private=1&cc=no-cache
 *            &status=N&age=V&expires=lower&pause=MS&gen=1&chunked=1
 *                    deterministic body (NAME over and over); answers
 *                    304 to a matching If-None-Match, 206 to a Range of
 *                    one "a-b" or "a-"; a 304 carries X-Revalidated: N;
 *                    status N instead of 200, "Age: V", an Expires an
 *                    hour ahead spelt in lower case; with pause, the
 *                    second half of the body MS ms after the first;
 *                    with gen=1 the ETag changes with each /__bump;
 *                    with chunked=1 (a 200, no pause) the body goes in
 *                    4 KB chunks, no Content-Length
 *   any path?delay=MS
 *                    the response after MS ms (logged then)
 *   any path?delay=MS&drop=close|reset
 *                    no response: after MS ms the connection is closed,
 *                    or reset (logged then)
 *   /vary/NAME       Vary: Accept-Language, body names the language
 *   /echo            the request body back, X-Method, X-Body-Length,
 *                    X-Request-Chunked
 *   /big?size=N&max_age=N&gen=1&chunked=1
 *                    N bytes streamed as fast as the peer reads them;
 *                    no-store unless max_age is given; with gen=1 the
 *                    bytes change with each /__bump; with chunked=1 in
 *                    64 KB chunks, no Content-Length
 *   /te?coding=C     a body sent with "Transfer-Encoding: C" (raw bytes)
 *   /cut?size=N&at=M Content-Length N, then M bytes and a close
 *   /steady?size=N&parts=P&step=MS&stall=K&max_age=N
 *                    Content-Length N, the body in P parts, one every MS
 *                    ms (the first at once); with stall=K, nothing
 *                    more after K parts (the connection held open);
 *                    no-store unless max_age is given
 *   /extra?size=N&after=MS&junk=1
 *                    a cacheable answer of Content-Length N followed by
 *                    more than it said: a whole second response (a
 *                    cacheable "POISON"), or with junk=1 bytes that are
 *                    none; sent with the body, or MS ms after it
 *   /slow?ms=N       the response after N ms
 *   /hints           a 103 Early Hints, then 200
 *   /chunked         a chunked response
 *   /headers         the request head as received, in the body; the
 *                    response carries hop-by-hop fields a proxy must drop
 *   /squid-internal-periodic/store_digest
 *                    a Cache Digest Squid would refuse (3 hash functions)
 *   /__log           one line per request received: METHOD TARGET
 *                    [range=RANGE] COND
 *   /__conns         how many connections were accepted
 *   /__open          how many are open now (this one included)
 *   /__bump          a new generation of /big?gen=1 bodies and
 *                    /obj/?gen=1 ETags
 *   /__status?code=N /obj/ answers status N from now on (0: as asked)
 *   /__drop?how=H    /obj/ requests are logged and never answered from
 *                    now on: the connection closed (H close) or reset
 *                    (H reset); H none: answered again
 *
 * With TLSPORT CERT KEY it also answers the same paths over TLS on
 * TLSPORT, with that certificate (the https tests' origin: one request
 * log for both, read over the plain port).
 *
 * Uses sumcache's own request parser: this is test equipment, not a model
 * of robustness. This file is the server (connections, reading requests,
 * ?delay=, ?drop=, /__drop, /slow, TLS); what each path answers is
 * origin_paths.c's.
 */
#include "origin.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

struct event_base *base;
struct evbuffer *reqlog;
unsigned revalidations;
unsigned connections;
unsigned open_conns;
unsigned generation;
long forced_status;  /* /__status */
char forced_drop[8]; /* /__drop: "close", "reset" or "" */

void
conn_free(struct conn *c)
{
	http_head_clear(&c->req);
	if (c->delay)
		event_free(c->delay);
	if (c->resume)
		event_free(c->resume);
	if (c->steady)
		event_free(c->steady);
	if (c->rest)
		evbuffer_free(c->rest);
	evbuffer_free(c->body);
	bufferevent_free(c->bev);
	free(c);
	open_conns--;
}


static void finish_request(struct conn *c);
static void on_read(struct bufferevent *bev, void *arg);

/* ?drop=: the request is logged, and never answered. */
static void
drop(struct conn *c, bool reset)
{
	evbuffer_add_printf(reqlog, "%.*s %.*s 0\n", (int)c->req.method_len,
	    c->req.method, (int)c->req.target_len, c->req.target);
	if (reset) {
		struct linger l = {1, 0};
		setsockopt(bufferevent_getfd(c->bev), SOL_SOCKET, SO_LINGER, &l,
		    sizeof(l));
	}
	conn_free(c);
}

static void
on_delay(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char how[16];
	(void)fd;
	(void)what;
	if (qstr(c, "drop", how, sizeof(how)) != NULL) {
		drop(c, strcmp(how, "reset") == 0);
		return;
	}
	if (forced_drop[0] != '\0' && strncmp(c->path, "/obj/", 5) == 0) {
		drop(c, strcmp(forced_drop, "reset") == 0);
		return;
	}
	if (strcmp(c->path, "/slow") != 0) {
		c->delayed = true;
		finish_request(c);
		on_read(c->bev, c);
		return;
	}
	evbuffer_add_printf(bufferevent_get_output(c->bev), "HTTP/1.1 200 OK"
	    "\r\nContent-Length: 4\r\n\r\nslow");
	c->have_head = false;
	http_head_clear(&c->req);
}

static void
finish_request(struct conn *c)
{
	if (strcmp(c->path, "/slow") == 0) {
		long ms = qparam(c, "ms", 1000);
		struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
		evbuffer_add_printf(reqlog, "%.*s %.*s 0\n",
		    (int)c->req.method_len, c->req.method,
		    (int)c->req.target_len, c->req.target);
		if (c->delay == NULL)
			c->delay = evtimer_new(base, on_delay, c);
		evtimer_add(c->delay, &tv);
		return;
	}
	long delay = qparam(c, "delay", 0);
	if (c->delay != NULL && evtimer_pending(c->delay, NULL))
		return;
	/* /__drop: off this callback, which goes on reading c */
	if (forced_drop[0] != '\0' && strncmp(c->path, "/obj/", 5) == 0 &&
	    delay == 0)
		delay = 1;
	if (delay > 0 && !c->delayed) {
		struct timeval tv = {delay / 1000, (delay % 1000) * 1000};
		if (c->delay == NULL)
			c->delay = evtimer_new(base, on_delay, c);
		evtimer_add(c->delay, &tv);
		return;
	}
	c->delayed = false;
	/* a client that asks for the close gets it: the harness's own
	 * requests (GET /__log) then end at once, not at their timeout */
	const struct http_field *cf = http_field_find(&c->req, "connection");
	if (cf != NULL && http_token_eq(cf->value, cf->vlen, "close"))
		c->close_after = true;
	respond(c);
	c->have_head = false;
	http_head_clear(&c->req);
	evbuffer_drain(c->body, evbuffer_get_length(c->body));
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	while (evbuffer_get_length(in) > 0) {
		if (!c->have_head) {
			if (c->delay && evtimer_pending(c->delay, NULL))
				return;
			size_t len = evbuffer_get_length(in), scan = 0;
			const char *p = (const char *)evbuffer_pullup(in, -1);
			size_t end = http_head_end(p, len, &scan);
			const char *why;
			struct http_limits lim = {65536, 65536, 1000};
			if (end == 0)
				return;
			if (end == HTTP_HEAD_BARE_LF ||
			    http_parse_request(p, end, &lim, &c->req, &why) < 0) {
				why = end == HTTP_HEAD_BARE_LF ? "bare LF" : why;
				fprintf(stderr, "origin: bad request: %s\n", why);
				conn_free(c);
				return;
			}
			evbuffer_drain(in, end);
			c->have_head = true;
			c->chunked_req = c->req.chunked;
			memset(&c->ch, 0, sizeof(c->ch));
			c->body_left = c->req.content_length > 0 ?
			    (uint64_t)c->req.content_length : 0;
			size_t tl = c->req.target_len;
			const char *q = memchr(c->req.target, '?', tl);
			size_t pl = q ? (size_t)(q - c->req.target) : tl;
			snprintf(c->path, sizeof(c->path), "%.*s", (int)pl,
			    c->req.target);
			snprintf(c->query, sizeof(c->query), "%.*s",
			    q ? (int)(tl - pl - 1) : 0, q ? q + 1 : "");
		}
		if (c->chunked_req) {
			const char *p = (const char *)evbuffer_pullup(in, -1);
			const char *data, *why;
			size_t dlen;
			ssize_t used = http_chunked_feed(&c->ch, p,
			    evbuffer_get_length(in), &data, &dlen, &why);
			if (used < 0) {
				conn_free(c);
				return;
			}
			evbuffer_add(c->body, data, dlen);
			evbuffer_drain(in, (size_t)used);
			if (!http_chunked_done(&c->ch))
				continue;
		} else if (c->body_left > 0) {
			size_t n = evbuffer_get_length(in);
			if (n > c->body_left)
				n = (size_t)c->body_left;
			evbuffer_remove_buffer(in, c->body, n);
			c->body_left -= n;
			if (c->body_left > 0)
				return;
		}
		finish_request(c);
	}
	if (c->have_head && !c->chunked_req && c->body_left == 0 &&
	    strcmp(c->path, "/slow") != 0)
		finish_request(c);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	static char chunk[65536];

	while (c->big_left > 0 &&
	    evbuffer_get_length(bufferevent_get_output(bev)) < 262144) {
		size_t n = c->big_left < sizeof(chunk) ? c->big_left :
		    sizeof(chunk);
		fill(chunk, n, c->big_fill, 0);
		if (c->big_chunked)
			evbuffer_add_printf(bufferevent_get_output(bev),
			    "%zx\r\n", n);
		bufferevent_write(bev, chunk, n);
		c->big_left -= n;
		if (c->big_chunked)
			evbuffer_add_printf(bufferevent_get_output(bev),
			    "\r\n%s", c->big_left == 0 ? "0\r\n\r\n" : "");
	}
	if (c->close_after && evbuffer_get_length(bufferevent_get_output(bev))
	    == 0)
		conn_free(c);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	/* a TLS connection says its handshake is done: not an end */
	if (what & BEV_EVENT_CONNECTED)
		return;
	conn_free(arg);
}

/* arg: the TLS listener's SSL_CTX, or NULL for plain HTTP */
static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct conn *c = calloc(1, sizeof(*c));
	SSL_CTX *tls = arg;
	(void)l;
	(void)sa;
	(void)salen;
	if (tls != NULL)
		c->bev = bufferevent_openssl_socket_new(base, fd, SSL_new(tls),
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	else
		c->bev = bufferevent_socket_new(base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
	c->body = evbuffer_new();
	connections++;
	open_conns++;
	c->req.content_length = -1;
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, 65536, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void
on_term(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	event_base_loopbreak(base);
}

static struct evconnlistener *
listen_on(const char *port, SSL_CTX *tls)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct evconnlistener *l;

	sin.sin_port = htons((uint16_t)atoi(port));
	sin.sin_addr.s_addr = htonl(0x7f000001);
	l = evconnlistener_new_bind(base, on_accept, tls,
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 128,
	    (struct sockaddr *)&sin, sizeof(sin));
	if (l == NULL) {
		perror("test-origin: listen");
		exit(1);
	}
	return l;
}

static SSL_CTX *
tls_ctx(const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "test-origin: cannot use %s and %s\n", cert,
		    key);
		exit(1);
	}
	return ctx;
}

int
main(int argc, char **argv)
{
	SSL_CTX *tls = NULL;
	struct evconnlistener *tl = NULL;

	if (argc != 2 && argc != 5) {
		fprintf(stderr, "usage: test-origin PORT [TLSPORT CERT KEY]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	reqlog = evbuffer_new();
	struct evconnlistener *l = listen_on(argv[1], NULL);
	if (argc == 5) {
		tls = tls_ctx(argv[3], argv[4]);
		tl = listen_on(argv[2], tls);
	}
	struct event *term = evsignal_new(base, SIGTERM, on_term, NULL);
	evsignal_add(term, NULL);
	event_base_dispatch(base);
	event_free(term);
	evconnlistener_free(l);
	if (tl != NULL)
		evconnlistener_free(tl);
	SSL_CTX_free(tls);
	evbuffer_free(reqlog);
	event_base_free(base);
	return 0;
}
