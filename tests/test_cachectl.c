#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cachectl.h"
#include "refresh.h"
#include "sumtest.h"

static struct http_head
resp_status(int status, const char *fields)
{
	static char buf[4096];
	struct http_head h;
	const char *why;
	struct http_limits lim = {4096, 4096, 100};

	snprintf(buf, sizeof(buf), "HTTP/1.1 %d X\r\n%s\r\n", status, fields);
	cr_assert_eq(http_parse_response(buf, strlen(buf), &lim, &h, &why), 0,
	    "%s", why);
	return h;
}

static struct http_head
resp(const char *fields)
{
	return resp_status(200, fields);
}

Test(cachectl, dates_in_three_forms)
{
	const char *forms[] = {"Sun, 06 Nov 1994 08:49:37 GMT",
	    "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"};
	for (int i = 0; i < 3; i++)
		cr_assert_eq(http_date_parse(forms[i], strlen(forms[i])),
		    784111777, "%s", forms[i]);
	cr_assert_eq(http_date_parse("0", 1), -1);
	/* names in any case (RFC 9110 5.6.7: be robust) */
	const char *cased[] = {"sun, 06 nov 1994 08:49:37 gmt",
	    "SUNDAY, 06-NOV-94 08:49:37 Gmt", "Sun NOV  6 08:49:37 1994"};
	for (int i = 0; i < 3; i++)
		cr_assert_eq(http_date_parse(cased[i], strlen(cased[i])),
		    784111777, "%s", cased[i]);
	cr_assert_eq(http_date_parse("Sun, 06 Nox 1994 08:49:37 GMT", 29), -1);
	char buf[30];
	http_date_format(784111777, buf);
	cr_assert_str_eq(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
}

#define D (&cachectl_heuristic_default)

Test(cachectl, lifetime_precedence)
{
	time_t now = 784111777;
	struct cc cc;
	struct http_head h;

	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Cache-Control: max-age=60, s-maxage=30\r\n"
	    "Expires: Sun, 06 Nov 1994 09:49:37 GMT\r\n");
	cc_parse(&h, false, &cc);
	cr_assert_eq(cachectl_lifetime(&h, &cc, D, now), 30);
	http_head_clear(&h);
	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Expires: Sun, 06 Nov 1994 09:49:37 GMT\r\n");
	cc_parse(&h, false, &cc);
	cr_assert_eq(cachectl_lifetime(&h, &cc, D, now), 3600);
	http_head_clear(&h);
	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nExpires: 0\r\n");
	cc_parse(&h, false, &cc);
	cr_assert_eq(cachectl_lifetime(&h, &cc, D, now), 0);
	http_head_clear(&h);
	/* heuristic: 10 % of the Last-Modified age */
	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Last-Modified: Sun, 06 Nov 1994 06:49:37 GMT\r\n");
	cc_parse(&h, false, &cc);
	cr_assert_eq(cachectl_lifetime(&h, &cc, D, now), 720);
	http_head_clear(&h);
	h = resp("Cache-Control: max-age=60, no-cache\r\n");
	cc_parse(&h, false, &cc);
	cr_assert_eq(cachectl_lifetime(&h, &cc, D, now), 0);
	http_head_clear(&h);
}

/* refresh_pattern rules: what the origin said wins; they only fill in
 * what it left unsaid, and only for the heuristically cacheable codes */
