/*
 * Clients of an intercepting node for the https tests (tlsrig.h).
 */
#include "tlsrig.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>

#include "tlsfiles.h"

static const char *opts[16];

void
tlsrig_up(struct env *e, const char *origin_cert, const char *const *more)
{
	static char cert[400], key[400], ports[64], ca[400];
	char cmd[600], crt[400], okey[400];
	int n = 0;

	bool names_hosts = false;
	for (const char *const *m = more; m != NULL && *m != NULL; m++)
		names_hosts = names_hosts || strncmp(*m, "tls_intercept=",
		    14) == 0;
	if (!names_hosts)
		opts[n++] = "tls_intercept=*";
	opts[n++] = cert;
	opts[n++] = key;
	opts[n++] = ports;
	opts[n++] = ca;
	for (; more != NULL && *more != NULL && n < 15; more++)
		opts[n++] = *more;
	opts[n] = NULL;

	if (e->dir[0] == '\0')
		origin_dir(e);
	tlsfiles_write(e->dir);
	snprintf(cmd, sizeof(cmd), "test -e %s/ca/ca.crt || %s --make-ca "
	    "%s/ca >/dev/null", e->dir, harness_sumcache(), e->dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(cert, sizeof(cert), "tls_ca_cert=%s/ca/ca.crt", e->dir);
	snprintf(key, sizeof(key), "tls_ca_key=%s/ca/ca.key", e->dir);
	snprintf(ca, sizeof(ca), "tls_upstream_ca=%s/testca.crt", e->dir);
	snprintf(crt, sizeof(crt), "%s/%s.crt", e->dir, origin_cert);
	snprintf(okey, sizeof(okey), "%s/%s.key", e->dir, origin_cert);
	origin_start_tls(e, crt, okey);
	snprintf(ports, sizeof(ports), "connect_ports=%d", e->tport);
	proxy_start(e, opts);
}

const char *const *
tlsrig_opts(void)
{
	return opts;
}

static size_t
on_head(char *p, size_t size, size_t n, void *arg)
{
	struct got *g = arg;
	size_t k = size * n;

	if (g->hlen + k < sizeof(g->head)) {
		memcpy(g->head + g->hlen, p, k);
		g->hlen += k;
		g->head[g->hlen] = '\0';
	}
	return k;
}

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	((struct got *)arg)->len += size * n;
	return size * n;
}

struct got
tlsrig_browse(const struct env *e, const char *url, const char *trust,
    const char *from)
{
	struct got g = {0};
	char proxy[64];
	CURL *h = curl_easy_init();

	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", e->pport);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROXY, proxy);
	curl_easy_setopt(h, CURLOPT_CAINFO, trust);
	curl_easy_setopt(h, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_head);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &g);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &g);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, g.err);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
	if (from != NULL)
		curl_easy_setopt(h, CURLOPT_INTERFACE, from);
	g.rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &g.status);
	curl_easy_getinfo(h, CURLINFO_HTTP_VERSION, &g.version);
	curl_easy_cleanup(h);
	return g;
}

int
tlsrig_connect(const struct env *e, int rcvbuf)
{
	char req[200], head[4096];
	size_t hlen = 0;
	int fd = harness_connect(e->pport), n;

	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	n = snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\n\r\n", e->tport, e->tport);
	cr_assert_eq(write(fd, req, (size_t)n), n);
	/* the proxy's answer, a byte at a time: TLS follows it */
	while (hlen < 4 || memcmp(head + hlen - 4, "\r\n\r\n", 4) != 0) {
		cr_assert_lt(hlen, sizeof(head));
		cr_assert_eq(read(fd, head + hlen, 1), 1);
		hlen++;
	}
	cr_assert(strncmp(head, "HTTP/1.1 200", 12) == 0, "%.*s", (int)hlen,
	    head);
	return fd;
}

SSL *
tlsrig_handshake(int fd, const char *trust, const char *sni, int max,
    unsigned long *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	cr_assert_eq(SSL_CTX_load_verify_locations(ctx, trust, NULL), 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (max != 0) {
		/* Debian's OpenSSL allows no TLS 1.1 at its default level */
		SSL_CTX_set_security_level(ctx, 0);
		SSL_CTX_set_min_proto_version(ctx, 0);
		SSL_CTX_set_max_proto_version(ctx, max);
	}
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	SSL_set_tlsext_host_name(ssl, sni);
	*err = 0;
	ERR_clear_error();
	if (SSL_connect(ssl) == 1)
		return ssl;
	*err = ERR_peek_error();
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	return NULL;
}

struct closed_read
tlsrig_get(const struct env *e, const char *path, const char *trust,
    bool (*midway)(void *), void *arg)
{
	struct closed_read r = {0};
	char req[600], buf[16384];
	int fd = tlsrig_connect(e, midway != NULL ? 4096 : 0), n;
	unsigned long err;

	SSL *ssl = tlsrig_handshake(fd, trust, "127.0.0.1", 0, &err);
	cr_assert_not_null(ssl, "handshake: %s", ERR_reason_error_string(err));
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1:"
	    "%d\r\nConnection: close\r\n\r\n", path, e->tport);
	cr_assert_eq(SSL_write(ssl, req, n), n);

	size_t have = 0;
	long long want = -1;
	char resp[8192];
	while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
		if (want >= 0) {
			r.body += n;
			if (midway != NULL && r.body >= 65536) {
				usleep(200 * 1000);
				if (!midway(arg))
					break;
				midway = NULL;
			}
			continue;
		}
		size_t k = (size_t)n < sizeof(resp) - 1 - have ? (size_t)n :
		    sizeof(resp) - 1 - have;
		memcpy(resp + have, buf, k);
		have += k;
		resp[have] = '\0';
		char *end = strstr(resp, "\r\n\r\n"), *cl;
		if (end == NULL)
			continue;
		cr_assert(strncmp(resp, "HTTP/1.1 200", 12) == 0, "%s", resp);
		cl = strstr(resp, "\r\nContent-Length:");
		cr_assert_not_null(cl, "%s", resp);
		want = atoll(cl + 17);
		r.body = (long long)(have - (size_t)(end + 4 - resp)) +
		    (n - (int)k);
	}
	r.close_notify = SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN;
	r.whole = want >= 0 && r.body == want;
	ERR_clear_error();
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return r;
}
