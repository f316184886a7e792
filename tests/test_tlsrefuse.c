/*
 * What an intercepting node refuses, and how the refused client is told:
 * an SNI naming another host than its CONNECT (refused, the origin sees
 * nothing), a TLS version the node does not speak, a handshake that
 * stalls, a host no leaf may name, an https URL in absolute form for a
 * host never looked into, a CONNECT inside an intercepted session. Each
 * refusal reaches the client as TLS's alert or an HTTP status, never a
 * bare close, and is logged with the client and the host, a line a
 * second of each kind. Last, a CA made for some hosts (--make-ca --for):
 * its key signs nothing a client takes for another site, and a node
 * will not intercept what it may not sign for.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include "ca.h"
#include "cert.h"
#include "harness.h"
#include "tlsrig.h"

static struct env e;

static void
down(void)
{
	env_stop(&e);
}

TestSuite(tlsrefuse, .fini = down, .timeout = 60);

static void
ours(char *out, size_t len)
{
	snprintf(out, len, "%s/ca/ca.crt", e.dir);
}

/* The requests the origin was sent, any path. */
static int
origin_requests(void)
{
	return origin_count(&e, "/", NULL);
}

static bool
logged(const char *a, const char *b)
{
	char out[320];

	snprintf(out, sizeof(out), "%s/sumcache.out", e.dir);
	return harness_file_has(out, a, b, 2000);
}

/*
 * A client whose SNI names another host than its CONNECT is refused: the
 * cache key and the upstream are the CONNECT's, and a client that asks
 * for one name while connecting to another is not guessed at. It is
 * told so by TLS's unrecognized_name alert; the origin sees nothing.
 * Then a client offering TLS 1.1 at most is told the version: each gets
 * its own log line, in the same second.
 */
Test(tlsrefuse, a_client_naming_another_host_or_an_old_version_is_told)
{
	char ca[400];
	unsigned long err;

	tlsrig_up(&e, "good", NULL);
	ours(ca, sizeof(ca));
	int fd = tlsrig_connect(&e, 0);
	cr_assert_null(tlsrig_handshake(fd, ca, "other.example", 0, &err),
	    "a session for another host than the CONNECT's");
	cr_assert_eq(ERR_GET_REASON(err), SSL_R_TLSV1_UNRECOGNIZED_NAME,
	    "the client was told: %s", ERR_reason_error_string(err));
	close(fd);
	fd = tlsrig_connect(&e, 0);
	cr_assert_null(tlsrig_handshake(fd, ca, "127.0.0.1", TLS1_1_VERSION,
	    &err));
	cr_assert_eq(ERR_GET_REASON(err), SSL_R_TLSV1_ALERT_PROTOCOL_VERSION,
	    "the client was told: %s", ERR_reason_error_string(err));
	close(fd);
	cr_assert_eq(origin_requests(), 0, "the origin was asked");
	cr_assert_eq(proxy_metric(&e, "sumcache_tls_handshakes_total{result="
	    "\"failed\"}"), 2);
	cr_assert(logged("client 127.0.0.1 for 127.0.0.1 failed: its SNI "
	    "named other.example", NULL));
	cr_assert(logged("client 127.0.0.1 for 127.0.0.1 failed: unsupported "
	    "protocol", NULL), "the second fault of the second was not "
	    "logged");
	/* the right name is taken: the refusal was the name's */
	fd = tlsrig_connect(&e, 0);
	SSL *ssl = tlsrig_handshake(fd, ca, "127.0.0.1", 0, &err);
	cr_assert_not_null(ssl, "%s", ERR_reason_error_string(err));
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
}

/* A handshake that never comes holds the connection for header_timeout,
 * as a request head that never comes does, not for idle_timeout. */
Test(tlsrefuse, a_stalled_handshake_ends_at_the_header_timeout)
{
	const char *more[] = {"header_timeout=1s", "idle_timeout=60s", NULL};
	char b;

	tlsrig_up(&e, "good", more);
	int fd = tlsrig_connect(&e, 0);
	long t0 = harness_now_ms();
	struct pollfd p = {.fd = fd, .events = POLLIN};
	cr_assert_eq(poll(&p, 1, 5000), 1, "still open after 5 s");
	cr_assert_eq(read(fd, &b, 1), 0, "not a close");
	long took = harness_now_ms() - t0;
	fprintf(stderr, "figure: a stalled intercepted handshake closed after "
	    "%ld ms (header_timeout 1 s)\n", took);
	cr_assert_geq(took, 900);
	close(fd);
}

/* A CONNECT whose host no certificate may name: the client's tunnel
 * ends, and the log names the host. */
