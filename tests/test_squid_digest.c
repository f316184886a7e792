/*
 * A Cache Digest made by a real Squid 5.7 parses with Squid's receiver
 * checks, and every URL Squid says it cached is in it: sumcache's
 * squid-md5 keys and positions are Squid's own.
 */
#define _GNU_SOURCE /* strptime, timegm */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "harness.h"
#include "squid.h"
#include "sumkey.h"

enum { OBJECTS = 40 };

/* URLs the access log shows as served from Squid's cache */
static int
squid_cached_urls(const struct squid *s, char urls[][128], int max)
{
	FILE *f = fopen(s->access_log, "r");
	char line[1024];
	int n = 0;

	cr_assert_not_null(f, "%s", s->access_log);
	while (fgets(line, sizeof(line), f) && n < max) {
		char code[64], method[16], url[128];
		if (sscanf(line, "%*s %*s %*s %63s %*s %15s %127s", code,
		    method, url) != 3)
			continue;
		/* the test's objects only: Squid may log hits on its own
		 * digest (squid-internal-periodic) among them */
		if (strstr(code, "_HIT/200") && strcmp(method, "GET") == 0 &&
		    strstr(url, "/obj/d") != NULL)
			snprintf(urls[n++], 128, "%s", url);
	}
	fclose(f);
	return n;
}

/* Squid's Last-Modified of its digest, in seconds since the epoch */
static time_t
last_modified(const struct resp *r)
{
	const char *v = resp_header(r, "Last-Modified");
	struct tm tm = {0};

	if (v == NULL || strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm) == NULL)
		return 0;
	return timegm(&tm);
}

/* Waits for Squid's digest rebuilt after time after (Last-Modified has
 * one-second resolution, hence the strict comparison); r holds it. */
static void
fresh_squid_digest(const struct squid *s, time_t after, struct resp *r)
{
	char durl[128];
	bool fresh = false;

	snprintf(durl, sizeof(durl),
	    "http://127.0.0.1:%d/squid-internal-periodic/store_digest", s->port);
	for (int tries = 0; tries < 60 && !fresh; tries++) {
		http_request(0, "GET", durl, NULL, NULL, 0, false, r);
		fresh = r->status == 200 && last_modified(r) > after;
		if (!fresh) {
			resp_free(r);
			usleep(500000);
		}
	}
	cr_assert(fresh, "Squid published no digest after %ld; see "
	    "%s/cache.log", (long)after, s->dir);
}

Test(squid_digest, real_squid_digest_contains_every_cached_url,
    .timeout = 90)
{
	struct env e;
	struct squid s = {0};
	char url[256];
	struct resp r;

	origin_start(&e);
	squid_start(&s, e.dir, "digest_generation on\n"
	    "digest_rebuild_period 1 second\n"
	    "digest_rewrite_period 1 second\n");
	/* fetched twice: the second answer proves Squid kept the object */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < OBJECTS; i++) {
			snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/d%d"
			    "?max_age=3600&size=%d", e.oport, i, 100 + 37 * i);
			http_request(s.port, "GET", url, NULL, NULL, 0, false,
			    &r);
			cr_assert_eq(r.status, 200);
			resp_free(&r);
		}
	time_t cached_by = time(NULL);

	/* Squid writes a log line after the response, so the last one may
	 * still be on its way */
	static char urls[OBJECTS][128];
	int n = 0;
	for (int tries = 0; tries < 50 && n < OBJECTS; tries++) {
		n = squid_cached_urls(&s, urls, OBJECTS);
		if (n < OBJECTS)
			usleep(100000);
	}
	cr_assert_eq(n, OBJECTS, "Squid served %d of %d objects from its "
	    "cache; see %s", n, OBJECTS, s.access_log);

	fresh_squid_digest(&s, cached_by, &r);
	cr_assert_str_eq(resp_header(&r, "Content-Type"),
	    "application/cache-digest");

	struct psum *p = NULL;
	struct digest_info info;
	const char *why = "";
	cr_assert_eq(digest_parse((const uint8_t *)r.body, r.len, &p, &info,
	    &why), 0, "Squid's digest rejected: %s", why);
	cr_assert_eq(info.version, 5);
	cr_assert_eq(info.hash_count, 4);
	cr_assert_eq(info.bits_per_entry, 5, "Squid's default");
	cr_assert_geq(info.count, OBJECTS);

	struct sumkey_hasher *h = sumkey_hasher_new(SUM_SQUID_MD5);
	for (int i = 0; i < n; i++) {
		struct sumkey k;
		cr_assert_eq(sumkey_make(h, SUM_METHOD_GET, urls[i],
		    strlen(urls[i]), &k), 0);
		cr_expect(psum_contains(p, &k, 0), "%s missing from Squid's "
		    "digest", urls[i]);
	}
	sumkey_hasher_free(&h);
	psum_free(&p);
	resp_free(&r);
	squid_stop(&s);
	env_stop(&e);
}

