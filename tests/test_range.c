/*
 * Byte ranges end to end: 206s from the memory and the disk tier, from a
 * fetch of the whole object, and ranges sent on to the origin; the test
 * origin answers one range itself and logs the Range it was sent.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct env R;

/* Object bodies are their name over and over: a name of prime length
 * shows a range off by any small amount. */
#define NAME "rangeobject0123456789abcdefghi"  /* 31 characters */

/* The URL of /obj/NAME?query on the running origin (env_url's
 * buffers: a few stay valid at once). */
static const char *
obj_url(const char *query)
{
	char path[256];

	cr_assert_gt(R.oport, 0, "the origin is not started");
	snprintf(path, sizeof(path), "/obj/" NAME "?%s", query);
	return env_url(&R, path);
}

/* Whether len bytes at p are the object's from offset from. */
static bool
bytes_at(const char *p, size_t len, uint64_t from)
{
	size_t nl = strlen(NAME);

	for (size_t i = 0; i < len; i++)
		if (p[i] != NAME[(from + i) % nl])
			return false;
	return true;
}

static void
get_range(const char *u, const char *range, struct resp *r)
{
	char h[4096], h2[256];
	const char *extra[3] = {h, NULL, NULL};

	snprintf(h, sizeof(h), "Range: %s", range);
	if (strchr(range, '\n') != NULL) {
		/* "RANGE\nOTHER: field" */
		const char *nl = strchr(range, '\n');
		snprintf(h, sizeof(h), "Range: %.*s", (int)(nl - range), range);
		snprintf(h2, sizeof(h2), "%s", nl + 1);
		extra[1] = h2;
	}
	proxy_get(&R, u, extra, r);
}

/* A 206 of one range: its Content-Range and bytes. */
static void
expect_part(const struct resp *r, uint64_t from, uint64_t to, uint64_t total)
{
	char want[128];

	cr_assert_eq(r->status, 206, "status %ld", r->status);
	snprintf(want, sizeof(want), "bytes %llu-%llu/%llu",
	    (unsigned long long)from, (unsigned long long)to,
	    (unsigned long long)total);
	cr_assert_str_eq(resp_header(r, "Content-Range"), want);
	cr_assert_eq(r->len, to - from + 1);
	cr_assert(bytes_at(r->body, r->len, from), "wrong bytes for %s", want);
}

/*
 * Reads a multipart/byteranges body: each part's Content-Range and bytes
 * checked, the closing delimiter last. Returns the parts' ranges in
 * from[] and to[] (at most max); the count.
 */
static int
parts(const struct resp *r, uint64_t *from, uint64_t *to, int max)
{
	const char *ct = resp_header(r, "Content-Type");
	char boundary[128], delim[140];
	int n = 0;

	cr_assert_not_null(ct);
	cr_assert(sscanf(ct, "multipart/byteranges; boundary=%127s",
	    boundary) == 1, "Content-Type: %s", ct);
	snprintf(delim, sizeof(delim), "--%s", boundary);
	const char *p = r->body, *end = r->body + r->len;
	for (;;) {
		cr_assert(strncmp(p, delim, strlen(delim)) == 0, "no delimiter "
		    "at %td", p - r->body);
		p += strlen(delim);
		if (strncmp(p, "--\r\n", 4) == 0) {
			cr_assert_eq(p + 4, end, "bytes after the close");
			return n;
		}
		cr_assert(strncmp(p, "\r\n", 2) == 0);
		const char *hend = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		cr_assert_not_null(hend);
		const char *cr = memmem(p, (size_t)(hend - p), "Content-Range: "
		    "bytes ", 21);
		cr_assert_not_null(cr, "a part without Content-Range");
		unsigned long long a, b, total;
		cr_assert(sscanf(cr + 21, "%llu-%llu/%llu", &a, &b, &total) == 3);
		cr_assert_not_null(memmem(p, (size_t)(hend - p),
		    "Content-Type: application/octet-stream", 38));
		p = hend + 4;
		cr_assert_leq(p + (b - a + 1) + 2, end);
		cr_assert(bytes_at(p, b - a + 1, a), "part %llu-%llu", a, b);
		cr_assert_lt(n, max);
		from[n] = a;
		to[n++] = b;
		p += b - a + 1;
		cr_assert(strncmp(p, "\r\n", 2) == 0);
		p += 2;
	}
}

static void
fill_cache(const char *u, size_t size)
{
	struct resp r;

	proxy_get(&R, u, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, size);
	resp_free(&r);
}

