/*
 * End-to-end: the real sumcache binary between libcurl (or raw sockets) and
 * the test origin, all on loopback.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"


static char *
url(const char *path)
{
	return env_url(&E, path);
}

TestSuite(e2e, .init = env_up, .fini = env_down, .timeout = 120);

Test(e2e, miss_then_hit_origin_sees_one_request)
{
	struct resp a, b;

	proxy_get(&E, url("/obj/a?max_age=60&size=3000"), NULL, &a);
	proxy_get(&E, url("/obj/a?max_age=60&size=3000"), NULL, &b);
	cr_assert_eq(a.status, 200);
	cr_assert_eq(b.status, 200);
	cr_assert_eq(a.len, 3000);
	cr_assert_eq(b.len, 3000);
	cr_assert(memcmp(a.body, b.body, 3000) == 0);
	cr_assert_str_eq(resp_header(&a, "X-Cache"), "MISS from test-node");
	cr_assert_str_eq(resp_header(&b, "X-Cache"), "HIT from test-node");
	cr_assert_not_null(resp_header(&b, "Age"));
	cr_assert(strstr(resp_header(&b, "Via"), "1.1 test-node") != NULL);
	cr_assert_eq(origin_count(&E, "/obj/a", NULL), 1);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_requests_total{result=\"local_hit\"}"), 1);
	cr_assert_eq(proxy_metric(&E, "sumcache_cache_objects"), 1);
	resp_free(&a);
	resp_free(&b);
}

Test(e2e, large_object_hits_are_identical)
{
	/* large bodies are stored in a memfd and sent with sendfile */
	const char *u = url("/obj/large?max_age=0&etag=1&size=300001");
	struct resp a, b, c, h;

	proxy_get(&E, u, NULL, &a);
	proxy_get(&E, url("/obj/large?max_age=0&etag=1&size=300001"), NULL,
	    &b);
	cr_assert_eq(a.len, 300001);
	cr_assert_eq(b.len, 300001);
	cr_assert(memcmp(a.body, b.body, a.len) == 0);
	cr_assert_str_eq(resp_header(&b, "X-Revalidated"), "1",
	    "a 304 refresh shares the memfd body");
	proxy_get(&E, url("/obj/large?max_age=0&etag=1&size=300001"), NULL,
	    &c);
	cr_assert(c.len == a.len && memcmp(a.body, c.body, a.len) == 0);
	proxy_request(&E, "HEAD", url("/obj/large?max_age=0&etag=1&size=300001"),
	    NULL, NULL, 0, false, &h);
	cr_assert_str_eq(resp_header(&h, "Content-Length"), "300001");
	cr_assert_eq(origin_count(&E, "/obj/large", NULL), 4);
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
	resp_free(&h);
}

Test(e2e, large_fresh_object_is_a_hit)
{
	struct resp a, b;

	proxy_get(&E, url("/obj/lf?max_age=60&size=200000"), NULL, &a);
	proxy_get(&E, url("/obj/lf?max_age=60&size=200000"), NULL, &b);
	cr_assert_str_eq(resp_header(&b, "X-Cache"), "HIT from test-node");
	cr_assert(a.len == 200000 && b.len == 200000 &&
	    memcmp(a.body, b.body, a.len) == 0);
	cr_assert_eq(origin_count(&E, "/obj/lf", NULL), 1);
	resp_free(&a);
	resp_free(&b);
}

Test(e2e, stale_entry_revalidated_with_304)
{
	struct resp a, b;
	int cond;

	proxy_get(&E, url("/obj/r?max_age=0&etag=1"), NULL, &a);
	proxy_get(&E, url("/obj/r?max_age=0&etag=1"), NULL, &b);
	cr_assert_eq(b.status, 200);
	cr_assert_eq(origin_count(&E, "/obj/r", &cond), 2);
	cr_assert_eq(cond, 1, "the origin saw a conditional request");
	/* the 304's fields update the stored ones, the body is kept */
	cr_assert_str_eq(resp_header(&b, "X-Revalidated"), "1");
	cr_assert_eq(b.len, 100);
	cr_assert(memcmp(a.body, b.body, 100) == 0);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_revalidations_total{result=\"unmodified\"}"), 1);
	resp_free(&a);
	resp_free(&b);
}

