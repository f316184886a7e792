/*
 * PURGE through the real binary: every variant of a URL leaves the cache,
 * the next request goes to the origin, and only purge_allow may.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"

static struct env P;

static void
down(void)
{
	env_stop(&P);
}

TestSuite(purge, .fini = down, .timeout = 60);

static long
purge(const char *url)
{
	struct resp r;

	proxy_request(&P, "PURGE", url, NULL, NULL, 0, false, &r);
	long status = r.status;
	resp_free(&r);
	return status;
}

Test(purge, drops_every_variant_and_only_from_purge_allow_addresses)
{
	const char *en[] = {"Accept-Language: en", NULL};
	const char *fr[] = {"Accept-Language: fr", NULL};
	struct resp r;

	env_start(&P, NULL);
	const char *obj = env_url(&P, "/obj/pg?max_age=600");
	const char *vary = env_url(&P, "/vary/pg");
	proxy_get(&P, obj, NULL, &r);
	resp_free(&r);
	proxy_get(&P, vary, en, &r);
	resp_free(&r);
	proxy_get(&P, vary, fr, &r);
	resp_free(&r);

	cr_assert_eq(purge(obj), 200);
	cr_assert_eq(purge(vary), 200);
	cr_assert_eq(purge(vary), 404, "nothing left to purge");
	cr_assert_eq(origin_count(&P, "PURGE", NULL), 0,
	    "PURGE never reaches the origin");
	proxy_get(&P, obj, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "MISS from test-node");
	resp_free(&r);
	proxy_get(&P, vary, fr, &r);
	cr_assert_str_eq(r.body, "lang=fr\n");
	resp_free(&r);
	cr_assert_eq(origin_count(&P, "/obj/pg", NULL), 2);
	cr_assert_eq(origin_count(&P, "/vary/pg", NULL), 3);
	cr_assert_eq(proxy_metric(&P, "sumcache_purges_total{result=\"purged\"}"),
	    2);
	cr_assert_eq(proxy_metric(&P, "sumcache_purges_total{result=\"absent\"}"),
	    1);
	cr_assert(harness_file_has(P.log, "PURGE", "/obj/pg", 5000));

	/* loopback left out of purge_allow: refused, the copy stays */
	const char *const others[] = {"purge_allow=10.0.0.0/8", NULL};
	proxy_restart(&P, others, SIGTERM);
	proxy_get(&P, obj, NULL, &r);
	resp_free(&r);
	cr_assert_eq(purge(obj), 403);
	proxy_get(&P, obj, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	cr_assert_eq(proxy_metric(&P, "sumcache_purges_total{result=\"denied\"}"),
	    1);
}