static void
down(void)
{
	env_stop(&R);
}

TestSuite(range, .fini = down, .timeout = 60);

Test(range, a_stored_object_answers_one_range_suffix_and_open_ranges)
{
	struct resp r;

	env_start(&R, NULL);
	const char *u = obj_url("max_age=300&size=5000");

	fill_cache(u, 5000);
	get_range(u, "bytes=100-199", &r);
	expect_part(&r, 100, 199, 5000);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	get_range(u, "bytes=-50", &r);
	expect_part(&r, 4950, 4999, 5000);
	resp_free(&r);
	get_range(u, "bytes=4990-", &r);
	expect_part(&r, 4990, 4999, 5000);
	resp_free(&r);
	/* a last position past the end ends at the end */
	get_range(u, "bytes=4000-999999", &r);
	expect_part(&r, 4000, 4999, 5000);
	resp_free(&r);
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 1);
	cr_assert_eq(proxy_metric(&R,
	    "sumcache_range_requests_total{answer=\"partial\"}"), 4);
	/* HEAD ignores Range */
	const char *h[] = {"Range: bytes=0-9", NULL};
	proxy_request(&R, "HEAD", u, h, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
}

Test(range, several_ranges_are_one_multipart_answer_merged_in_order)
{
	struct resp r;
	uint64_t from[8], to[8];

	env_start(&R, NULL);
	const char *u = obj_url("max_age=300&size=5000");

	fill_cache(u, 5000);
	/* out of order, two overlapping and two touching: three parts */
	get_range(u, "bytes=4000-4099, 0-9,5-20,21-30 ,-10", &r);
	cr_assert_eq(r.status, 206);
	cr_assert_null(resp_header(&r, "Content-Range"));
	cr_assert_eq(parts(&r, from, to, 8), 3);
	cr_assert(from[0] == 0 && to[0] == 30);
	cr_assert(from[1] == 4000 && to[1] == 4099);
	cr_assert(from[2] == 4990 && to[2] == 4999);
	/* Content-Length was the body's (curl read exactly that much) */
	char len[32];
	snprintf(len, sizeof(len), "%zu", r.len);
	cr_assert_str_eq(resp_header(&r, "Content-Length"), len);
	resp_free(&r);
	/* many overlapping ranges cost no more than one */
	char many[2048] = "bytes=0-99";
	for (int i = 1; i < 100; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
		    ",%d-%d", i, i + 99);
	get_range(u, many, &r);
	expect_part(&r, 0, 198, 5000);
	resp_free(&r);
	/* more ranges than a 206 holds: the whole */
	char apart[2048] = "bytes=0-0";
	for (int i = 1; i < 40; i++)
		snprintf(apart + strlen(apart), sizeof(apart) - strlen(apart),
		    ",%d-%d", i * 10, i * 10);
	get_range(u, apart, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 5000);
	resp_free(&r);
}

Test(range, unsatisfiable_is_416_and_what_does_not_parse_is_ignored)
{
	struct resp r;

	env_start(&R, NULL);
	const char *u = obj_url("max_age=300&size=5000");

	fill_cache(u, 5000);
	get_range(u, "bytes=5000-6000", &r);
	cr_assert_eq(r.status, 416);
	cr_assert_str_eq(resp_header(&r, "Content-Range"), "bytes */5000");
	cr_assert_eq(r.len, 0);
	resp_free(&r);
	const char *ignored[] = {"bytes=abc", "bytes=9-3", "items=0-9",
	    "bytes=", "bytes=1-2-3"};
	for (size_t i = 0; i < sizeof(ignored) / sizeof(*ignored); i++) {
		get_range(u, ignored[i], &r);
		cr_assert_eq(r.status, 200, "%s: %ld", ignored[i], r.status);
		cr_assert_eq(r.len, 5000);
		resp_free(&r);
	}
	cr_assert_eq(proxy_metric(&R,
	    "sumcache_range_requests_total{answer=\"unsatisfiable\"}"), 1);
	/* the access log has the 416 */
	cr_assert(harness_file_has(R.log, "TCP_MEM_HIT/416", NAME, 3000),
	    "no TCP_MEM_HIT/416 line in the access log");
}

