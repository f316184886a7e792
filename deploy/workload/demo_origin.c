/*
 * demo-origin: the origin server of sumcache's demo cluster and workload
 * replays. Any path is an object whose size, freshness, versioning and
 * latency are read from its query (see demo.h); the body is deterministic,
 * so whoever fetched it through a cache can check every byte.
 *
 *   demo-origin [-l ADDR:PORT] [-d MS]
 *
 *   -l   where to listen (127.0.0.1:8081)
 *   -d   latency added to every response, in milliseconds (0)
 *
 * GET /__stats answers the counts (requests, 200s, 304s, body bytes, and
 * repeat fetches) as Prometheus text. SIGTERM or SIGINT stop it.
 *
 * A repeat fetch is a cacheable object sent whole again to a request that
 * was not conditional: the caches in front had it once and no longer (or
 * never kept it). compare.sh reports them as capacity misses: what a
 * bigger cache, or one that holds each object once, could have saved.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include <xxhash.h>

#include "demo.h"

struct origin {
	struct event_base *base;
	uint32_t latency_ms;
	uint64_t requests, full, not_modified, body_bytes, repeats;
	/* targets sent whole: XXH3 hashes, open addressing, 0 empty */
	uint64_t *sent;
	size_t nsent, cap;
};

/* Records a target sent whole; whether it had been before. */
static bool
sent_before(struct origin *o, const char *target)
{
	uint64_t h = XXH3_64bits(target, strlen(target)) | 1;

	if (2 * (o->nsent + 1) > o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 1 << 16;
		uint64_t *v = calloc(cap, sizeof(*v));
		if (v == NULL)
			return false;  /* uncounted, not wrong */
		for (size_t i = 0; i < o->cap; i++)
			for (size_t j = o->sent[i] & (cap - 1); o->sent[i];
			    j = (j + 1) & (cap - 1))
				if (v[j] == 0) {
					v[j] = o->sent[i];
					break;
				}
		free(o->sent);
		o->sent = v;
		o->cap = cap;
	}
	size_t j = h & (o->cap - 1);
	for (; o->sent[j] != 0; j = (j + 1) & (o->cap - 1))
		if (o->sent[j] == h)
			return true;
	o->sent[j] = h;
	o->nsent++;
	return false;
}

/* A response waiting out its latency. */
struct later {
	struct origin *o;
	struct evhttp_request *req;
	struct event *timer;
};

static void
http_date(time_t t, char *out, size_t n)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, n, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

static void
answer(struct origin *o, struct evhttp_request *req)
{
	const char *target = evhttp_request_get_uri(req);
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct demo_obj obj;
	char etag[40], lm[64], cc[40];

	demo_parse(target, &obj);
	time_t now = time(NULL);
	uint64_t v = demo_version(&obj, (uint64_t)now);
	snprintf(etag, sizeof(etag), "\"v%" PRIu64 "\"", v);
	/* a version's life starts at its period; unchanging objects date
	 * from 2024-01-01 */
	http_date(obj.change ? (time_t)(v * obj.change) : 1704067200, lm,
	    sizeof(lm));
	if (obj.nostore)
		snprintf(cc, sizeof(cc), "no-store");
	else
		snprintf(cc, sizeof(cc), "max-age=%" PRIu32, obj.max_age);
	evhttp_add_header(h, "Cache-Control", cc);
	evhttp_add_header(h, "ETag", etag);
	evhttp_add_header(h, "Last-Modified", lm);

	const char *inm = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "If-None-Match");
	if (inm != NULL && strcmp(inm, etag) == 0) {
		o->not_modified++;
		evhttp_send_reply(req, 304, "Not Modified", NULL);
		return;
	}
	evhttp_add_header(h, "Content-Type", "application/octet-stream");
	struct evbuffer *body = evbuffer_new();
	struct evbuffer_iovec iov;
	if (body == NULL || (obj.size > 0 && (evbuffer_reserve_space(body,
	    (ev_ssize_t)obj.size, &iov, 1) < 1))) {
		if (body != NULL)
			evbuffer_free(body);
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	if (obj.size > 0) {
		demo_fill(demo_seed(target, v), 0, iov.iov_base, obj.size);
		iov.iov_len = obj.size;
		evbuffer_commit_space(body, &iov, 1);
	}
	o->full++;
	if (!obj.nostore && inm == NULL && sent_before(o, target))
		o->repeats++;
	if (evhttp_request_get_command(req) != EVHTTP_REQ_HEAD)
		o->body_bytes += obj.size;
	evhttp_send_reply(req, 200, "OK", body);
	evbuffer_free(body);
}