Test(tlsrefuse, a_host_no_leaf_may_name_is_named)
{
	char req[200];
	bool closed;

	tlsrig_up(&e, "good", NULL);
	int n = snprintf(req, sizeof(req), "CONNECT bad_host.example:%d "
	    "HTTP/1.1\r\nHost: bad_host.example:%d\r\n\r\n", e.tport,
	    e.tport);
	free(raw_exchange(e.pport, req, (size_t)n, 3000, &closed));
	cr_assert(closed);
	cr_assert(logged("no certificate may name the host bad_host.example",
	    "client 127.0.0.1"));
}

/* tls_no_intercept names the host: its CONNECT is tunnelled, and an
 * https URL in absolute form (the node would make the TLS and read what
 * comes back) is refused, twice: nothing of it was fetched or kept. */
Test(tlsrefuse, a_never_intercepted_host_in_absolute_form_is_refused)
{
	const char *more[] = {"tls_no_intercept=127.0.0.1", NULL};
	char req[300];
	bool closed;

	tlsrig_up(&e, "good", more);
	for (int i = 0; i < 2; i++) {
		int n = snprintf(req, sizeof(req), "GET https://127.0.0.1:%d/"
		    "obj/bank?max_age=600 HTTP/1.1\r\nHost: x\r\n\r\n",
		    e.tport);
		char *r = raw_exchange(e.pport, req, (size_t)n, 3000, &closed);
		cr_assert(strncmp(r, "HTTP/1.1 403", 12) == 0, "%s", r);
		cr_assert(strstr(r, "tls_no_intercept") != NULL, "%s", r);
		free(r);
	}
	cr_assert_eq(origin_requests(), 0);
	cr_assert_eq(proxy_metric(&e, "sumcache_cache_objects"), 0);
}

/* Inside an intercepted session a CONNECT is refused with 405 and its
 * Allow field, never intercepted again (a session in a session). */
Test(tlsrefuse, a_connect_inside_an_intercepted_session_is_refused)
{
	char ca[400], req[200], buf[2048];
	unsigned long err;

	tlsrig_up(&e, "good", NULL);
	ours(ca, sizeof(ca));
	int fd = tlsrig_connect(&e, 0);
	SSL *ssl = tlsrig_handshake(fd, ca, "127.0.0.1", 0, &err);
	cr_assert_not_null(ssl);
	int n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\n\r\n", e.tport, e.tport);
	cr_assert_eq(SSL_write(ssl, req, n), n);
	size_t have = 0;
	while (have < sizeof(buf) - 1 && strstr(buf, "\r\n\r\n") == NULL) {
		int k = SSL_read(ssl, buf + have, (int)(sizeof(buf) - 1 -
		    have));
		cr_assert_gt(k, 0);
		have += (size_t)k;
		buf[have] = '\0';
	}
	cr_assert(strncmp(buf, "HTTP/1.1 405", 12) == 0, "%s", buf);
	cr_assert(strstr(buf, "\r\nAllow: GET, HEAD") != NULL, "%s", buf);
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	cr_assert_eq(proxy_metric(&e, "sumcache_tls_connects_total{way="
	    "\"intercepted\"}"), 1, "intercepted again");
}

/* ---- a CA made for some hosts ---- */

