/*
 * Certificates made here: the CA's own (self-signed) and the leaves it
 * signs for intercepted hosts. One builder for both, so the CA, the
 * leaves and the tests' bad certificates (expired, not a CA) follow one
 * set of rules: X.509 v3, a random 128-bit serial, ECDSA with SHA-256.
 */
#ifndef CERT_CERT_H
#define CERT_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

struct cert_spec {
	const char *cn;          /* the subject's common name */
	const char *host;        /* a leaf's subjectAltName (a DNS name or
	                          * an IP literal), or NULL for a CA */
	bool is_ca;
	bool client_too;         /* a leaf a TLS client presents as well
	                          * (a node's on its peer links) */
	const char *constraints; /* a CA's nameConstraints (nc_value), or
	                          * NULL: it may sign for any host */
	time_t not_before, not_after;
};

/* A new ECDSA P-256 key; NULL with err. */
EVP_PKEY *cert_new_key(char *err, size_t elen);

/* A certificate of spec for key, signed by issuer_key as issuer (NULL
 * issuer: self-signed by key). NULL with the reason in err. */
X509 *cert_build(const struct cert_spec *spec, EVP_PKEY *key,
    X509 *issuer, EVP_PKEY *issuer_key, char *err, size_t elen);

/* A host a leaf may be minted for: a DNS name of letters, digits,
 * hyphens and dots (at most 253), or an IPv4 or IPv6 literal. */
bool cert_host_ok(const char *host);
/* Whether host is an IPv4 or IPv6 literal: a certificate names it as an
 * iPAddress, not a DNS name. */
bool cert_host_is_ip(const char *host);
/* A host a client sent, for a message: its printable bytes ('?' for the
 * others), cut to fit len with "..." after. */
void cert_host_shown(const char *host, char *out, size_t len);

/* OpenSSL's latest error as text, in err after what (for messages). */
void cert_ssl_error(const char *what, char *err, size_t elen);

#endif
