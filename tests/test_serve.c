/*
 * The serve/ room driven without a socket (tests/serverig.c): deliver's
 * answers from the store (hit, 304, 206 one and several ranges, 416),
 * collapsed forwarding (busy.c: a waiter served from the shared fetch, a
 * failure handed to its waiters) and the stale answer of a failed fetch
 * (stale.c). The real server and request room answer; the test plays the
 * store's contents and the fetch. And the table of URLs passed straight to
 * the origin (pass.c).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "busy.h"
#include "pass.h"
#include "serverig.h"
#include "store.h"

#define URL "http://example.test/a"
#define GET "GET " URL " HTTP/1.1\r\nHost: example.test\r\n"
#define HEAD_FIELDS "Content-Type: text/plain\r\nETag: \"v1\"\r\n"

static struct srig r;

static void
stop(void)
{
	srig_stop(&r);
}

static void
start(void)
{
	srig_start(&r, NULL);
}

/* Stores url's object: fresh for a minute, or stale by a minute with
 * the Cache-Control given. */
static void
put(const char *head, const char *body, bool fresh)
{
	struct store_obj *o = srig_object(URL, head, body, fresh ? 0 : 120,
	    60);

	cr_assert(store_insert(r.s.store, o));
	store_obj_unref(&o);
}

TestSuite(deliver, .init = start, .fini = stop, .timeout = 20);

Test(deliver, a_stored_object_is_a_memory_hit)
{
	struct srig_answer a;
	char v[64];

	put(HEAD_FIELDS, "hello", true);
	srig_send(&r, GET "\r\n");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(a.body, "hello");
	cr_assert(srig_field(&a, "x-cache", v, sizeof(v)));
	cr_assert(strncmp(v, "HIT", 3) == 0, "X-Cache: %s", v);
	cr_assert(srig_field(&a, "etag", v, sizeof(v)));
	cr_assert_str_eq(v, "\"v1\"");
	cr_assert_eq(r.s.home->m.hit_memory, 1);
	cr_assert_eq(r.s.home->m.req_local_hit, 1);
}

Test(deliver, a_matching_validator_is_a_304_without_body)
{
	struct srig_answer a;

	put(HEAD_FIELDS, "hello", true);
	srig_send(&r, GET "If-None-Match: \"v1\"\r\n\r\n");
	cr_assert(srig_answer(&r, &a, true));
	cr_assert_eq(a.status, 304);
	/* the next answer on the connection follows at once: nothing of a
	 * body was sent */
	srig_send(&r, GET "If-None-Match: \"v0\"\r\n\r\n");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(a.body, "hello");
}

Test(deliver, one_range_is_a_206_of_those_bytes)
{
	struct srig_answer a;
	char v[64];

	put(HEAD_FIELDS, "hello world", true);
	srig_send(&r, GET "Range: bytes=1-3\r\n\r\n");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 206);
	cr_assert_str_eq(a.body, "ell");
	cr_assert(srig_field(&a, "content-range", v, sizeof(v)));
	cr_assert_str_eq(v, "bytes 1-3/11");
	cr_assert_eq(r.s.home->m.range_partial, 1);
}

Test(deliver, several_ranges_are_one_multipart_answer)
{
	struct srig_answer a;
	char v[128];

	put(HEAD_FIELDS, "hello world", true);
	srig_send(&r, GET "Range: bytes=0-0,-5\r\n\r\n");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 206);
	cr_assert(srig_field(&a, "content-type", v, sizeof(v)));
	cr_assert(strncmp(v, "multipart/byteranges; boundary=", 31) == 0,
	    "%s", v);
	/* each part with its own type and range, the body's bytes after */
	cr_assert(strstr(a.body, "Content-Type: text/plain\r\n"
	    "Content-Range: bytes 0-0/11\r\n\r\nh\r\n") != NULL, "%s", a.body);
	cr_assert(strstr(a.body, "Content-Range: bytes 6-10/11\r\n\r\n"
	    "world\r\n") != NULL, "%s", a.body);
	cr_assert(strstr(a.body, v + 31) != NULL);
}

Test(deliver, a_range_past_the_end_is_a_416_with_the_length)
{
	struct srig_answer a;
	char v[64];

	put(HEAD_FIELDS, "hello", true);
	srig_send(&r, GET "Range: bytes=10-20\r\n\r\n");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 416);
	cr_assert(srig_field(&a, "content-range", v, sizeof(v)));
	cr_assert_str_eq(v, "bytes */5");
	/* none of the object's fields: it is not the object */
	cr_assert(!srig_field(&a, "etag", v, sizeof(v)));
	cr_assert_eq(r.s.home->m.range_unsatisfiable, 1);
}

TestSuite(busy, .init = start, .fini = stop, .timeout = 20);

/* The shared fetch's shape, its body arriving in two pieces (the first
 * third, then two), and the stored object it ends with. */
static void
answer_waiters(struct busy **b, const char *body)
{
	struct store_obj *shape = srig_object(URL, HEAD_FIELDS, "", 0, 60);
	struct store_obj *whole = srig_object(URL, HEAD_FIELDS, body, 0, 60);
	size_t len = strlen(body);
	struct store_body *sofar = store_body_new(len);
	struct busy_source src = {.copy = sofar, .length = (int64_t)len};

	busy_share(*b, shape, &src, NULL);
	cr_assert(store_body_append(&src.copy, body, len / 3) == 0);
	src.have = len / 3;
	busy_body(*b);
	cr_assert(store_body_append(&src.copy, body + len / 3,
	    2 * len / 3 - len / 3) == 0);
	src.have = 2 * len / 3;
	busy_body(*b);
	busy_close(b, BUSY_DONE, whole);
	store_body_unref(&src.copy);
	store_obj_unref(&shape);
	store_obj_unref(&whole);
}