Test(e2e, vary_keeps_variants_apart)
{
	const char *en[] = {"Accept-Language: en", NULL};
	const char *fr[] = {"Accept-Language: fr", NULL};
	struct resp a, b, c;

	proxy_get(&E, url("/vary/v"), en, &a);
	proxy_get(&E, url("/vary/v"), fr, &b);
	proxy_get(&E, url("/vary/v"), en, &c);
	cr_assert_str_eq(a.body, "lang=en\n");
	cr_assert_str_eq(b.body, "lang=fr\n");
	cr_assert_str_eq(c.body, "lang=en\n");
	cr_assert_str_eq(resp_header(&c, "X-Cache"), "HIT from test-node");
	cr_assert_eq(origin_count(&E, "/vary/v", NULL), 2);
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
}

/* RFC 9111 4.1: Accept-Language values that mean the same (case, spaces,
 * order) share a variant; a different weight does not */
Test(e2e, vary_matches_equivalent_values)
{
	const char *a[] = {"Accept-Language: en-GB, fr;q=0.5", NULL};
	const char *b[] = {"Accept-Language: fr; q=0.50 ,EN-gb", NULL};
	const char *c[] = {"Accept-Language: fr;q=0.6, en-GB", NULL};
	struct resp r;

	proxy_get(&E, url("/vary/n"), a, &r);
	resp_free(&r);
	proxy_get(&E, url("/vary/n"), b, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert_str_eq(r.body, "lang=en-GB, fr;q=0.5\n");
	resp_free(&r);
	proxy_get(&E, url("/vary/n"), c, &r);
	cr_assert_str_eq(r.body, "lang=fr;q=0.6, en-GB\n");
	resp_free(&r);
	cr_assert_eq(origin_count(&E, "/vary/n", NULL), 2);
}

Test(e2e, client_no_cache_reaches_origin_for_a_fresh_copy)
{
	/* RFC 9111 5.2.1.4 and 5.4: the client asks that a stored copy not
	 * be used without the origin's say, however fresh it is */
	const char *cc[] = {"Cache-Control: no-cache", NULL};
	const char *pragma[] = {"Pragma: no-cache", NULL};
	struct resp a, b, c, d;

	proxy_get(&E, url("/obj/nc?max_age=300&etag=1"), NULL, &a);
	proxy_get(&E, url("/obj/nc?max_age=300&etag=1"), NULL, &b);
	cr_assert_str_eq(resp_header(&b, "X-Cache"), "HIT from test-node");
	cr_assert_eq(origin_count(&E, "/obj/nc", NULL), 1);
	proxy_get(&E, url("/obj/nc?max_age=300&etag=1"), cc, &c);
	cr_assert_eq(c.status, 200);
	cr_assert_eq(origin_count(&E, "/obj/nc", NULL), 2,
	    "Cache-Control: no-cache went to the origin");
	proxy_get(&E, url("/obj/nc?max_age=300&etag=1"), pragma, &d);
	cr_assert_eq(d.status, 200);
	cr_assert_eq(origin_count(&E, "/obj/nc", NULL), 3,
	    "Pragma: no-cache went to the origin");
	cr_assert(c.len == a.len && memcmp(a.body, c.body, a.len) == 0);
	cr_assert(d.len == a.len && memcmp(a.body, d.body, a.len) == 0);
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
	resp_free(&d);
}

Test(e2e, s_maxage_overrides_max_age_zero)
{
	/* a shared cache takes s-maxage over max-age (RFC 9111 5.2.2.10) */
	struct resp a, b;

	proxy_get(&E, url("/obj/sm?cc=max-age=0,s-maxage=60"), NULL, &a);
	proxy_get(&E, url("/obj/sm?cc=max-age=0,s-maxage=60"), NULL, &b);
	cr_assert_eq(b.status, 200);
	cr_assert_str_eq(resp_header(&b, "X-Cache"), "HIT from test-node");
	cr_assert_eq(origin_count(&E, "/obj/sm", NULL), 1);
	resp_free(&a);
	resp_free(&b);
}

Test(e2e, no_store_and_private_never_cached)
{
	struct resp r;

	for (int i = 0; i < 2; i++) {
		proxy_get(&E, url("/obj/ns?max_age=60&nostore=1"), NULL, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
		proxy_get(&E, url("/obj/pv?max_age=60&private=1"), NULL, &r);
		resp_free(&r);
	}
	cr_assert_eq(origin_count(&E, "/obj/ns", NULL), 2);
	cr_assert_eq(origin_count(&E, "/obj/pv", NULL), 2);
	cr_assert_eq(proxy_metric(&E, "sumcache_cache_objects"), 0);
}

Test(e2e, only_if_cached_miss_is_504)
{
	const char *oic[] = {"Cache-Control: only-if-cached", NULL};
	struct resp r;

	proxy_get(&E, url("/obj/oic?max_age=60"), oic, &r);
	cr_assert_eq(r.status, 504);
	cr_assert_eq(origin_count(&E, "/obj/oic", NULL), 0);
	resp_free(&r);
	proxy_get(&E, url("/obj/oic?max_age=60"), NULL, &r);
	resp_free(&r);
	proxy_get(&E, url("/obj/oic?max_age=60"), oic, &r);
	cr_assert_eq(r.status, 200, "once cached, only-if-cached is a hit");
	resp_free(&r);
}

Test(e2e, head_and_conditional_answered_from_cache)
{
	const char *inm[] = {"If-None-Match: \"c-1\"", NULL};
	struct resp a, h, c;

	proxy_get(&E, url("/obj/c?max_age=60&etag=1&size=500"), NULL, &a);
	proxy_request(&E, "HEAD", url("/obj/c?max_age=60&etag=1&size=500"),
	    NULL, NULL, 0, false, &h);
	proxy_get(&E, url("/obj/c?max_age=60&etag=1&size=500"), inm, &c);
	cr_assert_eq(h.status, 200);
	cr_assert_eq(h.len, 0);
	cr_assert_str_eq(resp_header(&h, "Content-Length"), "500");
	cr_assert_eq(c.status, 304);
	cr_assert_eq(c.len, 0);
	cr_assert_eq(origin_count(&E, "/obj/c", NULL), 1);
	resp_free(&a);
	resp_free(&h);
	resp_free(&c);
}

/* RFC 9111 4.3.5: a HEAD that reaches the origin updates the stored GET
 * when it agrees with it (here: fresh again, so the next GET is a hit with
 * no conditional request), and puts it out when its ETag says the object
 * changed (the next GET is a plain miss, not a revalidation). */
Test(e2e, head_answer_refreshes_or_drops_the_stored_get)
{
	const char *same = url("/obj/hs?max_age=1&etag=1&size=300");
	const char *changed = url("/obj/hc?max_age=1&etag=1&gen=1&size=300");
	char bump[96];
	struct resp r;
	int cond = -1;

	snprintf(bump, sizeof(bump), "http://127.0.0.1:%d/__bump", E.oport);
	proxy_get(&E, same, NULL, &r);
	resp_free(&r);
	proxy_get(&E, changed, NULL, &r);
	resp_free(&r);
	http_request(0, "GET", bump, NULL, NULL, 0, false, &r);
	resp_free(&r);
	usleep(1100 * 1000);  /* both stale */
	proxy_request(&E, "HEAD", same, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	proxy_request(&E, "HEAD", changed, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(origin_count(&E, "HEAD /obj/h", NULL), 2);

	proxy_get(&E, same, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 300);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	cr_assert_eq(origin_count(&E, "GET /obj/hs", &cond), 1);
	cr_assert_eq(cond, 0);

	proxy_get(&E, changed, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 300);
	cr_assert_str_eq(resp_header(&r, "ETag"), "\"hc-1.1\"");
	resp_free(&r);
	cr_assert_eq(origin_count(&E, "GET /obj/hc", &cond), 2);
	cr_assert_eq(cond, 0, "the dropped copy was revalidated");
}

Test(e2e, post_and_chunked_upload_forwarded)
{
	char body[5000];
	struct resp a, b;

	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (char)('a' + i % 26);
	proxy_request(&E, "POST", url("/echo"), NULL, body, sizeof(body),
	    false, &a);
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(resp_header(&a, "X-Method"), "POST");
	cr_assert_eq(a.len, sizeof(body));
	cr_assert(memcmp(a.body, body, sizeof(body)) == 0);
	proxy_request(&E, "PUT", url("/echo"), NULL, body, sizeof(body), true,
	    &b);
	cr_assert_eq(b.status, 200);
	cr_assert_str_eq(resp_header(&b, "X-Method"), "PUT");
	cr_assert_eq(b.len, sizeof(body));
	cr_assert(memcmp(b.body, body, sizeof(body)) == 0);
	resp_free(&a);
	resp_free(&b);
}

Test(e2e, unsafe_method_invalidates)
{
	struct resp r;

	proxy_get(&E, url("/obj/inv?max_age=60"), NULL, &r);
	resp_free(&r);
	proxy_request(&E, "POST", url("/obj/inv?max_age=60"), NULL, "x", 1,
	    false, &r);
	resp_free(&r);
	proxy_get(&E, url("/obj/inv?max_age=60"), NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "MISS from test-node");
	resp_free(&r);
	cr_assert_eq(origin_count(&E, "GET /obj/inv", NULL) +
	    origin_count(&E, "POST /obj/inv", NULL), 3);
}

Test(e2e, origin_down_is_502)
{
	char u[128];
	struct resp r;

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/x",
	    harness_free_port());
	proxy_get(&E, u, NULL, &r);
	cr_assert_eq(r.status, 502);
	cr_assert(strstr(r.body, "unreachable") != NULL, "%s", r.body);
	resp_free(&r);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_origin_errors_total{cause=\"unreachable\"}"), 1);
}

Test(e2e, interim_1xx_forwarded)
{
	char req[256];
	bool closed;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", url("/hints"));
	char *out = raw_exchange(E.pport, req, strlen(req), 5000, &closed);
	char *h103 = strstr(out, "HTTP/1.1 103 ");
	char *h200 = strstr(out, "HTTP/1.1 200 ");
	cr_assert(h103 != NULL && h200 != NULL && h103 < h200, "%s", out);
	cr_assert(strstr(out, "Link: </style.css>") != NULL);
	free(out);
}

Test(e2e, pipelined_requests_answered_in_order)
{
	char req[1024];
	bool closed;

	snprintf(req, sizeof(req),
	    "GET %s HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET %s HTTP/1.1\r\nHost: x\r\n\r\n"
	    "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
	    url("/obj/p1?max_age=60&size=10"), url("/chunked"),
	    url("/obj/p2?max_age=60&size=10"));
	char *out = raw_exchange(E.pport, req, strlen(req), 5000, &closed);
	char *a = strstr(out, "p1p1p1p1p1");
	char *b = strstr(out, "hello");
	char *c = strstr(out, "p2p2p2p2p2");
	cr_assert(a && b && c && a < b && b < c, "%s", out);
	cr_assert(closed);
	free(out);
}

Test(e2e, client_acl_refuses_others)
{
	const char *opts[] = {"allow=10.1.0.0/16", NULL};
	struct env e2;
	struct resp r;
	char u[128];

	env_start(&e2, opts);
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/x?max_age=1", e2.oport);
	proxy_get(&e2, u, NULL, &r);
	cr_assert_eq(r.status, 403);
	cr_assert_eq(origin_count(&e2, "/obj/x", NULL), 0);
	resp_free(&r);
	env_stop(&e2);
}

struct slow_arg {
	struct env *e;
	long status;
	char body[16];
};

static void *
slow_request(void *p)
{
	struct slow_arg *a = p;
	struct resp r;
	char u[128];

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/slow?ms=1000", a->e->oport);
	proxy_get(a->e, u, NULL, &r);
	a->status = r.status;
	snprintf(a->body, sizeof(a->body), "%s", r.body);
	resp_free(&r);
	return NULL;
}

Test(e2e, sigterm_drains_in_flight_requests)
{
	struct slow_arg a = {.e = &E};
	pthread_t th;

	pthread_create(&th, NULL, slow_request, &a);
	usleep(300000);
	int st = harness_stop(E.proxy, SIGTERM, 10000);
	pthread_join(th, NULL);
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(a.body, "slow");
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	cr_assert(!harness_wait_port(E.pport, 100), "still listening");
	E.proxy = 0;
}

Test(e2e, origin_timeout_is_504)
{
	const char *opts[] = {"origin_timeout=300ms", NULL};
	struct env e2;
	struct resp r;
	char u[128];

	env_start(&e2, opts);
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/slow?ms=3000", e2.oport);
	proxy_get(&e2, u, NULL, &r);
	cr_assert_eq(r.status, 504);
	cr_assert(strstr(r.body, "timed out") != NULL, "%s", r.body);
	resp_free(&r);
	env_stop(&e2);
}

/*
 * origin_timeout is silence, not the whole fetch: an origin that pauses
 * less than it each time is waited for however long it takes in all, and
 * one that stops mid-body is cut off once it has been silent that long.
 * (The timer is not re-armed at every chunk, but looks at when the origin
 * last sent: fetch.c.)
 */
Test(e2e, origin_timeout_counts_silence_not_the_whole_fetch)
{
	const char *opts[] = {"origin_timeout=400ms", NULL};
	struct env e2;
	struct resp r;
	char u[160];

	env_start(&e2, opts);
	/* 250 ms before the head, 250 ms between the halves: 500 ms in all */
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/talks?max_age=60&"
	    "size=4000&delay=250&pause=250", e2.oport);
	proxy_get(&e2, u, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 4000, "%zu bytes", r.len);
	resp_free(&r);

	/* silent for 3 s after the first half: cut 400 ms into it (read
	 * raw: the message ends short, which libcurl calls an error) */
	char req[256];
	bool closed;
	int n = snprintf(req, sizeof(req), "GET http://127.0.0.1:%d/obj/stops?"
	    "max_age=60&size=4000&pause=3000 HTTP/1.1\r\nHost: 127.0.0.1:%d"
	    "\r\n\r\n", e2.oport, e2.oport);
	long t0 = harness_now_ms();
	char *raw = raw_exchange(e2.pport, req, (size_t)n, 2500, &closed);
	long took = harness_now_ms() - t0;
	size_t got = strlen(raw);
	const char *body = strstr(raw, "\r\n\r\n");
	cr_assert(strncmp(raw, "HTTP/1.1 200", 12) == 0, "%.60s", raw);
	cr_assert(strstr(raw, "Content-Length: 4000") != NULL, "%s", raw);
	cr_assert(body != NULL);
	size_t blen = got - (size_t)(body + 4 - raw);
	cr_assert_eq(blen, 2000, "%zu bytes of the body", blen);
	cr_assert(closed, "the cut response's connection stayed open");
	cr_assert(took >= 350 && took < 2000, "cut after %ld ms", took);
	free(raw);
	env_stop(&e2);
}

/* ---- a large response through a slow client ---- */

struct big {
	pid_t proxy;
	long rss0;
	long rss_max;
	size_t got;
};

static size_t
big_sink(char *d, size_t size, size_t n, void *arg)
{
	struct big *b = arg;

	(void)d;
	b->got += size * n;
	long rss = proc_rss_kb(b->proxy);
	if (rss > b->rss_max)
		b->rss_max = rss;
	return size * n;
}

Test(e2e, hundred_megabytes_stream_with_bounded_memory)
{
	struct big b = {.proxy = E.proxy};
	char u[128], proxy[64];
	CURL *c = curl_easy_init();

	b.rss0 = proc_rss_kb(E.proxy);
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/big?size=104857600",
	    E.oport);
	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", E.pport);
	curl_easy_setopt(c, CURLOPT_URL, u);
	curl_easy_setopt(c, CURLOPT_PROXY, proxy);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, big_sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	/* slower than the origin, so the proxy must hold the origin back */
	curl_easy_setopt(c, CURLOPT_MAX_RECV_SPEED_LARGE,
	    (curl_off_t)40 * 1024 * 1024);
	cr_assert_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_cleanup(c);
	cr_assert_eq(b.got, 104857600u);
	cr_log_info("proxy RSS %ld KiB at start, %ld KiB at most", b.rss0,
	    b.rss_max);
	cr_assert_lt(b.rss_max - b.rss0, 32 * 1024,
	    "proxy grew by %ld KiB", b.rss_max - b.rss0);
}

