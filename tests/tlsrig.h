/*
 * Clients of an intercepting node, for the https tests: the node started
 * over a TLS origin with its CA, libcurl browsing through it, and an
 * OpenSSL client speaking through a CONNECT itself (what libcurl hides:
 * alerts, a close_notify, a client reading slowly).
 */
#ifndef TLSRIG_H
#define TLSRIG_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>
#include <openssl/ssl.h>

#include "harness.h"

/* A node intercepting e's TLS origin port (CA made by --make-ca in
 * e->dir/ca unless the test made one there, the test CA trusted
 * upstream), with more options (a NULL-terminated list, or NULL;
 * tls_intercept=* unless they name the hosts). e->dir is made first
 * unless a test made it for its options. */
void tlsrig_up(struct env *e, const char *origin_cert,
    const char *const *more);
/* The options tlsrig_up started the node with, for a restart. */
const char *const *tlsrig_opts(void);

struct got {
	CURLcode rc;
	long status;
	long version;           /* CURL_HTTP_VERSION_* negotiated */
	char head[2048];
	size_t hlen;
	size_t len;
	char err[CURL_ERROR_SIZE];
};

/* GET url through e's node, as a browser would (CONNECT, then TLS),
 * trusting only the CA file trust, from the address from (NULL: any). */
struct got tlsrig_browse(const struct env *e, const char *url,
    const char *trust, const char *from);

/* A CONNECT to e's TLS origin port through e's node, answered 200: the
 * socket, after the answer. rcvbuf > 0 sets the socket's receive
 * buffer. */
int tlsrig_connect(const struct env *e, int rcvbuf);

/* A TLS client session over fd trusting trust, naming sni, at most TLS
 * version max (0: any); NULL when the handshake failed, with OpenSSL's
 * first error in *err. The caller frees the SSL and its SSL_CTX
 * (SSL_get_SSL_CTX). */
SSL *tlsrig_handshake(int fd, const char *trust, const char *sni, int max,
    unsigned long *err);

struct closed_read {
	long long body;     /* bytes after the head */
	bool whole;         /* a 200 whose Content-Length all came */
	bool close_notify;  /* the session ended with the proxy's alert */
};

/* "GET path" with "Connection: close" through an intercepted CONNECT,
 * read to the end: what came, and how the session ended. With midway,
 * the client's receive buffer is small, and midway(arg) runs once 64 KB
 * of the body have been read, 200 ms later; the client reads on if it
 * returns true, and leaves if not. */
struct closed_read tlsrig_get(const struct env *e, const char *path,
    const char *trust, bool (*midway)(void *), void *arg);

#endif
