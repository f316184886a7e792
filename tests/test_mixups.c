/*
 * Bytes a cache must never mix up, end to end: an origin that sends more
 * than its answer said, bodies that arrive slowly but steadily under a
 * short timeout, crowds on answers of unknown length or bound for the
 * disk. Each test was run against the code before its fix and failed
 * there.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(mixups, .init = env_up, .fini = env_down, .timeout = 120);

/* The body the test origin's /obj/NAME sends: NAME over and over. */
static bool
body_is(const struct resp *r, const char *name, size_t size)
{
	size_t nl = strlen(name);

	if (r->len != size)
		return false;
	for (size_t i = 0; i < size; i++)
		if (r->body[i] != name[i % nl])
			return false;
	return true;
}

/*
 * The origin answers /extra with Content-Length 1000 and then more: a
 * whole second response, or bytes that are none, with the body or a
 * moment later. The next request to that origin must get its own answer
 * (not the extra bytes, and not a 502), on a new connection, and the
 * cache must hold its own body under its URL.
 */
static void
next_answer_is_its_own(int after_ms, bool junk, const char *victim)
{
	char path[128], vpath[128];
	struct resp a, b, c;

	snprintf(path, sizeof(path), "/extra?size=1000&after=%d&junk=%d",
	    after_ms, junk);
	proxy_get(&E, env_url(&E, path), NULL, &a);
	cr_assert_eq(a.status, 200);
	cr_assert(body_is(&a, "extra", 1000), "the first answer is its own");
	usleep((useconds_t)(after_ms + 300) * 1000);
	snprintf(vpath, sizeof(vpath), "/obj/%s?max_age=60&size=200", victim);
	proxy_get(&E, env_url(&E, vpath), NULL, &b);
	cr_assert_eq(b.status, 200, "the next request got %ld", b.status);
	cr_assert(body_is(&b, victim, 200), "the next request got %zu bytes "
	    "not its own: %.*s", b.len, (int)(b.len < 40 ? b.len : 40),
	    b.body);
	cr_assert_eq(origin_count(&E, vpath, NULL), 1,
	    "the origin saw the next request");
	proxy_get(&E, env_url(&E, vpath), NULL, &c);
	cr_assert_str_eq(resp_header(&c, "X-Cache"), "HIT from test-node");
	cr_assert(body_is(&c, victim, 200), "the cache holds the URL's own "
	    "body");
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
}

Test(mixups, a_second_response_behind_an_answer_is_never_read_as_the_next)
{
	next_answer_is_its_own(0, false, "at-once");
	next_answer_is_its_own(600, false, "later");
	/* the later one reached the kept connection: counted and logged */
	cr_assert_geq(proxy_metric(&E, "sumcache_upstream_excess_total"), 1);
	char out[300];
	snprintf(out, sizeof(out), "%s/sumcache.out", E.dir);
	cr_assert(harness_file_has(out, "bytes past the end of an answer",
	    "127.0.0.1", 2000), "the closed connection is logged");
}

Test(mixups, an_overlong_body_does_not_turn_the_next_answer_into_an_error)
{
	next_answer_is_its_own(0, true, "junk-at-once");
	next_answer_is_its_own(600, true, "junk-later");
	cr_assert_geq(proxy_metric(&E, "sumcache_upstream_excess_total"), 1);
}
