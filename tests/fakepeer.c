/*
 * test-peer: a peer that misbehaves on purpose, for the e2e tests of what
 * a node must absorb from a peer it trusts (it holds the cluster key).
 *
 *   test-peer PORT KEYFILE NAME OBJECTS DELAY_MS ANSWER_BYTES [CERT KEY]
 *
 *   GET /sumcache/v1/summary   a validly signed full summary from NAME
 *                              whose every bit is set: it claims every URL
 *   POST /sumcache/v1/...      (a push, an invalidation) answered 200 with
 *                              ANSWER_BYTES of forged access-log lines, or
 *                              204 when 0 (or "slow")
 *   GET /__count               how many object requests came, as text
 *   anything else              an object request, as OBJECTS says:
 *                              "false"  504 (it has no copy) after DELAY_MS
 *                              "hang"   never answered
 *                              "slow"   200, a body of ANSWER_BYTES in
 *                                       ten parts, one every DELAY_MS
 *
 * With CERT and KEY (PEM files), a connection whose first byte opens a
 * TLS handshake (a node's peer link) is answered over TLS with that
 * certificate; what comes through it is served (and counted) as above.
 *
 * Listens on 127.0.0.1. Test equipment: no model of robustness.
 */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "psum.h"
#include "wire.h"

struct conn {
	struct bufferevent *bev;
	struct event *delay;
	size_t body_left;   /* of a POST's body, still to read */
	bool answered;      /* its request is in */
	bool replied;       /* its answer is queued: close once it is out */
	size_t slow_left;   /* "slow": body bytes still to send */
	bool first_read;    /* its first bytes were looked at (TLS?) */
};

static struct event_base *base;
static char key[256];
static char name[64];
static bool hang, slow;
static long delay_ms;
static size_t answer_bytes;
static unsigned objects_asked;
static struct sum_buf summary;
static SSL_CTX *tls;        /* links: CERT and KEY, or NULL */

static void
conn_free(struct conn *c)
{
	if (c->delay != NULL)
		event_free(c->delay);
	bufferevent_free(c->bev);
	free(c);
}

static void
reply(struct conn *c, const char *status, const char *ctype,
    const void *body, size_t len)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);

	c->replied = true;
	evbuffer_add_printf(out, "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n\r\n", status, ctype, len);
	evbuffer_add(out, body, len);
}

/* "slow": the next tenth of the body */
static void
slow_part(struct conn *c)
{
	static const char fill[] = "slowpeer";
	struct evbuffer *out = bufferevent_get_output(c->bev);
	size_t part = (answer_bytes + 9) / 10, sent = answer_bytes -
	    c->slow_left;

	for (size_t i = 0; i < part && c->slow_left > 0; i++, c->slow_left--)
		evbuffer_add(out, &fill[(sent + i) % (sizeof(fill) - 1)], 1);
	c->replied = c->slow_left == 0;
}

static void
on_delay(evutil_socket_t fd, short what, void *arg)
{
	static const char no[] = "no copy\n";
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (!slow) {
		reply(c, "504 Gateway Timeout", "text/plain", no,
		    sizeof(no) - 1);
		return;
	}
	slow_part(c);
	if (c->slow_left > 0) {
		struct timeval tv = {delay_ms / 1000, delay_ms % 1000 * 1000};
		evtimer_add(c->delay, &tv);
	}
}

/* ANSWER_BYTES of lines a log reader would take for the node's own. */
static void
flood(struct conn *c)
{
	static const char line[] = "1700000000.000      0 6.6.6.6 TCP_HIT/200 1"
	    " GET http://forged.example/ - HIER_NONE/- text/plain\n";
	struct evbuffer *out = bufferevent_get_output(c->bev);

	c->replied = true;
	/* "slow": ANSWER_BYTES is the objects' size */
	if (answer_bytes == 0 || slow) {
		evbuffer_add_printf(out, "HTTP/1.1 204 No Content\r\n\r\n");
		return;
	}
	evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain"
	    "\r\nContent-Length: %zu\r\n\r\n", answer_bytes);
	for (size_t n = 0; n < answer_bytes; n += sizeof(line) - 1)
		evbuffer_add(out, line, answer_bytes - n < sizeof(line) - 1 ?
		    answer_bytes - n : sizeof(line) - 1);
}

static void
request(struct conn *c, const char *method, const char *target)
{
	char text[32];

	if (strcmp(target, "/__count") == 0) {
		int n = snprintf(text, sizeof(text), "%u\n", objects_asked);
		reply(c, "200 OK", "text/plain", text, (size_t)n);
	} else if (strcmp(method, "GET") == 0 &&
	    strcmp(target, "/sumcache/v1/summary") == 0) {
		reply(c, "200 OK", "application/x-protobuf", summary.p,
		    summary.len);
	} else if (strcmp(method, "POST") == 0) {
		flood(c);
	} else {
		objects_asked++;
		if (hang)
			return;
		struct timeval tv = {delay_ms / 1000, delay_ms % 1000 * 1000};
		c->delay = evtimer_new(base, on_delay, c);
		if (slow) {
			evbuffer_add_printf(bufferevent_get_output(c->bev),
			    "HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\n"
			    "Content-Length: %zu\r\n\r\n", answer_bytes);
			c->slow_left = answer_bytes;
			slow_part(c);
		}
		evtimer_add(c->delay, &tv);
	}
}