/*
 * Squid 5.7 corrupts the start of every peer digest mask it reads (Squid
 * bug 5510, fixed upstream in 2025: peerDigestHandleReply moves as many
 * bytes as a step consumed, not as many as are left, so the rest of the
 * first 4 KB store page holds stale bytes). A key with a bit there may be
 * a false miss in Squid, whoever made the digest; the key depends on the
 * origin's port, so one run in ten failed. The object is named so that
 * its four bits lie past the first 8 KB of our mask, which
 * digest_generation sizes for the default cache_mem (256 MB, 1 KB
 * objects).
 */
static void
url_past_corrupted_page(char *url, size_t len, int oport)
{
	struct sumkey_hasher *h = sumkey_hasher_new(SUM_SQUID_MD5);
	uint64_t m = 8ull * digest_mask_size(256u * 1024, 5);

	cr_assert_not_null(h);
	for (int i = 0; i < 100; i++) {
		struct sumkey k;
		uint64_t pos[SUM_SQUID_K];
		bool clear = true;

		snprintf(url, len, "http://127.0.0.1:%d/obj/in-sumcache-%d?"
		    "max_age=600", oport, i);
		cr_assert_eq(sumkey_make(h, SUM_METHOD_GET, url, strlen(url),
		    &k), 0);
		sumkey_positions(SUM_SQUID_MD5, &k, SUM_SQUID_K, m, pos);
		for (int j = 0; j < SUM_SQUID_K; j++)
			clear = clear && pos[j] >= 8 * 8192;
		if (clear) {
			sumkey_hasher_free(&h);
			return;
		}
	}
	cr_assert_fail("no name in 100 keeps clear of the first 8 KB");
}

/*
 * Squid with sumcache as a digest sibling (no ICP): Squid fetches our
 * digest, accepts it, and sends a request for an object sumcache holds to
 * sumcache, which its log calls CD_SIBLING_HIT.
 */