static void
on_later(evutil_socket_t fd, short what, void *arg)
{
	struct later *l = arg;

	(void)fd;
	(void)what;
	evhttp_connection_set_closecb(evhttp_request_get_connection(l->req),
	    NULL, NULL);
	answer(l->o, l->req);
	event_free(l->timer);
	free(l);
}

/* The client left while its response waited: evhttp frees the request
 * next, so the wait ends here. (One pending request per connection:
 * clients do not pipeline to an origin.) */
static void
on_gone(struct evhttp_connection *evcon, void *arg)
{
	struct later *l = arg;

	(void)evcon;
	event_free(l->timer);
	free(l);
}

static void
stats(struct origin *o, struct evhttp_request *req)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	evbuffer_add_printf(b,
	    "demo_origin_requests_total %" PRIu64 "\n"
	    "demo_origin_responses_total{status=\"200\"} %" PRIu64 "\n"
	    "demo_origin_responses_total{status=\"304\"} %" PRIu64 "\n"
	    "demo_origin_body_bytes_total %" PRIu64 "\n"
	    "demo_origin_repeat_fetches_total %" PRIu64 "\n",
	    o->requests, o->full, o->not_modified, o->body_bytes, o->repeats);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
on_request(struct evhttp_request *req, void *arg)
{
	struct origin *o = arg;
	const char *target = evhttp_request_get_uri(req);
	struct demo_obj obj;

	if (strcmp(target, "/__stats") == 0) {
		stats(o, req);
		return;
	}
	o->requests++;
	demo_parse(target, &obj);
	uint32_t ms = o->latency_ms + obj.delay_ms;
	if (ms == 0) {
		answer(o, req);
		return;
	}
	struct later *l = calloc(1, sizeof(*l));
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	if (l == NULL || (l->timer = evtimer_new(o->base, on_later, l)) ==
	    NULL) {
		free(l);
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	l->o = o;
	l->req = req;
	evhttp_connection_set_closecb(evhttp_request_get_connection(req),
	    on_gone, l);
	evtimer_add(l->timer, &tv);
}

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopexit(arg, NULL);
}

static void
usage(void)
{
	fprintf(stderr, "usage: demo-origin [-l ADDR:PORT] [-d MS]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *listen = "127.0.0.1:8081";
	struct origin o = {0};
	int c;

	while ((c = getopt(argc, argv, "l:d:h")) != -1) {
		switch (c) {
		case 'l':
			listen = optarg;
			break;
		case 'd':
			o.latency_ms = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	char host[256];
	const char *colon = strrchr(listen, ':');
	if (colon == NULL || (size_t)(colon - listen) >= sizeof(host))
		usage();
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	unsigned long port = strtoul(colon + 1, NULL, 10);

	signal(SIGPIPE, SIG_IGN);
	o.base = event_base_new();
	struct evhttp *http = o.base ? evhttp_new(o.base) : NULL;
	if (http == NULL) {
		fprintf(stderr, "demo-origin: out of memory\n");
		return 1;
	}
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(http, on_request, &o);
	if (port == 0 || port > 65535 ||
	    evhttp_bind_socket(http, host, (uint16_t)port) < 0) {
		fprintf(stderr, "demo-origin: cannot listen on %s: %s\n", listen,
		    strerror(errno));
		return 1;
	}
	struct event *term = evsignal_new(o.base, SIGTERM, on_signal, o.base);
	struct event *intr = evsignal_new(o.base, SIGINT, on_signal, o.base);
	evsignal_add(term, NULL);
	evsignal_add(intr, NULL);
	fprintf(stderr, "demo-origin: listening on %s\n", listen);
	event_base_dispatch(o.base);
	event_free(term);
	event_free(intr);
	evhttp_free(http);
	event_base_free(o.base);
	free(o.sent);
	return 0;
}