Test(cachectl, refresh_rules)
{
	struct refresh_rules rules = {0};
	const char *why = "";
	time_t now = 784111777;
	struct cc cc, qc;

	cr_assert_eq(refresh_add(&rules, "-i \\.deb$ 1440 100% 129600",
	    &why), 0, "%s", why);
	cr_assert_eq(refresh_add(&rules, "^http://lm/ 1 50 30", &why), 0);
	cr_assert_eq(refresh_add(&rules, "^http://half/ 0 50% 1440", &why),
	    0);
	static const char *const bad[] = {"\\.deb$ 1 20%", "x 10 20% 5",
	    "x 1 20 5 override-expire", "x -1 20 5", "( 1 20 5",
	    "x 1 2x 5", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		cr_expect_eq(refresh_add(&rules, bad[i], &why), -1, "%s",
		    bad[i]);
		cr_expect(why != NULL && *why != '\0');
	}
	cr_assert_eq(rules.n, 3);
	const struct cachectl_heuristic *deb = refresh_find(&rules,
	    "http://mirror/pool/main/h/hello/HELLO_2.10_AMD64.DEB");
	const struct cachectl_heuristic *lm = refresh_find(&rules,
	    "http://lm/x");
	const struct cachectl_heuristic *half = refresh_find(&rules,
	    "http://half/x");
	cr_assert_eq(deb->min, 86400);
	cr_assert_eq(deb->max, 129600 * 60);
	cr_assert_eq(refresh_find(&rules, "http://mirror/x.deb.sig"), D);

	/* no validators, no freshness: stored only under a rule's MIN */
	struct http_head q = test_request(""), h = resp("Date: Sun, 06 Nov 1994 "
	    "08:49:37 GMT\r\n");
	cc_parse(&q, true, &qc);
	cc_parse(&h, false, &cc);
	cr_expect_not(cachectl_storable(&q, &qc, &h, &cc, D, &why));
	cr_expect(cachectl_storable(&q, &qc, &h, &cc, deb, &why), "%s", why);
	cr_expect_eq(cachectl_lifetime(&h, &cc, deb, now), 86400);
	cr_expect_eq(cachectl_lifetime(&h, &cc, D, now), 0);
	http_head_clear(&h);
	/* Last-Modified two hours back: 50 % is an hour, cut to MAX or
	 * raised to MIN */
	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Last-Modified: Sun, 06 Nov 1994 06:49:37 GMT\r\n");
	cc_parse(&h, false, &cc);
	cr_expect_eq(cachectl_lifetime(&h, &cc, half, now), 3600);
	cr_expect_eq(cachectl_lifetime(&h, &cc, lm, now), 1800);
	cr_expect_eq(cachectl_lifetime(&h, &cc, deb, now), 86400);
	cr_expect_eq(cachectl_lifetime(&h, &cc, D, now), 720);
	http_head_clear(&h);
	/* explicit freshness is the origin's word */
	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Cache-Control: max-age=5\r\n");
	cc_parse(&h, false, &cc);
	cr_expect_eq(cachectl_lifetime(&h, &cc, deb, now), 5);
	http_head_clear(&h);
	/* a status that needs explicit freshness gets none from a rule */
	h = resp_status(500, "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
	cc_parse(&h, false, &cc);
	cr_expect_not(cachectl_storable(&q, &qc, &h, &cc, deb, &why));
	cr_expect_eq(cachectl_lifetime(&h, &cc, deb, now), 0);
	http_head_clear(&h);
	http_head_clear(&q);
	refresh_clear(&rules);
}

Test(cachectl, age_calculation)
{
	struct http_head h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Age: 10\r\n");
	/* apparent age 5, corrected age 10 + 2 s of response delay */
	cr_assert_eq(cachectl_initial_age(&h, 784111780, 784111782), 12);
	http_head_clear(&h);
	h = resp("Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
	cr_assert_eq(cachectl_initial_age(&h, 784111877, 784111877), 100);
	http_head_clear(&h);
	/* RFC 9111 5.1: a list's first member counts; one that is not a
	 * non-negative integer is ignored, as if there were no Age (here
	 * the response's own delay, 3 s, is then its whole age) */
	struct { const char *age; int64_t want; } v[] = {
		{"1, 7200", 4}, {"7200, 0", 7203}, {"0,7200", 3},
		{"old, 0", 3}, {"-7200", 3}, {"7200.0", 3}, {"1e3", 3},
		{"abc", 3}, {"\"10\"", 3}, {"+10", 3}, {"", 3},
	};
	char f[64];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(f, sizeof(f), "Age: %s\r\n", v[i].age);
		h = resp(f);
		cr_expect_eq(cachectl_initial_age(&h, 784111777, 784111780),
		    v[i].want, "Age: %s", v[i].age);
		http_head_clear(&h);
	}
}

Test(cachectl, storable_rules)
{
	struct { int status; const char *req, *resp; bool ok; } v[] = {
		{200, "", "Cache-Control: max-age=60\r\n", true},
		{200, "", "Cache-Control: no-store, max-age=60\r\n", false},
		{200, "Cache-Control: no-store\r\n",
		    "Cache-Control: max-age=60\r\n", false},
		{200, "", "Cache-Control: private, max-age=60\r\n", false},
		{200, "", "Cache-Control: private=\"x\", max-age=60\r\n", true},
		{200, "Authorization: Basic eA==\r\n",
		    "Cache-Control: max-age=60\r\n", false},
		{200, "Authorization: Basic eA==\r\n",
		    "Cache-Control: s-maxage=60\r\n", true},
		{200, "Authorization: Basic eA==\r\n",
		    "Cache-Control: public, max-age=60\r\n", true},
		{200, "", "Cache-Control: max-age=60\r\nVary: *\r\n", false},
		{200, "", "Cache-Control: max-age=60\r\nSet-Cookie: a=b\r\n",
		    false},
		{200, "", "ETag: \"x\"\r\n", true},
		{200, "", "Server: x\r\n", false},
		/* any final status with explicit freshness (RFC 9111 3) */
		{303, "", "Cache-Control: max-age=60\r\n", true},
		{500, "", "Cache-Control: max-age=60\r\n", true},
		{599, "", "Expires: Sun, 06 Nov 2094 08:49:37 GMT\r\n", true},
		{503, "", "ETag: \"x\"\r\n", false},
		{206, "", "Cache-Control: max-age=60\r\n", false},
		{304, "", "Cache-Control: max-age=60\r\n", false},
		/* must-understand: its no-store is for caches without it */
		{200, "", "Cache-Control: max-age=60, no-store, "
		    "must-understand\r\n", true},
		{599, "", "Cache-Control: max-age=60, no-store, "
		    "must-understand\r\n", false},
		{599, "", "Cache-Control: max-age=60, must-understand\r\n",
		    false},
		{200, "Cache-Control: no-store\r\n", "Cache-Control: "
		    "max-age=60, no-store, must-understand\r\n", false},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct http_head q = test_request(v[i].req),
		    r = resp_status(v[i].status, v[i].resp);
		struct cc qc, rc;
		const char *why = "";
		cc_parse(&q, true, &qc);
		cc_parse(&r, false, &rc);
		cr_expect_eq(cachectl_storable(&q, &qc, &r, &rc, D, &why), v[i].ok,
		    "case %zu (%s)", i, why);
		http_head_clear(&q);
		http_head_clear(&r);
	}
}

Test(cachectl, request_directives)
{
	struct cachectl_entry fresh = {.lifetime = 100, .age = 50};
	struct cachectl_entry stale = {.lifetime = 100, .age = 130};
	struct cachectl_entry stale_mr = {.lifetime = 100, .age = 130,
	    .must_revalidate = true};
	struct { const char *req; const struct cachectl_entry *e; int want; }
	v[] = {
		{"", &fresh, CACHECTL_FRESH},
		{"", &stale, CACHECTL_REVALIDATE},
		{"Cache-Control: no-cache\r\n", &fresh, CACHECTL_REVALIDATE},
		{"Pragma: no-cache\r\n", &fresh, CACHECTL_REVALIDATE},
		{"Cache-Control: max-age=10\r\n", &fresh, CACHECTL_REVALIDATE},
		{"Cache-Control: min-fresh=60\r\n", &fresh,
		    CACHECTL_REVALIDATE},
		{"Cache-Control: min-fresh=40\r\n", &fresh, CACHECTL_FRESH},
		{"Cache-Control: max-stale=60\r\n", &stale, CACHECTL_STALE_OK},
		{"Cache-Control: max-stale=10\r\n", &stale,
		    CACHECTL_REVALIDATE},
		{"Cache-Control: max-stale\r\n", &stale, CACHECTL_STALE_OK},
		{"Cache-Control: max-stale\r\n", &stale_mr,
		    CACHECTL_REVALIDATE},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct http_head q = test_request(v[i].req);
		struct cc qc;
		cc_parse(&q, true, &qc);
		cr_expect_eq(cachectl_judge(v[i].e, &qc), v[i].want, "case %zu",
		    i);
		http_head_clear(&q);
	}
}

/* The stale rules of a response whose Cache-Control is cc, stale by
 * 30 s of a 100 s lifetime. */
static struct cachectl_entry
stale_by_30(const char *cc)
{
	struct cachectl_entry e = {.lifetime = 100, .age = 130};
	struct cc c;

	cc_init(&c);
	cc_parse_value(&c, cc, strlen(cc), false);
	cachectl_entry_stale_rules(&e, &c);
	return e;
}

Test(cachectl, stale_while_revalidate_and_stale_if_error)
{
	struct cc none, asks;
	struct http_head q = test_request("");
	struct http_head qs = test_request("Cache-Control: stale-if-error=40\r\n");
	cc_parse(&q, true, &none);
	cc_parse(&qs, true, &asks);

	struct cachectl_entry e = stale_by_30("max-age=100, "
	    "stale-while-revalidate=60");
	cr_assert_eq(cachectl_judge(&e, &none), CACHECTL_STALE_REVALIDATE);
	e = stale_by_30("max-age=100, stale-while-revalidate=20");
	cr_assert_eq(cachectl_judge(&e, &none), CACHECTL_REVALIDATE,
	    "past the window");
	static const char *const forbid[] = {"must-revalidate",
	    "proxy-revalidate", "s-maxage=100", "no-cache"};
	for (size_t i = 0; i < 4; i++) {
		char cc[128];
		snprintf(cc, sizeof(cc), "stale-while-revalidate=60, "
		    "stale-if-error=60, %s", forbid[i]);
		e = stale_by_30(cc);
		cr_expect_eq(cachectl_judge(&e, &none), CACHECTL_REVALIDATE,
		    "%s", cc);
		cr_expect(!cachectl_stale_on_error(&e, &asks, true), "%s", cc);
	}
	e = stale_by_30("max-age=100, stale-if-error=60");
	cr_assert(cachectl_stale_on_error(&e, &none, false));
	e = stale_by_30("max-age=100, stale-if-error=10");
	cr_assert(!cachectl_stale_on_error(&e, &none, false), "past it");
	cr_assert(cachectl_stale_on_error(&e, &asks, false),
	    "the request's longer window");
	e = stale_by_30("max-age=100");
	cr_assert(!cachectl_stale_on_error(&e, &none, false));
	cr_assert(cachectl_stale_on_error(&e, &none, true),
	    "disconnected: RFC 9111 4.2.4");
	http_head_clear(&q);
	http_head_clear(&qs);
}

/* The key of the Vary'd field f of a request with these field lines. */
static void
vary_key_of(const char *fields, const char *f, char *key, size_t cap)
{
	struct http_head q = test_request(fields);
	size_t len = 0;

	cr_assert(cachectl_varykey(&q, f, strlen(f), key, cap - 1, &len));
	key[len] = '\0';
	http_head_clear(&q);
}

/* RFC 9111 4.1: requests that differ only in what the field's definition
 * makes meaningless select the same variant; those that differ in meaning
 * do not */
Test(cachectl, vary_normalises_what_the_rfc_allows)
{
	static const struct { const char *a, *b; bool same; } v[] = {
		{"Accept-Language: en-GB, fr;q=0.5\r\n",
		    "Accept-Language: fr; q=0.50 ,EN-gb\r\n", true},
		{"Accept-Language: en, fr;q=0.5\r\n",
		    "Accept-Language: en;q=1.0\r\nAccept-Language: fr;Q=0.5\r\n",
		    true},
		/* equal weights: sorted, as cache-tests expects */
		{"Accept-Language: da, en\r\n", "Accept-Language: en, da\r\n",
		    true},
		{"Accept-Language: en, fr;q=0.5\r\n",
		    "Accept-Language: en, fr;q=0.4\r\n", false},
		/* codings of equal weight: the server picks, the order is
		 * nothing */
		{"Accept-Encoding: gzip, deflate, br\r\n",
		    "Accept-Encoding: br,GZIP,  deflate\r\n", true},
		{"Accept-Encoding: gzip, br;q=0\r\n",
		    "Accept-Encoding: gzip\r\n", false},
		{"Accept-Encoding: identity;q=0, gzip\r\n",
		    "Accept-Encoding: gzip, identity;q=0.000\r\n", true},
		/* other fields: spaces between elements, lines */
		{"X-Device: Phone\r\n", "X-Device: phone\r\n", false},
		{"X-Device: 1,2\r\n", "X-Device:  1, 2 \r\n", true},
		{"X-Device: 1, 2\r\n", "X-Device: 1\r\nX-Device: 2\r\n", true},
		{"X-Device: 1, 2\r\n", "X-Device: 2, 1\r\n", false},
		/* what cannot be read is compared as sent */
		{"Accept-Language: en;q=2\r\n", "Accept-Language: en;q=2\r\n",
		    true},
		{"Accept-Language: en;q=2\r\n", "Accept-Language: EN;q=2\r\n",
		    false},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char a[256], b[256];
		const char *f = "Accept-Language, Accept-Encoding, X-Device";
		vary_key_of(v[i].a, f, a, sizeof(a));
		vary_key_of(v[i].b, f, b, sizeof(b));
		cr_expect_eq(strcmp(a, b) == 0, v[i].same, "case %zu: %s / %s",
		    i, a, b);
	}
	char k[256];
	vary_key_of("Accept-Language: fr;q=0.50, en-GB\r\n",
	    "Accept-Language", k, sizeof(k));
	cr_expect_str_eq(k, "accept-language:en-gb,fr;q=0.5\n");
}

Test(cachectl, conditionals_and_vary_key)
{
	struct http_head q = test_request("If-None-Match: \"a\", W/\"b\"\r\n"
	    "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
	    "Accept-Language: en\r\nAccept-Language: fr\r\n");
	cr_assert(cachectl_not_modified(&q, "\"b\"", 3, -1));
	cr_assert(!cachectl_not_modified(&q, "\"c\"", 3, 0),
	    "If-None-Match wins over If-Modified-Since");
	char key[64];
	size_t len = 0;
	cr_assert(cachectl_varykey(&q, "Accept-Language, X-None", 23, key,
	    sizeof(key), &len));
	key[len] = '\0';
	cr_assert_str_eq(key, "accept-language:en,fr\nx-none:\n");
	http_head_clear(&q);
	q = test_request("If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
	cr_assert(cachectl_not_modified(&q, NULL, 0, 784111777));
	cr_assert(!cachectl_not_modified(&q, NULL, 0, 784111778));
	http_head_clear(&q);
}
