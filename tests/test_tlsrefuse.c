/*
 * What an intercepting node refuses, and how the refused client is told:
 * an SNI naming another host than its CONNECT (refused, the origin sees
 * nothing), a TLS version the node does not speak, a handshake that
 * stalls, a host no leaf may name, an https URL in absolute form for a
 * host never looked into, a CONNECT inside an intercepted session. Each
 * refusal reaches the client as TLS's alert or an HTTP status, never a
 * bare close, and is logged with the client and the host, a line a
 * second of each kind.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

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
