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
		if (strstr(code, "_HIT/200") && strcmp(method, "GET") == 0)
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

Test(squid_digest, real_squid_digest_contains_every_cached_url,
    .timeout = 90)
{
	struct env e;
	struct squid s = {0};
	char url[256], durl[128];
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

	/* a digest rebuilt after the objects were cached (Last-Modified has
	 * one-second resolution, hence the strict comparison) */
	snprintf(durl, sizeof(durl),
	    "http://127.0.0.1:%d/squid-internal-periodic/store_digest", s.port);
	bool fresh = false;
	for (int tries = 0; tries < 60 && !fresh; tries++) {
		http_request(0, "GET", durl, NULL, NULL, 0, false, &r);
		fresh = r.status == 200 && last_modified(&r) > cached_by;
		if (!fresh) {
			resp_free(&r);
			usleep(500000);
		}
	}
	cr_assert(fresh, "Squid published no digest after %ld; see "
	    "%s/cache.log", (long)cached_by, s.dir);
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
		cr_expect(psum_contains(p, &k), "%s missing from Squid's "
		    "digest", urls[i]);
	}
	sumkey_hasher_free(&h);
	psum_free(&p);
	resp_free(&r);
	squid_stop(&s);
	env_stop(&e);
}
