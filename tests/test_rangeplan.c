/* range.c's plans: what a Range asks of a 200 of known length, and the
 * layout of the 206 body that answers it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "range.h"
#include "sumtest.h"

static enum range_verdict
plan(const char *range, uint64_t length, struct range_plan **p)
{
	char f[1024];
	snprintf(f, sizeof(f), "Range: %s\r\n", range);
	struct http_head h = test_request(f);
	enum range_verdict v = range_plan(&h, length, "\"v1\"", 4, 1000,
	    "text/plain", 10, p);
	http_head_clear(&h);
	return v;
}

Test(rangeplan, specs_are_read_as_rfc_9110_says)
{
	struct range_plan *p;
	struct { const char *r; uint64_t from, len; } one[] = {
		{"bytes=0-0", 0, 1}, {"bytes=10-19", 10, 10},
		{"bytes=-10", 90, 10}, {"bytes=95-", 95, 5},
		{"bytes=90-1000", 90, 10}, {"BYTES=1-1", 1, 1},
		{"bytes=99999999999999999999999-,0-1", 0, 2},
		{"bytes= 5-6 ,", 5, 2},
	};
	for (size_t i = 0; i < sizeof(one) / sizeof(*one); i++) {
		cr_assert_eq(plan(one[i].r, 100, &p), RANGE_PARTIAL, "%s",
		    one[i].r);
		cr_assert_eq(p->n, 1, "%s", one[i].r);
		cr_assert_eq(p->span[0].from, one[i].from, "%s", one[i].r);
		cr_assert_eq(p->span[0].len, one[i].len, "%s", one[i].r);
		cr_assert_eq(p->total, one[i].len);
		range_plan_free(&p);
		cr_assert_null(p);
	}
	const char *whole[] = {"bytes=0-99", "bytes=-100", "bytes=-500",
	    "bytes=0-", "bytes=5-1", "bytes=a-b", "bytes=1", "bytes=",
	    "pages=1-2", "bytes=--1", "bytes=1-2,x"};
	for (size_t i = 0; i < sizeof(whole) / sizeof(*whole); i++) {
		cr_assert_eq(plan(whole[i], 100, &p), RANGE_WHOLE, "%s",
		    whole[i]);
		cr_assert_null(p);
	}
	const char *none[] = {"bytes=100-", "bytes=-0", "bytes=200-300,100-"};
	for (size_t i = 0; i < sizeof(none) / sizeof(*none); i++)
		cr_assert_eq(plan(none[i], 100, &p), RANGE_UNSATISFIABLE, "%s",
		    none[i]);
	/* nothing of an empty body can be had */
	cr_assert_eq(plan("bytes=-5", 0, &p), RANGE_UNSATISFIABLE);
}

Test(rangeplan, ranges_are_sorted_merged_and_bounded)
{
	struct range_plan *p;
	char many[1024] = "bytes=0-0";

	cr_assert_eq(plan("bytes=50-59,0-9,5-14,15-15,-1", 100, &p),
	    RANGE_PARTIAL);
	cr_assert_eq(p->n, 3);
	cr_assert(p->span[0].from == 0 && p->span[0].len == 16);
	cr_assert(p->span[1].from == 50 && p->span[1].len == 10);
	cr_assert(p->span[2].from == 99 && p->span[2].len == 1);
	range_plan_free(&p);
	/* 32 apart: one 206; 33: the whole */
	for (int i = 1; i < 32; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
		    ",%d-%d", 2 * i, 2 * i);
	cr_assert_eq(plan(many, 100, &p), RANGE_PARTIAL);
	cr_assert_eq(p->n, 32);
	range_plan_free(&p);
	snprintf(many + strlen(many), sizeof(many) - strlen(many), ",70-70");
	cr_assert_eq(plan(many, 100, &p), RANGE_WHOLE);
	/* ranges that add up to the whole: the 200 */
	cr_assert_eq(plan("bytes=0-49,50-99", 100, &p), RANGE_WHOLE);
}

Test(rangeplan, if_range_needs_the_same_validator)
{
	struct range_plan *p;
	struct { const char *f; enum range_verdict v; } c[] = {
		{"If-Range: \"v1\"\r\n", RANGE_PARTIAL},
		{"If-Range: \"v2\"\r\n", RANGE_WHOLE},
		{"If-Range: W/\"v1\"\r\n", RANGE_WHOLE},
		/* 1000 seconds after the epoch */
		{"If-Range: Thu, 01 Jan 1970 00:16:40 GMT\r\n", RANGE_PARTIAL},
		{"If-Range: Thu, 01 Jan 1970 00:16:41 GMT\r\n", RANGE_WHOLE},
		{"If-Range: junk\r\n", RANGE_WHOLE},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		char f[256];
		snprintf(f, sizeof(f), "Range: bytes=1-2\r\n%s", c[i].f);
		struct http_head h = test_request(f);
		cr_assert_eq(range_plan(&h, 100, "\"v1\"", 4, 1000, NULL, 0, &p),
		    c[i].v, "%s", c[i].f);
		range_plan_free(&p);
		http_head_clear(&h);
	}
}

/* The 206 body from range_copy, fed a body in pieces of every size, is
 * the one range_piece_at lays out, and its length the plan's total. */
Test(rangeplan, a_multipart_body_streams_as_it_is_laid_out)
{
	struct range_plan *p;
	char body[100], want[2048];

	for (int i = 0; i < 100; i++)
		body[i] = (char)('a' + i % 26);
	cr_assert_eq(plan("bytes=0-1,10-12,-3", 100, &p), RANGE_PARTIAL);
	int n = snprintf(want, sizeof(want),
	    "--%s\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/100"
	    "\r\n\r\nab\r\n--%s\r\nContent-Type: text/plain\r\n"
	    "Content-Range: bytes 10-12/100\r\n\r\nklm\r\n--%s\r\n"
	    "Content-Type: text/plain\r\nContent-Range: bytes 97-99/100\r\n"
	    "\r\ntuv\r\n--%s--\r\n", p->boundary, p->boundary, p->boundary,
	    p->boundary);
	cr_assert_eq(p->total, (uint64_t)n);
	for (size_t step = 1; step <= 100; step++) {
		struct evbuffer *out = evbuffer_new();
		uint64_t at = 0;
		for (size_t off = 0; off < 100; off += step) {
			size_t len = off + step > 100 ? 100 - off : step;
			range_copy(p, &at, body + off, off, len, UINT64_MAX, out);
		}
		cr_assert_eq(at, p->total, "step %zu", step);
		cr_assert_eq(evbuffer_get_length(out), (size_t)n);
		cr_assert(memcmp(evbuffer_pullup(out, -1), want, (size_t)n) == 0,
		    "step %zu", step);
		evbuffer_free(out);
	}
	/* max bounds what one call adds */
	struct evbuffer *out = evbuffer_new();
	uint64_t at = 0;
	cr_assert_eq(range_copy(p, &at, body, 0, 100, 7, out), 7);
	cr_assert_eq(at, 7);
	evbuffer_free(out);
	range_plan_free(&p);
}
