/*
 * Collapsed forwarding end to end: crowds of clients asking the real
 * binary for one URL while the test origin takes its time to answer.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"


static void
send_get(int fd, const char *u, const char *extra)
{
	char req[1024];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n%s"
	    "Connection: close\r\n\r\n", u, extra ? extra : "");
	cr_assert(send(fd, req, (size_t)n, MSG_NOSIGNAL) == n);
}

/* The body /obj/NAME?size=N has: NAME repeated. */
static bool
body_is(const char *body, size_t len, const char *name, size_t size)
{
	size_t nl = strlen(name);

	if (len != size)
		return false;
	for (size_t i = 0; i < len; i++)
		if (body[i] != name[i % nl])
			return false;
	return true;
}

/* Whether a whole response in buf (n bytes) is a 200 with that body. */
static bool
response_is(const char *buf, size_t n, const char *name, size_t size)
{
	const char *end = memmem(buf, n, "\r\n\r\n", 4);

	if (end == NULL || strncmp(buf, "HTTP/1.1 200", 12) != 0)
		return false;
	end += 4;
	return body_is(end, n - (size_t)(end - buf), name, size);
}

/*
 * n clients at once, each on its own connection, GET u; waits up to ms
 * for every answer. Returns how many were a 200 with /obj/NAME's body of
 * size bytes.
 */
