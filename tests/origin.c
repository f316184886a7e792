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
 * of robustness.
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "http_parse.h"

struct conn {
	struct bufferevent *bev;
	struct http_head req;
	bool have_head;
	bool chunked_req;
	uint64_t body_left;
	struct http_chunked ch;
	struct evbuffer *body;
	uint64_t big_left;   /* bytes of /big still to send */
	char big_fill[16];   /* and the pattern they repeat */
	bool big_chunked;    /* in chunks */
	bool close_after;    /* /cut: close once the output is sent */
	bool delayed;        /* ?delay= has passed: answer now */
	struct evbuffer *rest;  /* ?pause=: the body's second half */
	struct event *resume;
	struct event *delay;
	struct event *steady;    /* /steady: the next part */
	uint64_t steady_at, steady_size, steady_part;
	long steady_ms, steady_stall, steady_sent;
	char path[1024];
	char query[1024];
};

static struct event_base *base;
static struct evbuffer *reqlog;
static unsigned revalidations;
static unsigned connections;
static unsigned open_conns;
static unsigned generation;
static long forced_status;  /* /__status */
static char forced_drop[8]; /* /__drop: "close", "reset" or "" */

static long
qparam(const struct conn *c, const char *name, long dflt)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=", name);
	for (const char *p = c->query; p && *p;) {
		if (strncmp(p, key, strlen(key)) == 0)
			return strtol(p + strlen(key), NULL, 10);
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return dflt;
}

static const char *
qstr(const struct conn *c, const char *name, char *out, size_t len)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=", name);
	for (const char *p = c->query; p && *p;) {
		if (strncmp(p, key, strlen(key)) == 0) {
			size_t n = strcspn(p + strlen(key), "&");
			snprintf(out, len, "%.*s", (int)n, p + strlen(key));
			return out;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return NULL;
}

static void
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

static void
fill(char *buf, size_t n, const char *name, size_t offset)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < n; i++)
		buf[i] = name[(offset + i) % nl];
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	(void)what;
	bufferevent_write_buffer(c->bev, c->rest);
}

/* /steady's next part, and the timer for the one after */
static void
on_steady(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char chunk[65536];
	uint64_t n = c->steady_size - c->steady_at;
	(void)fd;
	(void)what;
	if (n > c->steady_part)
		n = c->steady_part;
	for (uint64_t done = 0; done < n;) {
		size_t k = n - done < sizeof(chunk) ? (size_t)(n - done) :
		    sizeof(chunk);
		fill(chunk, k, "steady", (size_t)(c->steady_at + done));
		bufferevent_write(c->bev, chunk, k);
		done += k;
	}
	c->steady_at += n;
	c->steady_sent++;
	if (c->steady_at == c->steady_size || (c->steady_stall > 0 &&
	    c->steady_sent >= c->steady_stall))
		return;
	struct timeval tv = {c->steady_ms / 1000, (c->steady_ms % 1000) * 1000};
	evtimer_add(c->steady, &tv);
}

/* A 200's head for a body of len bytes (chunked, when chunked), fresh
 * for max_age seconds (no-store when negative). */
static void
head_of_length(struct evbuffer *out, long max_age, uint64_t len,
    bool chunked)
{
	char cc[32] = "no-store", framing[48] = "Transfer-Encoding: chunked";

	if (max_age >= 0)
		snprintf(cc, sizeof(cc), "max-age=%ld", max_age);
	if (!chunked)
		snprintf(framing, sizeof(framing), "Content-Length: %llu",
		    (unsigned long long)len);
	evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: %s\r\n"
	    "%s\r\n\r\n", cc, framing);
}

