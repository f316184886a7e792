/*
 * The Squid Cache Digest sumcache serves (PROTOCOLS.md section 2): its
 * headers, Squid's receiver checks on its body, and every cached URL in
 * it under Squid's keys.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "harness.h"
#include "sumkey.h"

static struct env env;

static void
down(void)
{
	env_stop(&env);
}

TestSuite(digest_serve, .fini = down, .timeout = 60);

Test(digest_serve, digest_holds_every_cached_url_and_passes_squids_checks)
{
	static const char *const opts[] = {"digest_rebuild_period=1s", NULL};
	struct resp r;
	char url[40][128], durl[128];

	env_start(&env, opts);
	for (int i = 0; i < 40; i++) {
		snprintf(url[i], sizeof(url[i]), "http://127.0.0.1:%d/obj/dg%d"
		    "?max_age=600", env.oport, i);
		proxy_get(&env, url[i], NULL, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	sleep(1);  /* the copy served is renewed once a second here */
	/* origin-form, as Squid asks a sibling; absolute-form works too */
	snprintf(durl, sizeof(durl), "http://127.0.0.1:%d/squid-internal-"
	    "periodic/store_digest", env.pport);
	http_request(0, "GET", durl, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	cr_expect_str_eq(resp_header(&r, "Content-Type"),
	    "application/cache-digest");
	cr_expect_not_null(resp_header(&r, "Expires"));
	cr_expect_not_null(resp_header(&r, "Last-Modified"));

	struct psum *p = NULL;
	struct digest_info info;
	const char *why = NULL;
	cr_assert_eq(digest_parse((const uint8_t *)r.body, r.len, &p, &info,
	    &why), 0, "refused: %s", why);
	cr_expect_eq(info.version, 5);
	cr_expect_eq(info.hash_count, 4);
	cr_expect_eq(info.bits_per_entry, 5);
	cr_expect_eq(info.count, 40);
	struct sumkey_hasher *h = sumkey_hasher_new(SUM_SQUID_MD5);
	for (int i = 0; i < 40; i++) {
		struct sumkey k;
		cr_assert_eq(sumkey_make(h, SUM_METHOD_GET, url[i],
		    strlen(url[i]), &k), 0);
		cr_expect(psum_contains(p, &k, 0), "%s missing", url[i]);
	}
	/* HEAD, as a URL nobody cached: the method is part of Squid's key */
	struct sumkey k;
	sumkey_make(h, SUM_METHOD_HEAD, url[0], strlen(url[0]), &k);
	int claimed = psum_contains(p, &k, 0);
	sumkey_hasher_free(&h);
	psum_free(&p);
	resp_free(&r);
	cr_expect(!claimed, "a HEAD key should not be claimed (1 in ~50)");

	/* through the proxy in absolute form, as a proxy client asks: by
	 * our address or our node name; another host on our port is an
	 * ordinary request (nothing listens there: 502) */
	proxy_get(&env, durl, NULL, &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(resp_header(&r, "Content-Type"),
	    "application/cache-digest");
	resp_free(&r);
	snprintf(durl, sizeof(durl), "http://test-node:%d/squid-internal-"
	    "periodic/store_digest", env.pport);
	proxy_get(&env, durl, NULL, &r);
	cr_expect_eq(r.status, 200);
	resp_free(&r);
	snprintf(durl, sizeof(durl), "http://127.0.0.2:%d/squid-internal-"
	    "periodic/store_digest", env.pport);
	proxy_get(&env, durl, NULL, &r);
	cr_expect_eq(r.status, 502);
	resp_free(&r);
}

/* The digest served at t holds a URL only if its copy stays fresh until
 * the digest expires at t + period (Squid's rule for its hourly digest;
 * ours follows the store continuously, so it is applied at each copy). */
static struct psum *
fetch_digest(struct digest_info *info)
{
	char durl[128];
	struct resp r;
	struct psum *p = NULL;
	const char *why = NULL;

	snprintf(durl, sizeof(durl), "http://127.0.0.1:%d/squid-internal-"
	    "periodic/store_digest", env.pport);
	http_request(0, "GET", durl, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(digest_parse((const uint8_t *)r.body, r.len, &p, info,
	    &why), 0, "refused: %s", why);
	resp_free(&r);
	return p;
}

static bool
digest_lists(struct psum *p, const char *url)
{
	struct sumkey_hasher *h = sumkey_hasher_new(SUM_SQUID_MD5);
	struct sumkey k;

	cr_assert_eq(sumkey_make(h, SUM_METHOD_GET, url, strlen(url), &k), 0);
	sumkey_hasher_free(&h);
	return psum_contains(p, &k, 0);
}

Test(digest_serve, copies_that_expire_before_the_next_renewal_are_left_out)
{
	static const char *const opts[] = {"digest_rebuild_period=3s", NULL};
	/* fresh for 600 s: listed; for 2 s: never, it expires before the
	 * first digest does; for 6 s: listed by the first digest, not by
	 * the one made 3 s later, which outlives it */
	static const int ages[] = {600, 2, 6};
	char url[3][5][128];
	struct resp r;
	struct digest_info info;

	env_start(&env, opts);
	for (int a = 0; a < 3; a++)
		for (int i = 0; i < 5; i++) {
			snprintf(url[a][i], sizeof(url[a][i]), "http://127.0.0.1:"
			    "%d/obj/ren%d-%d?max_age=%d", env.oport, a, i,
			    ages[a]);
			proxy_get(&env, url[a][i], NULL, &r);
			cr_assert_eq(r.status, 200);
			resp_free(&r);
		}
	struct psum *p = fetch_digest(&info);
	cr_expect_eq(info.count, 10);
	for (int i = 0; i < 5; i++) {
		cr_expect(digest_lists(p, url[0][i]), "%s missing", url[0][i]);
		cr_expect(!digest_lists(p, url[1][i]), "%s listed", url[1][i]);
		cr_expect(digest_lists(p, url[2][i]), "%s missing", url[2][i]);
	}
	psum_free(&p);

	usleep(3300 * 1000);
	p = fetch_digest(&info);
	cr_expect_eq(info.count, 5);
	cr_expect_eq(proxy_metric(&env, "sumcache_squid_digest_entries"), 5);
	cr_expect_gt(proxy_metric(&env, "sumcache_squid_digest_table_bytes"),
	    0);
	for (int i = 0; i < 5; i++) {
		cr_expect(digest_lists(p, url[0][i]), "%s missing", url[0][i]);
		cr_expect(!digest_lists(p, url[2][i]), "%s still listed",
		    url[2][i]);
	}
	psum_free(&p);
}

Test(digest_serve, off_means_404)
{
	static const char *const opts[] = {"digest_generation=off", NULL};
	struct resp r;
	char durl[128];

	env_start(&env, opts);
	snprintf(durl, sizeof(durl), "http://127.0.0.1:%d/squid-internal-"
	    "periodic/store_digest", env.pport);
	http_request(0, "GET", durl, NULL, NULL, 0, false, &r);
	cr_expect_eq(r.status, 404);
	resp_free(&r);
}