Test(squid_digest, squid_forwards_a_digest_hit_to_sumcache, .timeout = 90)
{
	static const char *const opts[] = {"digest_rebuild_period=1s", NULL};
	struct env e;
	struct squid s = {0};
	char url[256], other[256], extra[256];
	struct resp r;

	env_start(&e, opts);
	url_past_corrupted_page(url, sizeof(url), e.oport);
	proxy_get(&e, url, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	sleep(1);  /* into the next copy of our digest */

	/* 72,2: Squid logs when it has read a peer's digest */
	snprintf(extra, sizeof(extra), "cache_peer 127.0.0.1 sibling %d 0 "
	    "no-query name=sumcache\ndebug_options ALL,1 72,2\n", e.pport);
	squid_start(&s, e.dir, extra);
	/* Squid fetches a peer's digest when a request first needs it */
	snprintf(other, sizeof(other), "http://127.0.0.1:%d/obj/wake?"
	    "max_age=600", e.oport);
	http_request(s.port, "GET", other, NULL, NULL, 0, false, &r);
	resp_free(&r);
	cr_assert_eq(proxy_wait_metric(&e,
	    "sumcache_squid_digests_served_total", 1, 10000), 1,
	    "Squid never fetched our digest");
	/* Squid reads and checks it after our side is done; its cache.log
	 * says when (a fixed second was not always enough under load) */
	char cache_log[sizeof(s.dir) + 16];
	snprintf(cache_log, sizeof(cache_log), "%s/cache.log", s.dir);
	cr_assert(harness_file_has(cache_log, "Done! Got", NULL, 10000),
	    "Squid did not finish reading our digest; see %s", cache_log);
	usleep(200000);  /* the line comes just before the digest is used */

	http_request(s.port, "GET", url, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "in-sumcache") != NULL);
	resp_free(&r);
	cr_expect(harness_file_has(s.access_log, url, "CD_SIBLING_HIT/127.0.0.1",
	    8000), "Squid did not use our digest; see %s and %s/cache.log",
	    s.access_log, s.dir);
	cr_expect_eq(origin_count(&e, "/obj/in-sumcache", NULL), 1);
	squid_stop(&s);
	env_stop(&e);
}

/*
 * sumcache with a Squid as its type=squid-digest peer: sumcache fetches
 * Squid's digest when a lookup first wants it, finds an object only Squid
 * holds in it, and fetches it from Squid, which serves it from its cache
 * (its access log says so) without asking the origin.
 */
Test(squid_digest, sumcache_forwards_a_digest_hit_to_squid, .timeout = 90)
{
	struct env e;
	struct squid s = {0};
	char peer[128], url[256], wake[256];
	struct resp r;

	squid_ports(&s, "127.0.0.1", false);
	snprintf(peer, sizeof(peer), "peer=squid 127.0.0.1:%d "
	    "type=squid-digest", s.port);
	const char *opts[] = {"sharing=summary", peer, "icp_listen=none",
	    NULL};
	/* sumcache first (it fetches nothing until a lookup wants it): the
	 * origin comes with it */
	env_start(&e, opts);
	squid_start(&s, e.dir, "digest_generation on\n"
	    "digest_rebuild_period 1 second\n"
	    "digest_rewrite_period 1 second\n");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/in-squid?"
	    "max_age=3600&size=3000", e.oport);
	http_request(s.port, "GET", url, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	time_t cached_by = time(NULL);
	fresh_squid_digest(&s, cached_by, &r);
	resp_free(&r);

	snprintf(wake, sizeof(wake), "http://127.0.0.1:%d/obj/wake?"
	    "max_age=600", e.oport);
	proxy_get(&e, wake, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_geq(proxy_wait_metric(&e, "sumcache_peer_summary_entries"
	    "{peer=\"squid\"}", 1, 10000), 1, "sumcache did not load Squid's "
	    "digest; see %s/sumcache.out", e.dir);

	proxy_get(&e, url, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_expect_eq(r.len, 3000);
	resp_free(&r);
	cr_expect(harness_file_has(e.log, url, "CD_SIBLING_HIT/squid", 5000),
	    "sumcache did not forward the digest hit; see %s", e.log);
	/* Squid's own word: a cache hit for the URL (the test's fetch
	 * above was its miss) */
	cr_expect(harness_file_has(s.access_log, url, "TCP_MEM_HIT/200",
	    5000) || harness_file_has(s.access_log, url, "TCP_HIT/200", 1),
	    "Squid did not serve sumcache from its cache; see %s",
	    s.access_log);
	cr_expect_eq(origin_count(&e, "/obj/in-squid", NULL), 1);
	cr_expect_eq(proxy_metric(&e, "sumcache_peer_remote_hits_total"
	    "{peer=\"squid\"}"), 1);
	squid_stop(&s);
	env_stop(&e);
}
