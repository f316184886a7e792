/*
 * https:// origins (issue 34): fetched over TLS and verified, always.
 * Verification's failures come first: an origin whose certificate no
 * trusted CA signed, that has expired, names another host, or signed
 * itself is refused with an error page that says why, counted by why,
 * and nothing of it is cached; then tls_upstream_ca's CA makes the good
 * origin trusted, its objects are cached under their https:// URL, and
 * the http:// URL of the same path is another object. Then interception
 * (CONNECT put under our TLS): a client refusing our CA, a host never
 * intercepted, a bad origin behind it, objects cached through it, and a
 * connection closed after its reply.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "harness.h"
#include "tlsfiles.h"
#include "tlsrig.h"

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

/* ---- interception ---- */

/* A node intercepting the TLS origin's port, with more options (a
 * NULL-terminated list, or NULL): tlsrig_up. */
static void
up_intercepting_with(const char *origin_cert, const char *const *more)
{
	tlsrig_up(&e, origin_cert, more);
}

/* The same with one more option, or none. */
static void
up_intercepting(const char *origin_cert, const char *more)
{
	const char *opts[] = {more, NULL};

	up_intercepting_with(origin_cert, opts);
}

static struct got
browse_from(const char *url, const char *trust, const char *from)
{
	return tlsrig_browse(&e, url, trust, from);
}

static struct got
browse(const char *url, const char *trust)
{
	return browse_from(url, trust, NULL);
}

static void
path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", e.dir, name);
}

/* A client without our CA (at 127.0.0.2) refuses our certificate:
 * counted, and the host is tunnelled for that client from then on, so it
 * then reaches the origin itself and verifies the origin's own
 * certificate. Another client (at 127.0.0.1) that trusts our CA is still
 * intercepted, and cached for: one refusal once switched interception
 * off for every client of the host, and those trusting only our CA (apt's
 * CaInfo, npm's cafile) then failed. */
Test(https, client_refusing_our_ca_gets_the_host_spliced_for_itself)
{
	char url[200], testca[400], ours[400], out[460];

	up_intercepting("good", "tls_splice_after_reject=1h");
	path(testca, sizeof(testca), "testca.crt");
	path(ours, sizeof(ours), "ca/ca.crt");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/r?max_age=60",
	    e.tport);
	struct got g = browse_from(url, testca, "127.0.0.2");
	cr_assert_eq(g.rc, CURLE_PEER_FAILED_VERIFICATION, "%d", g.rc);
	cr_assert_eq(proxy_wait_metric(&e, "sumcache_tls_handshakes_total"
	    "{result=\"rejected\"}", 1, 3000), 1);
	g = browse_from(url, testca, "127.0.0.2");
	cr_assert_eq(g.rc, CURLE_OK, "spliced: the origin's certificate");
	cr_assert_eq(g.status, 200);
	cr_assert_eq(proxy_metric(&e, "sumcache_tls_connects_total"
	    "{way=\"spliced\"}"), 1);
	cr_assert_eq(proxy_metric(&e, "sumcache_tunnels_total"), 1);
	snprintf(out, sizeof(out), "%s/sumcache.out", e.dir);
	cr_assert(harness_file_has(out, "client 127.0.0.2 refused our "
	    "certificate for 127.0.0.1", NULL, 2000));
	for (int i = 0; i < 2; i++) {
		g = browse_from(url, ours, "127.0.0.1");
		cr_assert_eq(g.rc, CURLE_OK, "another client was spliced too "
		    "(%d)", g.rc);
		cr_assert(strstr(g.head, i == 0 ? "X-Cache: MISS" :
		    "X-Cache: HIT") != NULL, "%s", g.head);
	}
	cr_assert_eq(proxy_metric(&e, "sumcache_tls_connects_total"
	    "{way=\"spliced\"}"), 1);
}

Test(https, never_intercepted_host_is_tunnelled)
{
	char url[200], testca[400], ours[400];

	up_intercepting("good", "tls_no_intercept=127.0.0.1");
	path(testca, sizeof(testca), "testca.crt");
	path(ours, sizeof(ours), "ca/ca.crt");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/n?max_age=60",
	    e.tport);
	/* our CA cannot vouch for what the client sees: the origin's */
	struct got g = browse(url, ours);
	cr_assert_eq(g.rc, CURLE_PEER_FAILED_VERIFICATION, "%d", g.rc);
	g = browse(url, testca);
	cr_assert_eq(g.rc, CURLE_OK, "%d", g.rc);
	cr_assert_eq(proxy_metric(&e, "sumcache_tls_connects_total"
	    "{way=\"intercepted\"}"), 0);
}