static int
crowd(int port, const char *u, int n, const char *name, size_t size, int ms)
{
	int *fd = calloc((size_t)n, sizeof(int));
	char **buf = calloc((size_t)n, sizeof(char *));
	size_t *len = calloc((size_t)n, sizeof(size_t));
	size_t cap = size + 4096;
	struct pollfd *pfd = calloc((size_t)n, sizeof(*pfd));
	int open = n, good = 0;

	for (int i = 0; i < n; i++) {
		fd[i] = harness_connect(port);
		send_get(fd[i], u, NULL);
		buf[i] = malloc(cap);
	}
	long deadline = harness_now_ms() + ms;
	while (open > 0 && harness_now_ms() < deadline) {
		for (int i = 0; i < n; i++)
			pfd[i] = (struct pollfd){fd[i], POLLIN, 0};
		if (poll(pfd, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (fd[i] < 0 || !(pfd[i].revents & (POLLIN | POLLHUP |
			    POLLERR)))
				continue;
			ssize_t r = recv(fd[i], buf[i] + len[i], cap - len[i],
			    0);
			if (r > 0) {
				len[i] += (size_t)r;
				if (len[i] < cap)
					continue;
			}
			close(fd[i]);
			fd[i] = -1;
			open--;
		}
	}
	for (int i = 0; i < n; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
		good += response_is(buf[i], len[i], name, size);
		free(buf[i]);
	}
	free(fd);
	free(buf);
	free(len);
	free(pfd);
	return good;
}

TestSuite(collapse, .timeout = 120);

Test(collapse, a_crowd_costs_the_origin_one_request)
{
	struct env e;
	static const int sizes[] = {100, 1000};

	harness_raise_nofile();
	env_start(&e, NULL);
	for (size_t k = 0; k < 2; k++) {
		int n = sizes[k];
		char path[128], name[32];
		snprintf(name, sizeof(name), "crowd%d", n);
		snprintf(path, sizeof(path), "/obj/%s?max_age=60&size=20000&"
		    "delay=1500", name);
		double served = proxy_metric(&e,
		    "sumcache_collapsed_total{outcome=\"served\"}");
		long t0 = harness_now_ms();
		int good = crowd(e.pport, env_url(&e, path), n, name, 20000, 20000);
		long took = harness_now_ms() - t0;
		int origin = origin_count(&e, name, NULL);
		served = proxy_metric(&e,
		    "sumcache_collapsed_total{outcome=\"served\"}") - served;
		printf("figure: %d simultaneous misses of one URL: %d origin "
		    "request(s), %d right answers, %.0f collapsed, %ld ms\n", n,
		    origin, good, served, took);
		cr_assert_eq(good, n);
		cr_assert_eq(origin, 1);
		cr_assert_eq(served, n - 1);
	}
	/* every answer has its access-log line: the waiters' say so */
	cr_assert(harness_file_has(e.log, "TCP_CF_HIT/200", "crowd1000",
	    2000));
	env_stop(&e);
}

struct get_arg {
	const struct env *e;
	const char *url;
	const char *header;
	struct resp r;
	long done_ms;
};

static void *
get_thread(void *p)
{
	struct get_arg *a = p;
	const char *h[] = {a->header, NULL};

	proxy_get(a->e, a->url, a->header ? h : NULL, &a->r);
	a->done_ms = harness_now_ms();
	return NULL;
}

Test(collapse, readers_get_the_body_as_it_arrives)
{
	struct env e;
	const char *path = "/obj/stream?max_age=60&size=400000&pause=1500";
	char buf[65536];
	size_t got = 0;

	env_start(&e, NULL);
	/* the leader; then a reader joins while the origin is paused */
	int lead = harness_connect(e.pport);
	send_get(lead, env_url(&e, path), NULL);
	usleep(300 * 1000);
	int fd = harness_connect(e.pport);
	send_get(fd, env_url(&e, path), NULL);
	long t0 = harness_now_ms();
	/* the first half is there before the origin sends the second */
	while (harness_now_ms() - t0 < 800) {
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	cr_assert_gt(got, 200000, "only %zu bytes before the pause ended",
	    got);
	cr_assert_lt(got, 400000);
	close(fd);
	close(lead);
	cr_assert_eq(origin_count(&e, "/obj/stream", NULL), 1);
	env_stop(&e);
}

/*
 * At workers 4 a crowd lands on every worker (SO_REUSEPORT spreads the
 * connections: eight readers all on the leader's worker is a chance of
 * 1 in 65,536), and each reader, wherever it is, has the first half of
 * the body before the origin sends the second: the body streams to the
 * other workers' readers from the leader's copy (crowd.c), of a known
 * length and of one only the end tells (chunked). Before that copy was
 * shared, readers on other workers got nothing until the fetch ended.
 */
Test(collapse, readers_on_every_worker_get_the_body_as_it_arrives)
{
	const char *opts[] = {"workers=4", NULL};
	const char *paths[] = {
	    "/obj/spread?max_age=60&size=400000&pause=1500",
	    "/obj/spreadc?max_age=60&size=400000&pause=1500&chunked=1"};
	enum { READERS = 8 };
	struct env e;
	char buf[65536];

	env_start(&e, opts);
	for (int k = 0; k < 2; k++) {
		size_t got[READERS] = {0};
		int fd[READERS];
		int lead = harness_connect(e.pport);
		send_get(lead, env_url(&e, paths[k]), NULL);
		usleep(300 * 1000);
		for (int i = 0; i < READERS; i++) {
			fd[i] = harness_connect(e.pport);
			send_get(fd[i], env_url(&e, paths[k]), NULL);
		}
		/* the first half is there before the origin sends the
		 * second (1,500 ms after the first) */
		for (long t0 = harness_now_ms(); harness_now_ms() - t0 < 800;) {
			struct pollfd pfd[READERS];
			for (int i = 0; i < READERS; i++)
				pfd[i] = (struct pollfd){fd[i], POLLIN, 0};
			if (poll(pfd, READERS, 100) <= 0)
				continue;
			for (int i = 0; i < READERS; i++) {
				if (!(pfd[i].revents & POLLIN))
					continue;
				ssize_t r = recv(fd[i], buf, sizeof(buf), 0);
				if (r > 0)
					got[i] += (size_t)r;
			}
		}
		for (int i = 0; i < READERS; i++) {
			cr_expect_gt(got[i], 200000, "%s: reader %d had %zu "
			    "bytes before the pause ended", paths[k], i,
			    got[i]);
			cr_expect_lt(got[i], 400000, "%s: reader %d had all %zu bytes", paths[k], i, got[i]);
			close(fd[i]);
		}
		close(lead);
	}
	cr_assert_eq(origin_count(&e, "/obj/spread?", NULL), 1);
	cr_assert_eq(origin_count(&e, "/obj/spreadc?", NULL), 1);
	cr_assert_geq(proxy_metric(&e, "sumcache_collapsed_total{outcome="
	    "\"served\"}"), 2 * READERS);
	env_stop(&e);
}

Test(collapse, a_reader_that_stops_reading_slows_nobody)
{
	struct env e;
	const char *path = "/obj/stall?max_age=60&size=8000000&delay=300";

	env_start(&e, NULL);
	/* the leader never reads its 8 MB */
	int lead = harness_connect(e.pport);
	send_get(lead, env_url(&e, path), NULL);
	usleep(100 * 1000);
	struct get_arg a = {.e = &e, .url = env_url(&e, path)};
	long t0 = harness_now_ms();
	get_thread(&a);
	cr_assert_eq(a.r.status, 200);
	cr_assert(body_is(a.r.body, a.r.len, "stall", 8000000));
	cr_assert_lt(a.done_ms - t0, 10000);
	cr_assert_eq(origin_count(&e, "/obj/stall", NULL), 1);
	resp_free(&a.r);
	close(lead);
	env_stop(&e);
}

Test(collapse, the_leader_leaving_does_not_stop_the_fetch)
{
	struct env e;
	const char *path = "/obj/left?max_age=60&size=300000&pause=500";
	struct resp r;
	char buf[4096];

	env_start(&e, NULL);
	int lead = harness_connect(e.pport);
	send_get(lead, env_url(&e, path), NULL);
	cr_assert_gt(recv(lead, buf, sizeof(buf), 0), 0);
	close(lead);  /* gone after the first bytes */
	cr_assert_geq(proxy_wait_metric(&e, "sumcache_cache_objects", 1,
	    5000), 1);
	proxy_get(&e, env_url(&e, path), NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert(body_is(r.body, r.len, "left", 300000));
	cr_assert_eq(origin_count(&e, "/obj/left", NULL), 1);
	resp_free(&r);
	env_stop(&e);
}

Test(collapse, the_leader_leaving_before_the_head_hands_over)
{
	struct env e;
	const char *path = "/obj/handover?max_age=60&size=5000&delay=600";

	env_start(&e, NULL);
	int lead = harness_connect(e.pport);
	send_get(lead, env_url(&e, path), NULL);
	usleep(100 * 1000);
	struct get_arg a = {.e = &e, .url = env_url(&e, path)};
	pthread_t th;
	pthread_create(&th, NULL, get_thread, &a);
	usleep(100 * 1000);
	close(lead);  /* before the origin has answered */
	pthread_join(th, NULL);
	cr_assert_eq(a.r.status, 200);
	cr_assert(body_is(a.r.body, a.r.len, "handover", 5000));
	resp_free(&a.r);
	env_stop(&e);
}

/* n threads GET u (each with header, or none) at once; returns how many
 * got a 200 with /obj/NAME's body. */
static int
threads_get(const struct env *e, const char *u, int n, const char *name,
    size_t size, const char *const *headers)
{
	struct get_arg a[16];
	pthread_t th[16];
	int good = 0;

	cr_assert(n <= 16);
	for (int i = 0; i < n; i++) {
		a[i] = (struct get_arg){.e = e, .url = u,
		    .header = headers ? headers[i] : NULL};
		pthread_create(&th[i], NULL, get_thread, &a[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		good += a[i].r.status == 200 && (name == NULL ||
		    body_is(a[i].r.body, a[i].r.len, name, size));
		resp_free(&a[i].r);
	}
	return good;
}

Test(collapse, an_answer_that_cannot_be_shared_lets_the_waiters_go)
{
	struct env e;

	env_start(&e, NULL);
	/* private: each client fetches alone, after one head's wait */
	cr_assert_eq(threads_get(&e, env_url(&e, "/obj/priv?max_age=60&"
	    "private=1&size=3000&delay=500"), 8, "priv", 3000, NULL), 8);
	cr_assert_eq(origin_count(&e, "/obj/priv", NULL), 8);
	cr_assert_geq(proxy_metric(&e,
	    "sumcache_collapsed_total{outcome=\"released\"}"), 1);
	/* a server error is not shared as an object, but it is every
	 * waiter's answer: one origin request (crowd_fails has more) */
	threads_get(&e, env_url(&e, "/obj/err?status=503&size=10&delay=500"), 4,
	    NULL, 0, NULL);
	cr_assert_eq(origin_count(&e, "/obj/err", NULL), 1);
	cr_assert_eq(proxy_metric(&e,
	    "sumcache_collapsed_total{outcome=\"served\"}"), 0);
	cr_assert_eq(proxy_metric(&e,
	    "sumcache_collapsed_total{outcome=\"failed\"}"), 3);
	env_stop(&e);
}

/*
 * n clients at once GET u; waits up to ms. Counts the answers by class
 * (*fail: 5xx, *stale: 200 with name's size-byte body), and returns the
 * time from the last request sent to the last answer, in ms.
 */
static long
crowd_answers(int port, const char *u, int n, int ms, const char *name,
    size_t size, int *fail, int *stale, int *none)
{
	int *fd = calloc((size_t)n, sizeof(int));
	char **buf = calloc((size_t)n, sizeof(char *));
	size_t *len = calloc((size_t)n, sizeof(size_t));
	size_t cap = size + 4096;
	int open = n;

	cr_assert(n <= 1024);
	for (int i = 0; i < n; i++)
		fd[i] = harness_connect(port);
	for (int i = 0; i < n; i++) {
		send_get(fd[i], u, NULL);
		buf[i] = malloc(cap);
	}
	long t0 = harness_now_ms(), last = t0;
	while (open > 0 && harness_now_ms() < t0 + ms) {
		struct pollfd p[1024];
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){fd[i], fd[i] >= 0 ? POLLIN : 0,
			    0};
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (fd[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP |
			    POLLERR)))
				continue;
			ssize_t r = recv(fd[i], buf[i] + len[i], cap - len[i],
			    0);
			if (r > 0 && (len[i] += (size_t)r) < cap)
				continue;
			close(fd[i]);
			fd[i] = -1;
			open--;
			last = harness_now_ms();
		}
	}
	*fail = *stale = *none = 0;
	for (int i = 0; i < n; i++) {
		if (fd[i] >= 0)
			close(fd[i]);
		int status = 0;
		if (len[i] > 12)
			sscanf(buf[i], "HTTP/1.1 %d", &status);
		*fail += status >= 500;
		*stale += name != NULL && response_is(buf[i], len[i], name,
		    size);
		*none += status == 0;
		free(buf[i]);
	}
	free(fd);
	free(buf);
	free(len);
	return last - t0;
}

/* 500 clients on one URL whose origin waits 3 s, then resets, closes or
 * answers 503: one origin request for all of them, and every client
 * answered with the failure when it comes, not after a fetch of its own. */
Test(collapse, a_crowd_on_a_failing_origin_costs_it_one_request)
{
	static const char *const how[] = {"drop=reset", "drop=close",
	    "status=503"};
	struct env e;

	harness_raise_nofile();
	env_start(&e, NULL);
	for (size_t k = 0; k < 3; k++) {
		char path[128], name[32];
		int fail, stale, none;
		snprintf(name, sizeof(name), "failing%zu", k);
		/* no freshness: a 503 that is not an object to share */
		snprintf(path, sizeof(path), "/obj/%s?size=100&delay=3000&%s",
		    name, how[k]);
		long took = crowd_answers(e.pport, env_url(&e, path), 500,
		    20000, NULL, 0, &fail, &stale, &none);
		int origin = origin_count(&e, name, NULL);
		printf("figure: 500 clients, origin %s after 3 s: %d origin "
		    "request(s), %d answered 5xx, %d unanswered, the last "
		    "%ld ms after the requests\n", how[k], origin, fail, none,
		    took);
		cr_expect_leq(origin, 2, "%s: %d origin requests", how[k],
		    origin);
		cr_expect_eq(fail, 500, "%s: %d of 500 answered 5xx", how[k],
		    fail);
		cr_expect_leq(took, 3000 + 1000, "%s: the last answer %ld ms "
		    "after the requests", how[k], took);
	}
	double failed = proxy_metric(&e,
	    "sumcache_collapsed_total{outcome=\"failed\"}");
	cr_expect_eq(failed, 3 * 499, "%.0f waiters answered with the "
	    "failure", failed);
	env_stop(&e);
}

/* The same crowd on a stale copy that allows stale-if-error: one
 * revalidation, and every client has the stale copy at the failure. */
Test(collapse, a_crowd_on_a_failing_origin_gets_its_stale_copy)
{
	struct env e;
	const char *path = "/obj/sie?max_age=1&size=2000&cc=stale-if-error="
	    "600&delay=1500";
	struct resp r;
	int fail, stale, none;

	harness_raise_nofile();
	env_start(&e, NULL);
	proxy_get(&e, env_url(&e, path), NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	usleep(2100 * 1000);  /* stale now */
	proxy_get(&e, env_url(&e, "/__status?code=503"), NULL, &r);
	resp_free(&r);
	long took = crowd_answers(e.pport, env_url(&e, path), 500, 20000,
	    "sie", 2000, &fail, &stale, &none);
	int origin = origin_count(&e, "/obj/sie", NULL);
	printf("figure: 500 clients on a stale copy, origin 503 after 1.5 s: "
	    "%d origin requests in all, %d stale answers, the last %ld ms "
	    "after the requests\n", origin, stale, took);
	cr_expect_leq(origin, 3, "%d origin requests (one was the fill)",
	    origin);
	cr_expect_eq(stale, 500, "%d of 500 had the stale copy", stale);
	cr_expect_leq(took, 1500 + 1000);
	env_stop(&e);
}

Test(collapse, a_waiter_of_another_variant_fetches_alone)
{
	struct env e;
	const char *h[] = {"Accept-Language: fr", "Accept-Language: de",
	    "Accept-Language: fr"};
	struct get_arg a[3];
	pthread_t th[3];

	env_start(&e, NULL);
	for (int i = 0; i < 3; i++) {
		a[i] = (struct get_arg){.e = &e, .url = env_url(&e,
		    "/vary/lang?delay=600"), .header = h[i]};
		pthread_create(&th[i], NULL, get_thread, &a[i]);
		usleep(50 * 1000);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	cr_assert(strstr(a[0].r.body, "lang=fr") != NULL);
	cr_assert(strstr(a[1].r.body, "lang=de") != NULL);
	cr_assert(strstr(a[2].r.body, "lang=fr") != NULL);
	cr_assert_eq(origin_count(&e, "/vary/lang", NULL), 2);
	cr_assert_eq(proxy_metric(&e,
	    "sumcache_collapsed_total{outcome=\"served\"}"), 1);
	for (int i = 0; i < 3; i++)
		resp_free(&a[i].r);
	env_stop(&e);
}

Test(collapse, the_wait_is_bounded)
{
	const char *opts[] = {"collapsed_forwarding_timeout=300ms", NULL};
	struct env e;

	env_start(&e, opts);
	cr_assert_eq(threads_get(&e, env_url(&e, "/obj/bound?max_age=60&"
	    "size=1000&delay=1500"), 4, "bound", 1000, NULL), 4);
	cr_assert_eq(origin_count(&e, "/obj/bound", NULL), 4);
	cr_assert_eq(proxy_metric(&e,
	    "sumcache_collapsed_total{outcome=\"timeout\"}"), 3);
	env_stop(&e);
}

Test(collapse, a_peer_question_joins_the_fetch)
{
	struct env e;
	const char *oic[] = {NULL, "Cache-Control: only-if-cached"};

	env_start(&e, NULL);
	/* the second thread starts a little after the first */
	struct get_arg a[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		a[i] = (struct get_arg){.e = &e, .url = env_url(&e,
		    "/obj/oic?max_age=60&size=700&delay=500"),
		    .header = oic[i]};
		pthread_create(&th[i], NULL, get_thread, &a[i]);
		usleep(100 * 1000);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(a[1].r.status, 200, "only-if-cached got %ld",
	    a[1].r.status);
	cr_assert(body_is(a[1].r.body, a[1].r.len, "oic", 700));
	cr_assert_eq(origin_count(&e, "/obj/oic", NULL), 1);
	for (int i = 0; i < 2; i++)
		resp_free(&a[i].r);
	env_stop(&e);
}

Test(collapse, a_conditional_miss_fills_the_cache)
{
	struct env e;
	const char *inm[] = {"If-None-Match: \"cond-1\"", NULL};
	struct resp r;
	int cond = -1;

	env_start(&e, NULL);
	const char *u = env_url(&e, "/obj/cond?max_age=60&etag=1&size=4000");
	proxy_get(&e, u, inm, &r);
	cr_assert_eq(r.status, 304);
	resp_free(&r);
	/* the origin was asked for the whole object, and it is stored */
	cr_assert_eq(origin_count(&e, "/obj/cond", &cond), 1);
	cr_assert_eq(cond, 0);
	cr_assert_geq(proxy_wait_metric(&e, "sumcache_cache_objects", 1,
	    5000), 1);
	proxy_get(&e, u, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert(body_is(r.body, r.len, "cond", 4000));
	resp_free(&r);
	const char *other[] = {"If-None-Match: \"cond-0\"", NULL};
	proxy_get(&e, u, other, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(origin_count(&e, "/obj/cond", NULL), 1);
	env_stop(&e);
}