Test(busy, a_waiter_is_answered_from_the_fetch_it_waits_for)
{
	struct srig_answer a;
	struct busy *b = srig_busy(&r, URL);

	srig_send(&r, GET "\r\n");
	srig_run(&r, 20);
	/* it waits: nothing is answered, no fetch of its own started */
	cr_assert_eq(evbuffer_get_length(bufferevent_get_input(r.user)), 0);
	cr_assert_eq(r.s.home->m.collapsed_served, 0);
	answer_waiters(&b, "shared body");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(a.body, "shared body");
	cr_assert_eq(r.s.home->m.collapsed_served, 1);
	cr_assert_eq(r.s.home->m.req_local_hit, 1);
}

Test(busy, a_waiter_of_a_failed_fetch_is_told_the_failure)
{
	struct srig_answer a;
	struct busy *b = srig_busy(&r, URL);

	srig_send(&r, GET "\r\n");
	srig_run(&r, 20);
	busy_fail(&b, 502, false, "origin said 503");
	cr_assert_null(b);
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 502);
	cr_assert(strstr(a.body, "origin said 503") != NULL, "%s", a.body);
	cr_assert_eq(r.s.home->m.collapsed_failed, 1);
}

Test(busy, a_waiter_with_a_range_reads_its_bytes_of_the_shared_body)
{
	struct srig_answer a;
	struct busy *b = srig_busy(&r, URL);

	srig_send(&r, GET "Range: bytes=7-\r\n\r\n");
	srig_run(&r, 20);
	answer_waiters(&b, "shared body");
	cr_assert(srig_answer(&r, &a, false));
	cr_assert_eq(a.status, 206);
	cr_assert_str_eq(a.body, "body");
}

TestSuite(stale, .init = start, .fini = stop, .timeout = 20);

/* A stale copy stored with cc, a request waiting for the fetch of its
 * URL, and that fetch failing with status (disconnected: no answer at
 * all): what the waiter gets, in *a. */
static void
stale_after_failure(const char *cc, int status, bool disconnected,
    struct srig_answer *a)
{
	char head[256];

	snprintf(head, sizeof(head), HEAD_FIELDS "Cache-Control: %s\r\n", cc);
	put(head, "old", false);
	struct busy *b = srig_busy(&r, URL);
	srig_send(&r, GET "\r\n");
	srig_run(&r, 20);
	busy_fail(&b, status, disconnected, "the origin failed");
	cr_assert(srig_answer(&r, a, false));
}

Test(stale, stale_if_error_answers_a_waiter_of_a_failed_fetch)
{
	struct srig_answer a;

	stale_after_failure("max-age=60, stale-if-error=600", 502, false, &a);
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(a.body, "old");
	cr_assert_eq(r.s.home->m.stale_if_error, 1);
}

Test(stale, without_stale_if_error_the_failure_is_the_answer)
{
	struct srig_answer a;

	stale_after_failure("max-age=60", 502, false, &a);
	cr_assert_eq(a.status, 502);
	cr_assert(strstr(a.body, "the origin failed") != NULL);
	cr_assert_eq(r.s.home->m.stale_if_error, 0);
}

Test(stale, a_lost_origin_may_be_answered_stale_without_the_directive)
{
	struct srig_answer a;

	/* RFC 9111 4.2.4: disconnected, a stale copy may be served */
	stale_after_failure("max-age=60", 504, true, &a);
	cr_assert_eq(a.status, 200);
	cr_assert_str_eq(a.body, "old");
}

/* A mark lasts PASS_TTL_MS, goes at an answer that may be stored, and a
 * URL whose slot another takes is forgotten, never confused with it. */
Test(pass, marks_last_their_time_and_go_when_cleared)
{
	struct pass *p = pass_new();
	const char *a = "http://example.test/a", *b = "http://example.test/b";

	cr_assert_not_null(p);
	cr_assert(!pass_marked(p, a, strlen(a), 1000));
	pass_note(p, a, strlen(a), 1000);
	cr_assert(pass_marked(p, a, strlen(a), 1000));
	cr_assert(pass_marked(p, a, strlen(a), 1000 + PASS_TTL_MS - 1));
	cr_assert(!pass_marked(p, a, strlen(a), 1000 + PASS_TTL_MS));
	cr_assert(!pass_marked(p, b, strlen(b), 1000), "b was never marked");
	pass_note(p, a, strlen(a), 5000);
	pass_clear(p, b, strlen(b));
	cr_assert(pass_marked(p, a, strlen(a), 5000), "b's clear took a's");
	pass_clear(p, a, strlen(a));
	cr_assert(!pass_marked(p, a, strlen(a), 5000));

	/* more URLs than slots: each marked one is either known or
	 * forgotten, and an unmarked one is never taken for marked */
	char url[64];
	unsigned known = 0;
	for (unsigned i = 0; i < 2 * PASS_SLOTS; i++) {
		int n = snprintf(url, sizeof(url), "http://x.test/%u", i);
		pass_note(p, url, (size_t)n, 10000);
	}
	for (unsigned i = 0; i < 2 * PASS_SLOTS; i++) {
		int n = snprintf(url, sizeof(url), "http://x.test/%u", i);
		known += pass_marked(p, url, (size_t)n, 10000);
	}
	cr_assert(known > PASS_SLOTS / 2 && known <= PASS_SLOTS, "%u", known);
	for (unsigned i = 0; i < 1000; i++) {
		int n = snprintf(url, sizeof(url), "http://y.test/%u", i);
		cr_assert(!pass_marked(p, url, (size_t)n, 10000));
	}
	pass_free(&p);
	cr_assert_null(p);
}