/* Under interception an origin whose certificate is refused is an
 * error page over the intercepted connection, nothing cached. */
Test(https, intercepted_bad_origin_gets_an_error_page)
{
	char url[200], ours[400];

	up_intercepting("expired", NULL);
	path(ours, sizeof(ours), "ca/ca.crt");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/x?max_age=60",
	    e.tport);
	struct got g = browse(url, ours);
	cr_assert_eq(g.rc, CURLE_OK, "%d", g.rc);
	cr_assert_eq(g.status, 502);
	cr_assert_eq(proxy_metric(&e, "sumcache_upstream_tls_refused_total"
	    "{reason=\"expired\"}"), 1);
	g = browse(url, ours);
	cr_assert_eq(g.status, 502, "nothing was cached");
	cr_assert_eq(origin_count(&e, "/obj/x", NULL), 0);
}

/* The main case: through a node intercepting, an https object is
 * fetched once, then a hit, over HTTP/1.1 with a leaf our CA signed;
 * large bodies too (kept in a memfd); the access log has the https URL. */
Test(https, intercepted_objects_are_cached)
{
	char url[200], ours[400], big[200];

	up_intercepting("good", NULL);
	path(ours, sizeof(ours), "ca/ca.crt");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/i?max_age=60",
	    e.tport);
	struct got a = browse(url, ours), b = browse(url, ours);
	cr_assert_eq(a.rc, CURLE_OK, "%d", a.rc);
	cr_assert_eq(a.status, 200);
	cr_assert_eq(a.version, CURL_HTTP_VERSION_1_1, "ALPN: http/1.1 only");
	cr_assert(strstr(a.head, "X-Cache: MISS from test-node") != NULL,
	    "%s", a.head);
	cr_assert(strstr(b.head, "X-Cache: HIT from test-node") != NULL,
	    "%s", b.head);
	cr_assert_eq(a.len, b.len);
	cr_assert_eq(origin_count(&e, "/obj/i", NULL), 1);

	snprintf(big, sizeof(big), "https://127.0.0.1:%d/obj/big?max_age=60&"
	    "size=3000000", e.tport);
	a = browse(big, ours);
	b = browse(big, ours);
	cr_assert_eq(b.rc, CURLE_OK, "%d", b.rc);
	cr_assert_eq(a.len, 3000000);
	cr_assert_eq(b.len, 3000000);
	cr_assert(strstr(b.head, "X-Cache: HIT from test-node") != NULL,
	    "%s", b.head);

	cr_assert_geq(proxy_metric(&e, "sumcache_tls_handshakes_total"
	    "{result=\"ok\"}"), 4);
	cr_assert_eq(proxy_metric(&e, "sumcache_tls_leaves_total"
	    "{outcome=\"minted\"}"), 1, "one leaf for the host");
	cr_assert_geq(proxy_metric(&e, "sumcache_tls_leaves_total"
	    "{outcome=\"reused\"}"), 3);
	/* the hit's line: its https URL, and every byte of it counted */
	char line[1024], want[300];
	bool found = false;
	snprintf(want, sizeof(want), " GET %s ", big);
	usleep(400 * 1000);      /* the access log's flush */
	FILE *f = fopen(e.log, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long bytes;
		char *hit = strstr(line, "TCP_MEM_HIT/200 ");
		if (hit != NULL && strstr(line, want) != NULL &&
		    sscanf(hit + 16, "%llu", &bytes) == 1)
			found = bytes > 3000000 && bytes < 3001000;
	}
	fclose(f);
	cr_assert(found, "no hit of %s with its bytes in %s", big, e.log);
}

static struct closed_read
get_and_close_midway(const char *path, const char *trust,
    bool (*midway)(void *), void *arg)
{
	return tlsrig_get(&e, path, trust, midway, arg);
}

static struct closed_read
get_and_close(const char *path, const char *trust)
{
	return tlsrig_get(&e, path, trust, NULL, NULL);
}

/* A reply the client asked to close after comes whole, miss or hit,
 * small or large, and the session ends with our close_notify: the
 * layer's records are written to the socket before it closes (they were
 * once thrown away with it, and such a client got nothing). */