Test(range, if_range_gives_the_range_only_to_the_same_version)
{
	struct resp r;
	char etag[64];

	env_start(&R, NULL);
	const char *u = obj_url("max_age=300&size=5000&etag=1&lm=1");

	fill_cache(u, 5000);
	snprintf(etag, sizeof(etag), "bytes=10-19\nIf-Range: \"%s-1\"", NAME);
	get_range(u, etag, &r);
	expect_part(&r, 10, 19, 5000);
	resp_free(&r);
	get_range(u, "bytes=10-19\nIf-Range: \"other\"", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 5000);
	resp_free(&r);
	/* a weak tag never matches (strong comparison) */
	snprintf(etag, sizeof(etag), "bytes=10-19\nIf-Range: W/\"%s-1\"", NAME);
	get_range(u, etag, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	get_range(u, "bytes=10-19\nIf-Range: Mon, 01 Jan 2024 00:00:00 GMT",
	    &r);
	expect_part(&r, 10, 19, 5000);
	resp_free(&r);
	get_range(u, "bytes=10-19\nIf-Range: Tue, 02 Jan 2024 00:00:00 GMT",
	    &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
}

Test(range, a_miss_fetches_the_whole_object_and_answers_the_range)
{
	struct resp r;

	env_start(&R, NULL);
	const char *u = obj_url("max_age=300&size=5000&etag=1");

	get_range(u, "bytes=1000-1099", &r);
	expect_part(&r, 1000, 1099, 5000);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "MISS from test-node");
	resp_free(&r);
	/* the origin was asked for the whole, and it was kept */
	cr_assert_eq(origin_count(&R, "range=", NULL), 0);
	fill_cache(u, 5000);
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 1);
	/* several ranges on a miss, the If-Range checked against what came */
	const char *u2 = obj_url("max_age=300&size=5000&etag=1&two");
	char h[128];
	uint64_t from[4], to[4];
	snprintf(h, sizeof(h), "bytes=0-1,-2\nIf-Range: \"%s-1\"", NAME);
	get_range(u2, h, &r);
	cr_assert_eq(parts(&r, from, to, 4), 2);
	cr_assert(from[0] == 0 && to[0] == 1 && from[1] == 4998);
	resp_free(&r);
	/* unsatisfiable on a miss: a 416, the object kept all the same */
	const char *u3 = obj_url("max_age=300&size=5000&three");
	get_range(u3, "bytes=7000-", &r);
	cr_assert_eq(r.status, 416);
	resp_free(&r);
	fill_cache(u3, 5000);
	cr_assert_eq(origin_count(&R, "three", NULL), 1);
	/* the client has its range before the rest arrives, and goes: the
	 * fetch goes on, and the whole is kept */
	const char *u4 = obj_url("max_age=300&size=5000&pause=800&four");
	long t0 = harness_now_ms();
	get_range(u4, "bytes=0-9", &r);
	expect_part(&r, 0, 9, 5000);
	cr_assert_lt(harness_now_ms() - t0, 700);
	resp_free(&r);
	usleep(1200 * 1000);
	proxy_get(&R, u4, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(bytes_at(r.body, r.len, 0) && r.len == 5000);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
}

Test(range, beyond_range_fetch_limit_the_range_goes_to_the_origin)
{
	const char *opts[] = {"range_fetch_limit=4KB", NULL};
	struct resp r;

	env_start(&R, opts);
	const char *u = obj_url("max_age=300&size=5000");

	get_range(u, "bytes=1000-1099", &r);
	expect_part(&r, 1000, 1099, 5000);
	resp_free(&r);
	/* asked whole first, then for the range; nothing kept */
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 2);
	cr_assert_eq(origin_count(&R, "range=bytes=1000-1099", NULL), 1);
	cr_assert_eq(proxy_metric(&R,
	    "sumcache_range_requests_total{answer=\"passed\"}"), 1);
	fill_cache(u, 5000);
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 3);
	/* under the limit: whole */
	const char *small = obj_url("max_age=300&size=3000");
	get_range(small, "bytes=0-9", &r);
	expect_part(&r, 0, 9, 3000);
	resp_free(&r);
	cr_assert_eq(origin_count(&R, "range=", NULL), 1);
}

