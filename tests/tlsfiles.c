/*
 * The https tests' certificates (tlsfiles.h). The origin's leaves name
 * 127.0.0.1, the address the proxy reaches the test origin at.
 */
#include "tlsfiles.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <time.h>

#include <openssl/pem.h>

#include "cert.h"

static char err[512];

static void
write_cert(const char *dir, const char *name, X509 *x)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/%s.crt", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	cr_assert(PEM_write_X509(f, x));
	fclose(f);
}

static void
write_key(const char *dir, const char *name, EVP_PKEY *k)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/%s.key", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	cr_assert(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL));
	fclose(f);
}

/* A leaf for host, valid from..until, signed by the CA (or itself). */
static void
leaf(const char *dir, const char *name, const char *host, time_t from,
    time_t until, X509 *ca, EVP_PKEY *ca_key)
{
	EVP_PKEY *k = cert_new_key(err, sizeof(err));
	struct cert_spec spec = {.cn = host, .host = host,
	    .not_before = from, .not_after = until};
	X509 *x;

	cr_assert_not_null(k, "%s", err);
	x = cert_build(&spec, k, ca, ca_key, err, sizeof(err));
	cr_assert_not_null(x, "%s", err);
	write_cert(dir, name, x);
	write_key(dir, name, k);
	X509_free(x);
	EVP_PKEY_free(k);
}

void
tlsfiles_write(const char *dir)
{
	time_t now = time(NULL);
	struct cert_spec cas = {.cn = "sumcache test CA", .is_ca = true,
	    .not_before = now - 3600, .not_after = now + 30 * 86400};
	EVP_PKEY *ck = cert_new_key(err, sizeof(err));
	X509 *ca;

	cr_assert_not_null(ck, "%s", err);
	ca = cert_build(&cas, ck, NULL, NULL, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	write_cert(dir, "testca", ca);
	leaf(dir, "good", "127.0.0.1", now - 3600, now + 86400, ca, ck);
	leaf(dir, "expired", "127.0.0.1", now - 10 * 86400, now - 86400, ca,
	    ck);
	leaf(dir, "wronghost", "other.example", now - 3600, now + 86400, ca,
	    ck);
	leaf(dir, "selfsigned", "127.0.0.1", now - 3600, now + 86400, NULL,
	    NULL);
	X509_free(ca);
	EVP_PKEY_free(ck);
}
