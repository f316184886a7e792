/*
 * https:// origins (issue 34): fetched over TLS and verified, always.
 * Verification's failures come first: an origin whose certificate no
 * trusted CA signed, that has expired, names another host, or signed
 * itself is refused with an error page that says why, counted by why,
 * and nothing of it is cached; then tls_upstream_ca's CA makes the good
 * origin trusted, its objects are cached under their https:// URL, and
 * the http:// URL of the same path is another object.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tlsfiles.h"

static struct env e;

static void
down(void)
{
	env_stop(&e);
}

TestSuite(https, .fini = down);

/* A TLS origin with the certificate called name (tlsfiles.h), and a proxy
 * that trusts the test CA (tls_upstream_ca) if trust. */
static void
up(const char *name, bool trust)
{
	static char opt[460];
	char crt[400], key[400];
	const char *opts[] = {opt, NULL};

	origin_dir(&e);
	tlsfiles_write(e.dir);
	snprintf(crt, sizeof(crt), "%s/%s.crt", e.dir, name);
	snprintf(key, sizeof(key), "%s/%s.key", e.dir, name);
	snprintf(opt, sizeof(opt), "tls_upstream_ca=%s/testca.crt", e.dir);
	origin_start_tls(&e, crt, key);
	proxy_start(&e, trust ? opts : NULL);
}

/* GET url (absolute form) through the proxy: the response, whole. */
static char *
get(const char *url)
{
	char req[600];
	bool closed;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", url);
	return raw_exchange(e.pport, req, strlen(req), 5000, &closed);
}

/* url is answered 502 with a page saying why, and series counts want. */
static void
assert_refused(const char *url, const char *why, const char *series,
    double want)
{
	char *r = get(url);

	cr_assert(strncmp(r, "HTTP/1.1 502", 12) == 0, "%s", r);
	cr_assert(strstr(r, why) != NULL, "the page does not say '%s': %s",
	    why, r);
	free(r);
	cr_assert_eq(proxy_metric(&e, series), want, "%s", series);
}

Test(https, origin_signed_by_an_unknown_ca_is_refused)
{
	char url[200];

	up("good", false);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/u?max_age=60",
	    e.tport);
	assert_refused(url, "no CA this node trusts signed it",
	    "sumcache_upstream_tls_refused_total{reason=\"unknown_ca\"}", 1);
	/* refused again: nothing was kept of it */
	assert_refused(url, "no CA this node trusts signed it",
	    "sumcache_upstream_tls_refused_total{reason=\"unknown_ca\"}", 2);
	cr_assert_eq(origin_count(&e, "/obj/u", NULL), 0);
}

Test(https, bad_origin_certificates_are_refused_by_why)
{
	static const struct {
		const char *name, *why, *reason;
	} bad[] = {
		{"expired", "it has expired", "expired"},
		{"wronghost", "it names another host", "wrong_host"},
		{"selfsigned", "it is self-signed", "self_signed"},
	};
	char url[200], series[200];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		up(bad[i].name, true);
		snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/b?"
		    "max_age=60", e.tport);
		snprintf(series, sizeof(series), "sumcache_upstream_tls_"
		    "refused_total{reason=\"%s\"}", bad[i].reason);
		assert_refused(url, bad[i].why, series, 1);
		cr_assert_eq(origin_count(&e, "/obj/b", NULL), 0,
		    "%s: the origin was sent the request", bad[i].name);
		env_stop(&e);
	}
	memset(&e, 0, sizeof(e));
}

Test(https, trusted_origin_is_fetched_and_cached_by_scheme)
{
	char url[200];

	up("good", true);

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/s?max_age=60",
	    e.tport);
	char *a = get(url), *b = get(url);
	cr_assert(strncmp(a, "HTTP/1.1 200", 12) == 0, "%s", a);
	cr_assert(strstr(a, "X-Cache: MISS from test-node") != NULL, "%s", a);
	cr_assert(strstr(b, "X-Cache: HIT from test-node") != NULL, "%s", b);
	cr_assert_eq(origin_count(&e, "/obj/s", NULL), 1);
	free(a);
	free(b);
	/* the same path over http is another object, fetched of its own */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/s?max_age=60",
	    e.oport);
	a = get(url);
	cr_assert(strstr(a, "X-Cache: MISS from test-node") != NULL, "%s", a);
	cr_assert_eq(origin_count(&e, "/obj/s", NULL), 2);
	free(a);
	cr_assert_eq(proxy_metric(&e, "sumcache_upstream_tls_refused_total"
	    "{reason=\"unknown_ca\"}"), 0);
}
