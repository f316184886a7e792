/*
 * The one builder of certificates (cert.h). Extensions go in by name
 * through OpenSSL's v3 configuration parser, as `openssl req` does, so
 * what each certificate claims reads as it would in a config file. A
 * leaf's host is checked (cert_host_ok) before it reaches that parser:
 * no comma or colon of a client's can add a name.
 */
#include "cert.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#define CERT_SERIAL_BYTES 16

void
cert_ssl_error(const char *what, char *err, size_t elen)
{
	char why[256];
	unsigned long e = ERR_peek_last_error();

	if (e != 0)
		ERR_error_string_n(e, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "no further detail");
	ERR_clear_error();
	snprintf(err, elen, "%s: %s", what, why);
}

EVP_PKEY *
cert_new_key(char *err, size_t elen)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");

	if (k == NULL)
		cert_ssl_error("cannot make an ECDSA P-256 key", err, elen);
	return k;
}

bool
cert_host_is_ip(const char *host)
{
	unsigned char addr[16];

	return inet_pton(AF_INET, host, addr) == 1 ||
	    inet_pton(AF_INET6, host, addr) == 1;
}

void
cert_host_shown(const char *host, char *out, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len && host[i] != '\0'; i++)
		out[i] = host[i] > ' ' && host[i] < 127 ? host[i] : '?';
	out[i] = '\0';
	if (host[i] != '\0' && i >= 3)
		memcpy(out + i - 3, "...", 3);
}

bool
cert_host_ok(const char *host)
{
	size_t n = strlen(host);

	if (cert_host_is_ip(host))
		return true;
	if (n == 0 || n > 253 || host[0] == '.' || host[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return true;
}

static bool
set_serial(X509 *x)
{
	unsigned char b[CERT_SERIAL_BYTES];
	BIGNUM *bn;
	bool ok;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return false;
	b[0] &= 0x7f;          /* positive, as RFC 5280 asks */
	b[0] |= 0x01;          /* and never a short one */
	if ((bn = BN_bin2bn(b, sizeof(b), NULL)) == NULL)
		return false;
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok;
}

static bool
add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value)
{
	X509_EXTENSION *e = X509V3_EXT_nconf_nid(NULL, ctx, nid, value);
	bool ok = e != NULL && X509_add_ext(x, e, -1) == 1;

	X509_EXTENSION_free(e);
	return ok;
}

static bool
add_extensions(X509 *x, X509 *issuer, const struct cert_spec *spec)
{
	X509V3_CTX ctx;
	char san[300];

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if (!add_ext(x, &ctx, NID_subject_key_identifier, "hash"))
		return false;
	if (issuer != x && !add_ext(x, &ctx, NID_authority_key_identifier,
	    "keyid:always"))
		return false;
	if (spec->is_ca)
		return add_ext(x, &ctx, NID_basic_constraints,
		    "critical,CA:TRUE,pathlen:0") &&
		    add_ext(x, &ctx, NID_key_usage,
		    "critical,keyCertSign,cRLSign") &&
		    (spec->constraints == NULL || add_ext(x, &ctx,
		    NID_name_constraints, spec->constraints));
	snprintf(san, sizeof(san), "%s:%s", cert_host_is_ip(spec->host) ?
	    "IP" : "DNS", spec->host);
	return add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE") &&
	    add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature") &&
	    add_ext(x, &ctx, NID_ext_key_usage, spec->client_too ?
	    "serverAuth,clientAuth" : "serverAuth") &&
	    add_ext(x, &ctx, NID_subject_alt_name, san);
}

X509 *
cert_build(const struct cert_spec *spec, EVP_PKEY *key, X509 *issuer,
    EVP_PKEY *issuer_key, char *err, size_t elen)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	/* a common name is at most 64 characters (RFC 5280's ub) */
	char cn[65];

	if (!spec->is_ca && (spec->host == NULL || !cert_host_ok(spec->host))) {
		snprintf(err, elen, "not a host a certificate can name");
		goto fail;
	}
	snprintf(cn, sizeof(cn), "%s", spec->cn);
	if (x == NULL || name == NULL || X509_set_version(x, 2) != 1 ||
	    !set_serial(x) ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_subject_name(x, name) != 1 ||
	    X509_set_issuer_name(x, issuer != NULL ?
	    X509_get_subject_name(issuer) : name) != 1 ||
	    ASN1_TIME_set(X509_getm_notBefore(x), spec->not_before) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), spec->not_after) == NULL ||
	    X509_set_pubkey(x, key) != 1 ||
	    !add_extensions(x, issuer != NULL ? issuer : x, spec) ||
	    X509_sign(x, issuer_key != NULL ? issuer_key : key,
	    EVP_sha256()) == 0) {
		cert_ssl_error("cannot build the certificate", err, elen);
		goto fail;
	}
	X509_NAME_free(name);
	return x;
fail:
	X509_NAME_free(name);
	X509_free(x);
	return NULL;
}