/* ---- CONNECT ---- */

Test(e2e, connect_tunnel_relays_both_ways)
{
	int eport = harness_free_port();
	char opt[64], req[256];
	struct env e2;
	bool closed;

	snprintf(opt, sizeof(opt), "connect_ports=%d", eport);
	const char *opts[] = {opt, NULL};
	pid_t echo = harness_echo_server(eport);
	env_start(&e2, opts);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: "
	    "127.0.0.1:%d\r\n\r\nping through the tunnel", eport, eport);
	char *out = raw_exchange(e2.pport, req, strlen(req), 1500, &closed);
	cr_assert(strncmp(out, "HTTP/1.1 200", 12) == 0, "%s", out);
	cr_assert(strstr(out, "\r\n\r\nping through the tunnel") != NULL,
	    "%s", out);
	free(out);
	/* a port not in connect_ports is refused */
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:25 HTTP/1.1\r\nHost: "
	    "127.0.0.1:25\r\n\r\n");
	out = raw_exchange(e2.pport, req, strlen(req), 1500, &closed);
	cr_assert(strncmp(out, "HTTP/1.1 403", 12) == 0, "%s", out);
	free(out);
	kill(echo, SIGTERM);
	waitpid(echo, NULL, 0);
	env_stop(&e2);
}

