/*
 * Stale copies served on purpose (RFC 5861), end to end: the real binary
 * in front of an origin that is slow, or answers 503, on purpose.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static struct env S;

static void
up(void)
{
	env_start(&S, NULL);
}

static void
down(void)
{
	env_stop(&S);
}

TestSuite(stale, .init = up, .fini = down, .timeout = 60);

/* GETs u through the proxy; returns how long it took, in ms. */
static long
timed_get(const char *u, const char *header, struct resp *r)
{
	const char *h[] = {header, NULL};
	long t0 = harness_now_ms();

	proxy_get(&S, u, header ? h : NULL, r);
	return harness_now_ms() - t0;
}

/* The origin answers every /obj/ with this status from now on (0: as
 * asked). */
static void
origin_status(int code)
{
	struct resp r;
	char u[128];

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/__status?code=%d", S.oport,
	    code);
	http_request(0, "GET", u, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
}

Test(stale, while_revalidate_answers_at_once_and_refreshes_behind)
{
	const char *u = env_url(&S, "/obj/swr?etag=1&size=500&delay=800&"
	    "cc=max-age=1,stale-while-revalidate=60");
	struct resp r;
	int cond = 0;

	timed_get(u, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	usleep(2100 * 1000);  /* stale now, within the window */
	long ms = timed_get(u, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 500);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert_lt(ms, 600, "the stale answer took %ld ms", ms);
	resp_free(&r);
	/* the revalidation behind it: one conditional request, then a
	 * fresh copy */
	cr_assert_geq(proxy_wait_metric(&S,
	    "sumcache_revalidations_total{result=\"unmodified\"}", 1, 5000), 1);
	cr_assert_eq(origin_count(&S, "/obj/swr", &cond), 2);
	cr_assert_eq(cond, 1);
	cr_assert_eq(proxy_metric(&S,
	    "sumcache_stale_served_total{reason=\"while_revalidate\"}"), 1);
	ms = timed_get(u, NULL, &r);
	cr_assert_lt(ms, 600);
	cr_assert_lt(atoi(resp_header(&r, "Age")), 2);
	resp_free(&r);
	cr_assert_eq(origin_count(&S, "/obj/swr", NULL), 2);
	/* the revalidation has its own access-log line */
	cr_assert(harness_file_has(S.log, "TCP_REFRESH_UNMODIFIED/304",
	    "/obj/swr", 2000));
	cr_assert(harness_file_has(S.log, "TCP_STALE_HIT/200", "/obj/swr",
	    2000));
}

Test(stale, while_revalidate_refreshes_once_for_a_crowd)
{
	const char *u = env_url(&S, "/obj/swr2?size=300&delay=600&"
	    "cc=max-age=1,stale-while-revalidate=60");
	struct resp r;

	timed_get(u, NULL, &r);
	resp_free(&r);
	usleep(2100 * 1000);
	for (int i = 0; i < 5; i++) {
		cr_assert_lt(timed_get(u, NULL, &r), 500);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	/* no validator: the refresh is a whole GET, stored when it ends */
	usleep(1000 * 1000);
	cr_assert_eq(origin_count(&S, "/obj/swr2", NULL), 2);
	cr_assert_lt(timed_get(u, NULL, &r), 500);
	cr_assert_lt(atoi(resp_header(&r, "Age")), 2);
	resp_free(&r);
}

Test(stale, while_revalidate_never_past_must_revalidate)
{
	const char *u = env_url(&S, "/obj/swrmr?etag=1&size=200&delay=700&"
	    "cc=max-age=1,stale-while-revalidate=60,must-revalidate");
	struct resp r;

	timed_get(u, NULL, &r);
	resp_free(&r);
	usleep(2100 * 1000);
	cr_assert_geq(timed_get(u, NULL, &r), 650);  /* waited */
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(proxy_metric(&S,
	    "sumcache_stale_served_total{reason=\"while_revalidate\"}"), 0);
}

Test(stale, if_error_answers_a_503_with_the_stale_copy)
{
	const char *u = env_url(&S, "/obj/sie?etag=1&size=400&"
	    "cc=max-age=1,stale-if-error=60");
	const char *plain = env_url(&S, "/obj/sieno?etag=1&size=400&cc=max-age=1");
	const char *smax = env_url(&S, "/obj/siesm?etag=1&size=400&"
	    "cc=s-maxage=1,stale-if-error=60");
	struct resp r;

	timed_get(u, NULL, &r);
	resp_free(&r);
	timed_get(plain, NULL, &r);
	resp_free(&r);
	timed_get(smax, NULL, &r);
	resp_free(&r);
	usleep(2100 * 1000);
	origin_status(503);
	timed_get(u, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 400);
	resp_free(&r);
	cr_assert_eq(proxy_metric(&S,
	    "sumcache_stale_served_total{reason=\"if_error\"}"), 1);
	cr_assert(harness_file_has(S.log, "TCP_REFRESH_FAIL_OLD/200",
	    "/obj/sie?", 2000));
	/* without the directive, or past s-maxage, the 503 goes through */
	timed_get(plain, NULL, &r);
	cr_assert_eq(r.status, 503);
	resp_free(&r);
	timed_get(smax, NULL, &r);
	cr_assert_eq(r.status, 503);
	resp_free(&r);
	/* a request may ask for it itself */
	timed_get(plain, "Cache-Control: stale-if-error=120", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 400);
	resp_free(&r);
	origin_status(0);
	cr_assert_eq(proxy_metric(&S,
	    "sumcache_stale_served_total{reason=\"if_error\"}"), 2);
}

Test(stale, while_revalidate_behind_a_failing_origin_keeps_the_copy)
{
	const char *u = env_url(&S, "/obj/swrerr?etag=1&size=250&"
	    "cc=max-age=1,stale-while-revalidate=60");
	struct resp r;

	timed_get(u, NULL, &r);
	resp_free(&r);
	usleep(2100 * 1000);
	origin_status(503);
	timed_get(u, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	/* the revalidation behind it got a 503, logged; the copy stays */
	cr_assert(harness_file_has(S.log, "/503", "/obj/swrerr", 3000));
	timed_get(u, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 250);
	resp_free(&r);
	origin_status(0);
}

Test(stale, while_revalidate_refreshes_once_without_collapsing)
{
	const char *opts[] = {"collapsed_forwarding_timeout=0", NULL};
	struct env e;
	struct resp r;

	/* the table of running fetches is not collapsed forwarding's
	 * alone: with joining off, one refresh still runs at a time */
	env_start(&e, opts);
	const char *u = env_url(&e, "/obj/swr3?size=300&delay=600&"
	    "cc=max-age=1,stale-while-revalidate=60");
	proxy_get(&e, u, NULL, &r);
	resp_free(&r);
	usleep(2100 * 1000);
	for (int i = 0; i < 5; i++) {
		proxy_get(&e, u, NULL, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	usleep(1000 * 1000);
	cr_assert_eq(origin_count(&e, "/obj/swr3", NULL), 2);
	env_stop(&e);
}