/* e.dir/ca holds a CA --make-ca made for the hosts of fors. */
static void
make_ca_for(const char *fors)
{
	char cmd[700];

	origin_dir(&e);
	snprintf(cmd, sizeof(cmd), "%s --make-ca %s/ca %s >/dev/null",
	    harness_sumcache(), e.dir, fors);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* A leaf for host that e's CA key signs whatever the CA's constraints
 * say (a thief's), as o's TLS origin's certificate. */
static void
origin_with_forged_leaf(struct env *o, const char *host)
{
	char crt[420], key[420];

	snprintf(crt, sizeof(crt), "%s/ca/ca.crt", e.dir);
	snprintf(key, sizeof(key), "%s/ca/ca.key", e.dir);
	char err[512];
	struct ca *ca = ca_load(crt, key, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	EVP_PKEY *k = cert_new_key(err, sizeof(err));
	struct cert_spec spec = {.cn = host, .host = host,
	    .not_before = time(NULL) - 60, .not_after = time(NULL) + 86400};
	X509 *x = cert_build(&spec, k, ca->cert, ca->key, err, sizeof(err));
	cr_assert_not_null(x, "%s", err);
	origin_dir(o);
	snprintf(crt, sizeof(crt), "%s/forged.crt", o->dir);
	snprintf(key, sizeof(key), "%s/forged.key", o->dir);
	FILE *f = fopen(crt, "w");
	cr_assert(f != NULL && PEM_write_X509(f, x));
	fclose(f);
	f = fopen(key, "w");
	cr_assert(f != NULL && PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL,
	    NULL));
	fclose(f);
	X509_free(x);
	EVP_PKEY_free(k);
	ca_free(&ca);
	origin_start_tls(o, crt, key);
}

/*
 * A CA made with --for 127.0.0.1 for a node intercepting 127.0.0.1: curl
 * and OpenSSL take the node's leaf. A leaf the same key signs for
 * outside.example (what a thief with ca.key would mint) is refused by
 * both, for the constraint: the key cannot pass for another site.
 */
Test(tlsrefuse, a_ca_made_for_the_intercepted_host_signs_for_nothing_else)
{
	const char *more[] = {"tls_intercept=127.0.0.1", NULL};
	char ca[400], url[200], resolve[100], errbuf[CURL_ERROR_SIZE];
	unsigned long err;
	struct env o = {0};

	make_ca_for("--for 127.0.0.1");
	tlsrig_up(&e, "good", more);
	ours(ca, sizeof(ca));
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/in?max_age=60",
	    e.tport);
	struct got g = tlsrig_browse(&e, url, ca, NULL);
	cr_assert_eq(g.rc, CURLE_OK, "curl refused the leaf inside: %s",
	    g.err);
	cr_assert_eq(g.status, 200);
	int fd = tlsrig_connect(&e, 0);
	SSL *ssl = tlsrig_handshake(fd, ca, "127.0.0.1", 0, &err);
	cr_assert_not_null(ssl, "OpenSSL refused the leaf inside: %s",
	    ERR_reason_error_string(err));
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);

	origin_with_forged_leaf(&o, "outside.example");
	CURL *h = curl_easy_init();
	struct curl_slist *res;
	snprintf(url, sizeof(url), "https://outside.example:%d/obj/out",
	    o.tport);
	snprintf(resolve, sizeof(resolve), "outside.example:%d:127.0.0.1",
	    o.tport);
	res = curl_slist_append(NULL, resolve);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_RESOLVE, res);
	curl_easy_setopt(h, CURLOPT_CAINFO, ca);
	curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_cleanup(h);
	curl_slist_free_all(res);
	cr_assert_eq(rc, CURLE_PEER_FAILED_VERIFICATION, "curl: %s", errbuf);
	cr_assert(strstr(errbuf, "permitted subtree") != NULL, "%s", errbuf);

	fd = harness_connect(o.tport);
	SSL_CTX *c2 = SSL_CTX_new(TLS_client_method());
	cr_assert_eq(SSL_CTX_load_verify_locations(c2, ca, NULL), 1);
	SSL *s2 = SSL_new(c2);
	SSL_set_fd(s2, fd);
	SSL_set_tlsext_host_name(s2, "outside.example");
	SSL_set1_host(s2, "outside.example");
	SSL_connect(s2);
	cr_assert_eq(SSL_get_verify_result(s2), X509_V_ERR_PERMITTED_VIOLATION,
	    "OpenSSL: %s", X509_verify_cert_error_string(
	    SSL_get_verify_result(s2)));
	ERR_clear_error();
	SSL_free(s2);
	SSL_CTX_free(c2);
	close(fd);
	cr_assert_eq(origin_count(&o, "/obj/out", NULL), 0);
	env_stop(&o);
}

/* A tls_intercept pattern the CA may not sign for is refused at start
 * and by -t, naming both. */
Test(tlsrefuse, a_node_refuses_to_intercept_what_its_ca_may_not_sign_for)
{
	char cmd[1200], out[420], line[1024];

	make_ca_for("--for '*.example.org'");
	snprintf(out, sizeof(out), "%s/refused.out", e.dir);
	for (int check = 1; check >= 0; check--) {
		snprintf(cmd, sizeof(cmd), "%s %s -o http_listen=127.0.0.1:%d "
		    "-o 'tls_intercept=*.example.org' -o "
		    "'tls_intercept=*.bank.example' -o tls_ca_cert=%s/ca/ca.crt "
		    "-o tls_ca_key=%s/ca/ca.key >%s 2>&1", harness_sumcache(),
		    check ? "-t" : "", harness_free_port(), e.dir, e.dir, out);
		int st = system(cmd);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "%s: the node "
		    "took it", check ? "-t" : "start");
		FILE *f = fopen(out, "r");
		cr_assert_not_null(f);
		bool named = false;
		while (fgets(line, sizeof(line), f) != NULL)
			named = named || (strstr(line, "'*.bank.example'") !=
			    NULL && strstr(line, "ca/ca.crt") != NULL);
		fclose(f);
		cr_assert(named, "%s: the refusal does not name the pattern "
		    "and the CA", check ? "-t" : "start");
	}
}