/* Fetches path twice; returns how many of the two reached the origin. */
static int
origin_requests_for_two(const char *path, const char *name)
{
	struct resp r;

	for (int i = 0; i < 2; i++) {
		proxy_get(&E, url(path), NULL, &r);
		resp_free(&r);
	}
	return origin_count(&E, name, NULL);
}

/* RFC 9111 as a shared cache reads it: any final status with explicit
 * freshness is stored (3), but not 206 or one a must-understand response
 * names that we do not understand (5.2.2.3), whose no-store is otherwise
 * ignored; an Age whose first member is not a non-negative integer (a
 * word, a sign, a decimal) is ignored (5.1), so the copy is fresh by its
 * max-age, while a first member too old makes it stale; an Expires spelt
 * in lower case is still a date. */
Test(e2e, statuses_age_and_expires_as_rfc_9111_reads_them)
{
	struct { const char *path, *name; int asked; } v[] = {
		{"/obj/s303?status=303&cc=max-age=60", "/obj/s303", 1},
		{"/obj/s500?status=500&cc=max-age=60", "/obj/s500", 1},
		{"/obj/s503?status=503&cc=max-age=60", "/obj/s503", 1},
		{"/obj/s599?status=599&cc=max-age=60", "/obj/s599", 1},
		{"/obj/n503?status=503", "/obj/n503", 2},
		{"/obj/s206?status=206&cc=max-age=60", "/obj/s206", 2},
		{"/obj/mu200?cc=max-age=60,no-store,must-understand",
		    "/obj/mu200", 1},
		{"/obj/mu599?status=599&cc=max-age=60,no-store,must-understand",
		    "/obj/mu599", 2},
		{"/obj/ageold?cc=max-age=3600&age=old,0", "/obj/ageold", 1},
		{"/obj/ageneg?cc=max-age=3600&age=-7200", "/obj/ageneg", 1},
		{"/obj/agedec?cc=max-age=3600&age=7200.0", "/obj/agedec", 1},
		{"/obj/agetext?cc=max-age=3600&age=two%20hours", "/obj/agetext",
		    1},
		{"/obj/agefirst?cc=max-age=3600&age=1,7200", "/obj/agefirst", 1},
		{"/obj/agestale?cc=max-age=3600&age=7200,0", "/obj/agestale", 2},
		{"/obj/explower?expires=lower", "/obj/explower", 1},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		cr_expect_eq(origin_requests_for_two(v[i].path, v[i].name),
		    v[i].asked, "%s", v[i].path);
	}
}