static void
respond(struct conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	const struct http_field *inm = http_field_find(&c->req, "if-none-match");
	const struct http_field *ims =
	    http_field_find(&c->req, "if-modified-since");
	char date[64], tmp[256];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	const struct http_field *range = http_field_find(&c->req, "range");
	evbuffer_add_printf(reqlog, "%.*s %.*s %s%.*s%s%d\n",
	    (int)c->req.method_len, c->req.method, (int)c->req.target_len,
	    c->req.target, range ? "range=" : "", range ? (int)range->vlen : 0,
	    range ? range->value : "", range ? " " : "",
	    inm != NULL || ims != NULL);

	if (strcmp(c->path, "/__log") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: %zu"
		    "\r\n\r\n", evbuffer_get_length(reqlog));
		evbuffer_add_buffer_reference(out, reqlog);
		return;
	}
	if (strcmp(c->path, "/__bump") == 0) {
		generation++;
		evbuffer_add_printf(out, "HTTP/1.1 204 No Content\r\n"
		    "Cache-Control: no-store\r\n\r\n");
		return;
	}
	if (strcmp(c->path, "/__drop") == 0) {
		if (qstr(c, "how", forced_drop, sizeof(forced_drop)) == NULL ||
		    strcmp(forced_drop, "none") == 0)
			forced_drop[0] = '\0';
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: "
		    "0\r\n\r\n");
		return;
	}
	if (strcmp(c->path, "/__status") == 0) {
		forced_status = qparam(c, "code", 0);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: "
		    "0\r\n\r\n");
		return;
	}
	if (strcmp(c->path, "/__conns") == 0 ||
	    strcmp(c->path, "/__open") == 0) {
		int n = snprintf(tmp, sizeof(tmp), "%u", c->path[3] == 'c' ?
		    connections : open_conns);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: %d"
		    "\r\n\r\n%s", n, tmp);
		return;
	}
	if (strcmp(c->path, "/headers") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nConnection: "
		    "X-Internal\r\nX-Internal: secret\r\nKeep-Alive: "
		    "timeout=5\r\nX-Kept: yes\r\nContent-Length: %zu\r\n\r\n",
		    c->req.len);
		evbuffer_add(out, c->req.buf, c->req.len);
		return;
	}
	if (strncmp(c->path, "/obj/", 5) == 0) {
		long size = qparam(c, "size", 100);
		char etag[64] = "";
		if (qparam(c, "etag", 0))
			snprintf(etag, sizeof(etag), qparam(c, "gen", 0) ?
			    "\"%s-%ld.%u\"" : "\"%s-%ld\"", c->path + 5,
			    qparam(c, "version", 1), generation);
		if (!forced_status && inm != NULL && *etag &&
		    (size_t)inm->vlen == strlen(etag) &&
		    memcmp(inm->value, etag, inm->vlen) == 0) {
			revalidations++;
			/* the same freshness a 200 would carry */
			evbuffer_add_printf(out, "HTTP/1.1 304 Not Modified\r\n"
			    "Date: %s\r\nETag: %s\r\nX-Revalidated: %u\r\n",
			    date, etag, revalidations);
			if (qstr(c, "cc", tmp, sizeof(tmp)))
				evbuffer_add_printf(out, "Cache-Control: %s\r\n"
				    "\r\n", tmp);
			else
				evbuffer_add_printf(out, "Cache-Control: "
				    "max-age=%ld\r\n\r\n",
				    qparam(c, "max_age", 0));
			return;
		}
		long status = forced_status ? forced_status :
		    qparam(c, "status", 200);
		long from = 0, to = size - 1;
		char rtmp[64];
		if (status == 200 && range != NULL && range->vlen < sizeof(rtmp)) {
			memcpy(rtmp, range->value, range->vlen);
			rtmp[range->vlen] = '\0';
			int got = strncmp(rtmp, "bytes=", 6) == 0 &&
			    isdigit((unsigned char)rtmp[6]) ? sscanf(rtmp,
			    "bytes=%ld-%ld", &from, &to) : 0;
			if (got >= 1 && from < size) {
				if (got == 1 || to >= size)
					to = size - 1;
				status = 206;
			} else {
				from = 0;
				to = size - 1;
			}
		}
		bool chunked = qparam(c, "chunked", 0) && status == 200;
		evbuffer_add_printf(out, "HTTP/1.1 %ld %s\r\nDate: %s\r\n"
		    "Content-Type: application/octet-stream\r\n", status,
		    status == 200 ? "OK" : "Status", date);
		if (chunked)
			evbuffer_add_printf(out, "Transfer-Encoding: chunked"
			    "\r\n");
		else
			evbuffer_add_printf(out, "Content-Length: %ld\r\n",
			    to - from + 1);
		if (status == 206)
			evbuffer_add_printf(out, "Content-Range: bytes "
			    "%ld-%ld/%ld\r\n", from, to, size);
		if (qstr(c, "age", tmp, sizeof(tmp)))
			evbuffer_add_printf(out, "Age: %s\r\n", tmp);
		if (qstr(c, "expires", tmp, sizeof(tmp))) {
			time_t t = now + 3600;
			struct tm e;
			gmtime_r(&t, &e);
			strftime(tmp, sizeof(tmp), "%a, %d %b %Y %H:%M:%S gmt", &e);
			for (char *p = tmp; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			evbuffer_add_printf(out, "Expires: %s\r\n", tmp);
		}
		if (*etag)
			evbuffer_add_printf(out, "ETag: %s\r\n", etag);
		if (qparam(c, "lm", 0))
			evbuffer_add_printf(out, "Last-Modified: Mon, 01 Jan "
			    "2024 00:00:00 GMT\r\n");
		/* a forced status is a failing server's: no freshness */
		if (qparam(c, "max_age", -1) >= 0 && !forced_status)
			evbuffer_add_printf(out, "Cache-Control: max-age=%ld"
			    "%s%s\r\n", qparam(c, "max_age", 0),
			    qparam(c, "nostore", 0) ? ", no-store" : "",
			    qparam(c, "private", 0) ? ", private" : "");
		if (qstr(c, "cc", tmp, sizeof(tmp)) && !forced_status)
			evbuffer_add_printf(out, "Cache-Control: %s\r\n", tmp);
		evbuffer_add(out, "\r\n", 2);
		if (!http_token_eq(c->req.method, c->req.method_len, "HEAD")) {
			size = to - from + 1;
			char *b = malloc((size_t)size);
			long pause = qparam(c, "pause", 0);
			size_t now_n = pause > 0 ? (size_t)size / 2 : (size_t)size;
			fill(b, (size_t)size, c->path + 5, (size_t)from);
			if (chunked) {
				/* chunks of 4 KB, every one at once */
				for (size_t at = 0; at < (size_t)size;) {
					size_t k = (size_t)size - at < 4096 ?
					    (size_t)size - at : 4096;
					evbuffer_add_printf(out, "%zx\r\n", k);
					evbuffer_add(out, b + at, k);
					evbuffer_add(out, "\r\n", 2);
					at += k;
				}
				evbuffer_add(out, "0\r\n\r\n", 5);
				free(b);
				return;
			}
			evbuffer_add(out, b, now_n);
			if (pause > 0) {
				struct timeval tv = {pause / 1000,
				    (pause % 1000) * 1000};
				c->rest = evbuffer_new();
				evbuffer_add(c->rest, b + now_n,
				    (size_t)size - now_n);
				c->resume = evtimer_new(base, on_resume, c);
				evtimer_add(c->resume, &tv);
			}
			free(b);
		}
		return;
	}
	if (strncmp(c->path, "/vary/", 6) == 0) {
		const struct http_field *al =
		    http_field_find(&c->req, "accept-language");
		int n = al ? (int)al->vlen : 4;
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nDate: %s\r\n"
		    "Cache-Control: max-age=300\r\nVary: Accept-Language\r\n"
		    "Content-Length: %d\r\n\r\nlang=%.*s\n", date, n + 6,
		    n, al ? al->value : "none");
		return;
	}
	if (strcmp(c->path, "/echo") == 0) {
		size_t n = evbuffer_get_length(c->body);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nX-Method: %.*s\r\n"
		    "X-Body-Length: %zu\r\nX-Request-Chunked: %d\r\n"
		    "Content-Length: %zu\r\n\r\n", (int)c->req.method_len,
		    c->req.method, n, c->chunked_req, n);
		evbuffer_add_buffer(out, c->body);
		return;
	}
	if (strcmp(c->path, "/big") == 0) {
		long max_age = qparam(c, "max_age", -1);
		c->big_left = (uint64_t)qparam(c, "size", 1 << 20);
		if (qparam(c, "gen", 0))
			snprintf(c->big_fill, sizeof(c->big_fill), "big%u",
			    generation);
		else
			strcpy(c->big_fill, "big");
		c->big_chunked = qparam(c, "chunked", 0);
		head_of_length(out, max_age, c->big_left, c->big_chunked);
		return; /* the body follows in on_write */
	}
	if (strcmp(c->path, "/te") == 0) {
		char coding[64];
		if (qstr(c, "coding", coding, sizeof(coding)) == NULL)
			strcpy(coding, "foo");
		for (char *p = coding; *p; p++)
			if (*p == '+')
				*p = ' ';
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: "
		    "max-age=60\r\nTransfer-Encoding: %s\r\n\r\n"
		    "5\r\nhello\r\n0\r\n\r\n", coding);
		c->close_after = true;
		return;
	}
	if (strcmp(c->path, "/cut") == 0) {
		long size = qparam(c, "size", 100000), at = qparam(c, "at", 0);
		char *b = calloc(1, (size_t)at + 1);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: "
		    "max-age=60\r\nContent-Length: %ld\r\n\r\n", size);
		fill(b, (size_t)at, "cut", 0);
		evbuffer_add(out, b, (size_t)at);
		free(b);
		c->close_after = true;
		return;
	}
	if (strcmp(c->path, "/steady") == 0) {
		long max_age = qparam(c, "max_age", -1), parts = qparam(c,
		    "parts", 10);
		c->steady_size = (uint64_t)qparam(c, "size", 100000);
		c->steady_part = (c->steady_size + (uint64_t)parts - 1) /
		    (uint64_t)(parts > 0 ? parts : 1);
		c->steady_ms = qparam(c, "step", 100);
		c->steady_stall = qparam(c, "stall", 0);
		c->steady_at = 0;
		c->steady_sent = 0;
		head_of_length(out, max_age, c->steady_size, false);
		if (c->steady == NULL)
			c->steady = evtimer_new(base, on_steady, c);
		on_steady(-1, 0, c);
		return;
	}
	if (strcmp(c->path, "/extra") == 0) {
		long size = qparam(c, "size", 1000), after = qparam(c, "after", 0);
		char *b = malloc((size_t)size);
		struct evbuffer *more = evbuffer_new();
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: "
		    "max-age=60\r\nContent-Length: %ld\r\n\r\n", size);
		fill(b, (size_t)size, "extra", 0);
		evbuffer_add(out, b, (size_t)size);
		free(b);
		if (qparam(c, "junk", 0))
			evbuffer_add_printf(more, "these bytes are past the "
			    "end of the body\r\n");
		else
			evbuffer_add_printf(more, "HTTP/1.1 200 OK\r\n"
			    "Cache-Control: max-age=600\r\nContent-Length: 6"
			    "\r\n\r\nPOISON");
		if (after <= 0) {
			evbuffer_add_buffer(out, more);
			evbuffer_free(more);
			return;
		}
		struct timeval tv = {after / 1000, (after % 1000) * 1000};
		if (c->rest != NULL)
			evbuffer_free(c->rest);
		c->rest = more;
		if (c->resume == NULL)
			c->resume = evtimer_new(base, on_resume, c);
		evtimer_add(c->resume, &tv);
		return;
	}
	if (strcmp(c->path, "/hints") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 103 Early Hints\r\nLink: "
		    "</style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n"
		    "Content-Length: 5\r\n\r\nhints");
		return;
	}
	if (strcmp(c->path, "/squid-internal-periodic/store_digest") == 0) {
		/* version 5, required 3, capacity 100, 5 bits per entry so a
		 * 63-byte mask: all as Squid writes them, but 3 hash functions */
		unsigned char d[128 + 63] = {0, 5, 0, 3, 0, 0, 0, 100};
		d[19] = 63;
		d[20] = 5;
		d[21] = 3;
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: "
		    "application/cache-digest\r\nContent-Length: %zu\r\n\r\n",
		    sizeof(d));
		evbuffer_add(out, d, sizeof(d));
		return;
	}
	if (strcmp(c->path, "/chunked") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
		    "chunked\r\nCache-Control: max-age=60\r\n\r\n"
		    "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n");
		return;
	}
	evbuffer_add_printf(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0"
	    "\r\n\r\n");
}

static void on_read(struct bufferevent *bev, void *arg);

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
