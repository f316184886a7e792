/*
 * tls-load: a load generator for forward proxies that intercept TLS, which
 * wrk cannot drive (it does not speak CONNECT). One thread, libevent and
 * OpenSSL, CONNS connections at once against a proxy on 127.0.0.1:
 *
 *   tls-load MODE PROXY_PORT HOST:PORT PATH CAFILE CONNS SECONDS
 *
 *   plain    "GET https-less": absolute-form GET http://HOST:PORT/PATH on
 *            keep-alive connections to the proxy (its plain-http hit rate,
 *            measured by the same client)
 *   tls      CONNECT HOST:PORT, TLS to the proxy's certificate for HOST
 *            (verified against CAFILE), then GET PATH over and over on
 *            that connection
 *   connect  the same with one request per connection: a new CONNECT and
 *            a full handshake (no session resumption) each time
 *
 * Prints one line: "MODE requests N rps R p50_ms A p99_ms B errors E
 * client_busy F" (in connect mode a request is a whole connection; F is
 * the share of one core tls-load itself used, near 1 when the client,
 * not the proxy, set the rate). Every answer must be
 * a 200 with a Content-Length; anything else counts as an error and the
 * connection is replaced. Benchmark equipment, not a model of the proxy.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

enum mode { MODE_PLAIN, MODE_TLS, MODE_CONNECT };
enum state { ST_CONNECT_REPLY, ST_HANDSHAKE, ST_HEAD, ST_BODY };

#define HIST_US 2000000    /* latencies up to 2 s, per microsecond */

static struct {
	enum mode mode;
	struct event_base *base;
	SSL_CTX *ctx;
	struct sockaddr_in proxy;
	char host[256], authority[300], path[1024];
	char request[2048];
	size_t request_len;
	uint64_t done, errors;
	uint32_t *hist;
	bool stopping;
} g;

struct conn {
	struct bufferevent *bev;
	enum state state;
	uint64_t started_us;    /* of this request, or this connection */
	long long body_left;
};

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void conn_start(void);

static void
record(uint64_t started_us)
{
	uint64_t us = now_us() - started_us;

	g.hist[us < HIST_US ? us : HIST_US - 1]++;
	g.done++;
}

static void
conn_free(struct conn *c, bool failed)
{
	if (failed)
		g.errors++;
	bufferevent_free(c->bev);
	free(c);
	/* a proxy that answers nothing right is not measured: stop, rather
	 * than spin on new connections until the time is up */
	if (g.done == 0 && g.errors >= 1000) {
		g.stopping = true;
		event_base_loopexit(g.base, NULL);
	}
	if (!g.stopping)
		conn_start();
}

static void
send_request(struct conn *c)
{
	if (g.mode != MODE_CONNECT)
		c->started_us = now_us();
	c->state = ST_HEAD;
	bufferevent_write(c->bev, g.request, g.request_len);
}

/* The response is whole: the next request, or (connect) the next
 * connection. */
static void
response_done(struct conn *c)
{
	record(c->started_us);
	if (g.mode == MODE_CONNECT || g.stopping) {
		conn_free(c, false);
		return;
	}
	send_request(c);
}

static void on_read(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);

static void
start_tls(struct conn *c)
{
	SSL *ssl = SSL_new(g.ctx);

	SSL_set_tlsext_host_name(ssl, g.host);
	SSL_set1_host(ssl, g.host);
	struct bufferevent *tls = bufferevent_openssl_filter_new(g.base,
	    c->bev, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (tls == NULL) {
		conn_free(c, true);
		return;
	}
	c->bev = tls;
	c->state = ST_HANDSHAKE;
	bufferevent_setcb(tls, on_read, NULL, on_event, c);
	bufferevent_enable(tls, EV_READ | EV_WRITE);
}

/* A head in in: its status and Content-Length, drained; 0, or 1 when
 * more is needed, or -1 for an answer we do not take. */
static int
read_head(struct evbuffer *in, int *status, long long *length)
{
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);

	if (end.pos < 0)
		return evbuffer_get_length(in) > 65536 ? -1 : 1;
	size_t n = (size_t)end.pos + 4;
	char *h = (char *)evbuffer_pullup(in, (ev_ssize_t)n);
	char save = h[n - 1];
	h[n - 1] = '\0';
	*status = strncmp(h, "HTTP/1.", 7) == 0 ? atoi(h + 9) : -1;
	*length = -1;
	for (char *p = strchr(h, '\n'); p != NULL; p = strchr(p + 1, '\n'))
		if (strncasecmp(p + 1, "content-length:", 15) == 0)
			*length = atoll(p + 16);
	h[n - 1] = save;
	evbuffer_drain(in, n);
	return 0;
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	int status, rc;

	for (;;) {
		switch (c->state) {
		case ST_CONNECT_REPLY:
			if ((rc = read_head(in, &status, &c->body_left)) > 0)
				return;
			if (rc < 0 || status != 200) {
				conn_free(c, true);
				return;
			}
			start_tls(c);
			return;
		case ST_HANDSHAKE:
			return;
		case ST_HEAD:
			if ((rc = read_head(in, &status, &c->body_left)) > 0)
				return;
			if (rc < 0 || status != 200 || c->body_left < 0) {
				conn_free(c, true);
				return;
			}
			c->state = ST_BODY;
			break;
		case ST_BODY: {
			size_t have = evbuffer_get_length(in);
			size_t take = have < (size_t)c->body_left ? have :
			    (size_t)c->body_left;
			evbuffer_drain(in, take);
			c->body_left -= (long long)take;
			if (c->body_left > 0)
				return;
			response_done(c);
			return;
		}
		}
	}
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (what & BEV_EVENT_CONNECTED) {
		if (c->state == ST_HANDSHAKE) {
			send_request(c);
			return;
		}
		int one = 1;
		setsockopt(bufferevent_getfd(c->bev), IPPROTO_TCP,
		    TCP_NODELAY, &one, sizeof(one));
		if (g.mode == MODE_PLAIN) {
			send_request(c);
		} else {
			char req[600];
			int n = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1"
			    "\r\nHost: %s\r\n\r\n", g.authority, g.authority);
			c->state = ST_CONNECT_REPLY;
			bufferevent_write(c->bev, req, (size_t)n);
		}
		return;
	}
	while (bufferevent_get_openssl_error(c->bev) != 0)
		;
	conn_free(c, true);
}