/* Cache-Status (RFC 9211) says what the node did, on every answer to a
 * client, and never on its own pages. */
Test(e2e, cache_status_says_what_the_node_did)
{
	struct {
		const char *method, *path, *header, *want;
		long status;
	} c[] = {
		{"GET", "/obj/cs?max_age=300&size=10", NULL, "fwd=uri-miss",
		    200},
		{"GET", "/obj/cs?max_age=300&size=10", NULL, "hit", 200},
		{"GET", "/obj/cs?max_age=300&size=10", "Range: bytes=0-1",
		    "hit", 206},
		{"GET", "/obj/cs?max_age=300&size=10", "Cache-Control: no-cache",
		    "fwd=request", 200},
		{"GET", "/obj/csr?max_age=0&size=10&etag=1", NULL,
		    "fwd=uri-miss", 200},
		{"GET", "/obj/csr?max_age=0&size=10&etag=1", NULL,
		    "fwd=stale; fwd-status=304", 200},
		{"POST", "/echo", NULL, "fwd=method", 200},
		{"GET", "/obj/none?size=10", "Cache-Control: only-if-cached",
		    "fwd=uri-miss", 504},
	};
	char want[128];
	struct resp r;

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		const char *h[] = {c[i].header, NULL};
		proxy_request(&E, c[i].method, env_url(&E, c[i].path),
		    c[i].header ? h : NULL, c[i].method[0] == 'P' ? "x" : NULL,
		    c[i].method[0] == 'P' ? 1 : 0, false, &r);
		cr_assert_eq(r.status, c[i].status, "case %zu: %ld", i,
		    r.status);
		snprintf(want, sizeof(want), "sumcache-test-node; %s",
		    c[i].want);
		const char *got = resp_header(&r, "Cache-Status");
		cr_assert(got != NULL && strcmp(got, want) == 0,
		    "case %zu: Cache-Status %s, not %s", i, got ? got : "(none)",
		    want);
		resp_free(&r);
	}
	char metrics[64];
	snprintf(metrics, sizeof(metrics), "http://127.0.0.1:%d/metrics",
	    E.pport);
	http_request(0, "GET", metrics, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_null(resp_header(&r, "Cache-Status"));
	resp_free(&r);
}