Test(range, range_fetch_limit_0_sends_every_range_on)
{
	const char *opts[] = {"range_fetch_limit=0", NULL};
	struct resp r;

	env_start(&R, opts);
	const char *u = obj_url("max_age=300&size=5000");

	get_range(u, "bytes=10-", &r);
	expect_part(&r, 10, 4999, 5000);
	resp_free(&r);
	cr_assert_eq(origin_count(&R, "range=bytes=10-", NULL), 1);
	/* a 206 is not kept: a range the origin ignores brings the whole
	 * 200, which is */
	get_range(u, "bytes=-100", &r);
	cr_assert_eq(r.status, 200); /* our origin knows "a-b" and "a-" */
	resp_free(&r);
	cr_assert_eq(origin_count(&R, "range=", NULL), 2);
	/* and a stored copy answers ranges whatever the limit */
	get_range(u, "bytes=-100", &r);
	expect_part(&r, 4900, 4999, 5000);
	resp_free(&r);
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 2);
	cr_assert_eq(proxy_metric(&R,
	    "sumcache_range_requests_total{answer=\"passed\"}"), 2);
}

struct ranger {
	const char *u;
	uint64_t from;
	struct resp r;
};

static void *
ranger(void *arg)
{
	struct ranger *g = arg;
	char h[64];

	snprintf(h, sizeof(h), "bytes=%llu-%llu", (unsigned long long)g->from,
	    (unsigned long long)g->from + 999);
	get_range(g->u, h, &g->r);
	return NULL;
}

Test(range, range_requests_at_once_share_one_fetch)
{
	struct ranger g[20];
	pthread_t th[20];

	env_start(&R, NULL);
	const char *u = obj_url("max_age=300&size=200000&delay=500");

	for (int i = 0; i < 20; i++) {
		g[i] = (struct ranger){.u = u, .from = (uint64_t)i * 9973};
		cr_assert_eq(pthread_create(&th[i], NULL, ranger, &g[i]), 0);
	}
	for (int i = 0; i < 20; i++) {
		pthread_join(th[i], NULL);
		expect_part(&g[i].r, g[i].from, g[i].from + 999, 200000);
		resp_free(&g[i].r);
	}
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 1);
}

/* Bodies beyond max_memory_object_size go to the disk as they come: the
 * range is cut from the stream, and later ones come from the disk's
 * copy by its sender. */
Test(range, large_objects_on_disk_answer_ranges)
{
	char dir[320];
	const char *opts[] = {"max_memory_object_size=1MB", dir, NULL};
	struct resp r;
	uint64_t from[4], to[4];

	origin_start(&R);
	const char *u = obj_url("max_age=300&size=3000000");
	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 256MB", R.dir);
	proxy_start(&R, opts);
	get_range(u, "bytes=2000000-2099999", &r);
	expect_part(&r, 2000000, 2099999, 3000000);
	resp_free(&r);
	cr_assert_geq(proxy_wait_metric(&R, "sumcache_disk_objects", 1, 10000),
	    1);
	get_range(u, "bytes=1500000-2999999", &r);
	expect_part(&r, 1500000, 2999999, 3000000);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	/* a few small ranges: one multipart answer */
	get_range(u, "bytes=0-99,2999900-", &r);
	cr_assert_eq(parts(&r, from, to, 4), 2);
	resp_free(&r);
	/* several large ones: the whole, sent by the disk's sender */
	get_range(u, "bytes=0-699999,1000000-1699999", &r);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.len, 3000000);
	cr_assert(bytes_at(r.body, r.len, 0));
	resp_free(&r);
	/* unsatisfiable, from the stream: 416, and the object is kept */
	const char *u2 = obj_url("max_age=300&size=2000000&other");
	get_range(u2, "bytes=2000000-", &r);
	cr_assert_eq(r.status, 416);
	resp_free(&r);
	cr_assert_geq(proxy_wait_metric(&R, "sumcache_disk_objects", 2, 10000),
	    2);
	cr_assert_eq(origin_count(&R, "/obj/" NAME, NULL), 2);
	/* the client has its range long before the rest arrives: the fetch
	 * goes on for the store, logged as a line with no client */
	const char *u3 = obj_url("max_age=300&size=2000000&pause=800&late");
	long t0 = harness_now_ms();
	get_range(u3, "bytes=0-99", &r);
	expect_part(&r, 0, 99, 2000000);
	cr_assert_lt(harness_now_ms() - t0, 700, "the range waited for the "
	    "whole object");
	resp_free(&r);
	cr_assert_geq(proxy_wait_metric(&R, "sumcache_disk_objects", 3, 10000),
	    3);
	cr_assert(harness_file_has(R.log, " - TCP_MISS/200 ", "late", 3000));
	fill_cache(u3, 2000000);
	cr_assert_eq(origin_count(&R, "late", NULL), 1);
	cr_assert_geq(proxy_metric(&R, "sumcache_hits_total{tier=\"disk\"}"),
	    1);
}