static void
conn_start(void)
{
	struct conn *c = calloc(1, sizeof(*c));

	c->started_us = now_us();
	c->bev = bufferevent_socket_new(g.base, -1, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&g.proxy,
	    sizeof(g.proxy)) < 0)
		conn_free(c, true);
}

static void
on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	g.stopping = true;
	event_base_loopexit(g.base, NULL);
}

static double
percentile_ms(double p)
{
	uint64_t want = (uint64_t)(p * (double)g.done), seen = 0;

	if (g.done == 0)
		return 0;

	for (uint64_t us = 0; us < HIST_US; us++)
		if ((seen += g.hist[us]) > want)
			return (double)us / 1000.0;
	return (double)HIST_US / 1000.0;
}

int
main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: tls-load plain|tls|connect PROXY_PORT "
		    "HOST:PORT PATH CAFILE CONNS SECONDS\n");
		return 2;
	}
	int port = atoi(argv[2]), conns = atoi(argv[6]),
	    seconds = atoi(argv[7]);
	if (strcmp(argv[1], "plain") == 0)
		g.mode = MODE_PLAIN;
	else if (strcmp(argv[1], "tls") == 0)
		g.mode = MODE_TLS;
	else if (strcmp(argv[1], "connect") == 0)
		g.mode = MODE_CONNECT;
	else {
		fprintf(stderr, "tls-load: %s: the mode is plain, tls or "
		    "connect\n", argv[1]);
		return 2;
	}
	if (port <= 0 || port > 65535 || conns <= 0 || seconds <= 0 ||
	    strchr(argv[3], ':') == NULL) {
		fprintf(stderr, "tls-load: a port, HOST:PORT, and positive "
		    "CONNS and SECONDS, please\n");
		return 2;
	}
	g.proxy.sin_family = AF_INET;
	g.proxy.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.1", &g.proxy.sin_addr);
	snprintf(g.authority, sizeof(g.authority), "%s", argv[3]);
	snprintf(g.host, sizeof(g.host), "%.*s",
	    (int)strcspn(argv[3], ":"), argv[3]);
	snprintf(g.path, sizeof(g.path), "%s", argv[4]);
	g.request_len = (size_t)snprintf(g.request, sizeof(g.request),
	    g.mode == MODE_PLAIN ? "GET http://%2$s%1$s HTTP/1.1\r\n"
	    "Host: %2$s\r\n\r\n" : "GET %1$s HTTP/1.1\r\nHost: %2$s\r\n\r\n",
	    g.path, g.authority);
	g.hist = calloc(HIST_US, sizeof(*g.hist));
	g.base = event_base_new();
	g.ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_verify(g.ctx, SSL_VERIFY_PEER, NULL);
	/* every connect-mode handshake a full one */
	SSL_CTX_set_session_cache_mode(g.ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_options(g.ctx, SSL_OP_NO_TICKET);
	if (SSL_CTX_load_verify_locations(g.ctx, argv[5], NULL) != 1) {
		fprintf(stderr, "tls-load: cannot read %s\n", argv[5]);
		return 1;
	}
	struct timeval stop = {seconds, 0};
	event_base_once(g.base, -1, EV_TIMEOUT, on_stop, NULL, &stop);
	for (int i = 0; i < conns; i++)
		conn_start();
	event_base_dispatch(g.base);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double busy = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	printf("%s requests %llu rps %.0f p50_ms %.3f p99_ms %.3f errors "
	    "%llu client_busy %.2f\n", argv[1], (unsigned long long)g.done,
	    (double)g.done / seconds, percentile_ms(0.50),
	    percentile_ms(0.99), (unsigned long long)g.errors,
	    busy / seconds);
	return g.done > 0 ? 0 : 1;
}