static void on_read(struct bufferevent *bev, void *arg);
static void on_write(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);

/* A link's TLS handshake in the first bytes: the connection goes on
 * through a TLS layer over its socket (which still holds those bytes). */
static bool
over_tls(struct conn *c)
{
	unsigned char first;
	struct bufferevent *layer;

	if (tls == NULL || evbuffer_copyout(bufferevent_get_input(c->bev),
	    &first, 1) != 1 || first != 0x16)
		return false;
	layer = bufferevent_openssl_filter_new(base, c->bev, SSL_new(tls),
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(layer, on_read, on_write, on_event, c);
	bufferevent_enable(layer, EV_READ | EV_WRITE);
	/* the handshake's first record is read already: no new event */
	bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS |
	    BEV_TRIG_DEFER_CALLBACKS);
	c->bev = layer;
	return true;
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (!c->first_read) {
		c->first_read = true;
		if (over_tls(c))
			return;   /* the layer reads on */
	}

	if (c->body_left > 0) {
		size_t n = evbuffer_get_length(in) < c->body_left ?
		    evbuffer_get_length(in) : c->body_left;
		evbuffer_drain(in, n);
		c->body_left -= n;
		return;
	}
	if (c->answered)
		return;
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (end.pos < 0)
		return;
	size_t hlen = (size_t)end.pos + 4;
	char *head = malloc(hlen + 1);
	evbuffer_remove(in, head, hlen);
	head[hlen] = '\0';
	char method[16] = "", target[2048] = "";
	sscanf(head, "%15s %2047s", method, target);
	const char *cl = strcasestr(head, "\r\ncontent-length:");
	if (cl != NULL)
		c->body_left = strtoul(cl + 17, NULL, 10);
	free(head);
	size_t have = evbuffer_get_length(in) < c->body_left ?
	    evbuffer_get_length(in) : c->body_left;
	evbuffer_drain(in, have);
	c->body_left -= have;
	c->answered = true;  /* one request a connection */
	request(c, method, target);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	(void)bev;
	if (c->replied)
		conn_free(c);  /* everything is written: close */
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	conn_free(arg);
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct conn *c = calloc(1, sizeof(*c));

	(void)l;
	(void)sa;
	(void)salen;
	(void)arg;
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* A full summary from name with every bit of a small filter set. */
static void
make_summary(void)
{
	enum { M = 4096 };
	uint64_t bits[M / 64];
	struct sum_buf payload = {0};

	memset(bits, 0xff, sizeof(bits));
	if (sum_encode_full(bits, M, &payload) < 0)
		exit(1);
	struct wire_summary w = {.epoch = 1, .seq = 1, .scheme = SUM_XXH3,
	    .m = M, .k = 4, .full = true, .payload = payload.p,
	    .payload_len = payload.len, .checksum = sum_checksum(bits, M),
	    .entries = 1};
	snprintf(w.sender, sizeof(w.sender), "%s", name);
	if (wire_encode(&w, (const uint8_t *)key, strlen(key), &summary) < 0)
		exit(1);
	free(payload.p);
}

static void
on_term(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	event_base_loopexit(base, NULL);
}

int
main(int argc, char **argv)
{
	if (argc != 7 && argc != 9) {
		fprintf(stderr, "usage: test-peer PORT KEYFILE NAME false|hang|slow "
		    "DELAY_MS ANSWER_BYTES [CERT KEY]\n");
		return 2;
	}
	if (argc == 9 && ((tls = SSL_CTX_new(TLS_server_method())) == NULL ||
	    SSL_CTX_use_certificate_chain_file(tls, argv[7]) != 1 ||
	    SSL_CTX_use_PrivateKey_file(tls, argv[8], SSL_FILETYPE_PEM) != 1))
		return 1;
	FILE *f = fopen(argv[2], "r");
	if (f == NULL || fgets(key, sizeof(key), f) == NULL)
		return 1;
	fclose(f);
	key[strcspn(key, "\n")] = '\0';
	snprintf(name, sizeof(name), "%s", argv[3]);
	hang = strcmp(argv[4], "hang") == 0;
	slow = strcmp(argv[4], "slow") == 0;
	delay_ms = strtol(argv[5], NULL, 10);
	answer_bytes = strtoul(argv[6], NULL, 10);
	make_summary();

	signal(SIGPIPE, SIG_IGN);
	base = event_base_new();
	struct sockaddr_in sin = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)atoi(argv[1]))};
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	struct evconnlistener *l = evconnlistener_new_bind(base, on_accept,
	    NULL, LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE, 64,
	    (struct sockaddr *)&sin, sizeof(sin));
	if (l == NULL)
		return 1;
	struct event *term = evsignal_new(base, SIGTERM, on_term, NULL);
	evsignal_add(term, NULL);
	event_base_dispatch(base);
	event_free(term);
	evconnlistener_free(l);
	event_base_free(base);
	free(summary.p);
	return 0;
}