Test(https, closed_connection_gets_its_whole_reply_and_close_notify)
{
	char ours[400];
	const char *paths[] = {"/obj/c?max_age=60",
	    "/obj/cbig?max_age=60&size=3000000"};

	up_intercepting("good", NULL);
	path(ours, sizeof(ours), "ca/ca.crt");
	for (int i = 0; i < 2; i++)
		for (int round = 0; round < 2; round++) {
			struct closed_read r = get_and_close(paths[i], ours);
			cr_assert(r.whole, "%s, %s: %lld bytes of body",
			    paths[i], round == 0 ? "miss" : "hit", r.body);
			cr_assert(r.close_notify, "%s: no close_notify",
			    paths[i]);
		}
	cr_assert_eq(origin_count(&e, "/obj/cbig", NULL), 1);
}

struct cut_at {
	char path[600];
	off_t at;
};

static bool
cut_file(void *arg)
{
	const struct cut_at *c = arg;

	cr_assert_eq(truncate(c->path, c->at), 0);
	return true;
}

/*
 * A body of 16 MB read back from disk, to an intercepted client (whose
 * TLS layer reads every byte it encrypts; libevent mapped the segment
 * file for it, and a file cut under the map would kill the node with
 * SIGBUS): the segment is cut 1 MB into the body while the client reads
 * slowly. The node lives, the answer ends short, the record is dropped,
 * and the next answer is whole from the origin.
 */
Test(https, an_intercepted_disk_hit_cut_under_its_send_ends_short)
{
	char ours[400], dir[400];
	const char *more[] = {dir, "max_memory_object_size=1MB",
	    "cache_mem=4MB", NULL};
	const char *obj = "/obj/tlsdisk?max_age=600&size=16777216";
	struct cut_at cut;

	origin_dir(&e);
	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 64MB", e.dir);
	up_intercepting_with("good", more);
	path(ours, sizeof(ours), "ca/ca.crt");
	cr_assert(get_and_close(obj, ours).whole);
	cr_assert_geq(proxy_wait_metric(&e, "sumcache_disk_objects", 1, 5000),
	    1);
	proxy_restart(&e, tlsrig_opts(), SIGTERM);
	cr_assert_geq(proxy_wait_metric(&e, "sumcache_disk_objects", 1,
	    10000), 1);
	char cache[420];
	snprintf(cache, sizeof(cache), "%s/cache", e.dir);
	cr_assert(harness_find_in_segments(cache, "tlsdisk", cut.path,
	    sizeof(cut.path), &cut.at));
	cut.at += 1 << 20;
	struct closed_read r = get_and_close_midway(obj, ours, cut_file,
	    &cut);
	fprintf(stderr, "figure: an intercepted disk hit of 16 MB cut at "
	    "1 MB: %lld bytes of body came\n", r.body);
	cr_assert(!r.whole, "the whole length came");
	cr_assert_eq(proxy_wait_metric(&e, "sumcache_disk_dropped_total{"
	    "reason=\"short\"}", 1, 5000), 1, "the record was not dropped");
	r = get_and_close(obj, ours);
	cr_assert(r.whole, "the next answer is whole");
	cr_assert_eq(origin_count(&e, "/obj/tlsdisk", NULL), 2);
}

static bool
note_rss(void *arg)
{
	*(long *)arg = proc_rss_kb(e.proxy);
	return false;
}

/*
 * A hit of 64 MB to an intercepted client that reads 64 KB and stops:
 * the TLS layer encrypts what its socket has room for, not the whole body
 * at once (it did, and the node held the body's ciphertext: 64 MB for
 * one slow client).
 */
Test(https, a_slow_intercepted_client_holds_no_more_than_its_buffers)
{
	char ours[400];
	const char *more[] = {"max_memory_object_size=128MB", NULL};
	const char *big = "/big?size=67108864&max_age=600";
	long before, during = 0;

	up_intercepting_with("good", more);
	path(ours, sizeof(ours), "ca/ca.crt");
	cr_assert(get_and_close(big, ours).whole);
	before = proc_rss_kb(e.proxy);
	struct closed_read r = get_and_close_midway(big, ours, note_rss,
	    &during);
	fprintf(stderr, "figure: a 64 MB hit to a slow intercepted client: "
	    "RSS %ld -> %ld kB\n", before, during);
	cr_assert(!r.whole && r.body >= 65536);
	cr_assert_lt(during - before, 16 * 1024, "the node took %ld kB for "
	    "one slow client", during - before);
}
