/*
 * The cluster's identity on peer links (cluster.h). The CA key is a
 * function of the cluster key alone, so each node builds its own copy of
 * the CA certificate (same name, same key, so the same key identifier)
 * and the copies verify each other's node certificates. The CA key lives
 * only while this node's certificate is signed: a node signs nothing
 * else with it. The node's certificate lasts as long as the process
 * would plausibly run (CLUSTER_CERT_DAYS), and a restart makes another.
 */
#include "cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>

#include "cert.h"

#define CLUSTER_CERT_DAYS 3650

/* The P-256 key whose scalar is HMAC-SHA256(key, label) mod (n - 1) + 1
 * (the bias of a 256-bit value reduced mod n is below 2^-128). */
static EVP_PKEY *
derive_ca_key(const unsigned char *key, size_t len)
{
	static const char label[] = "sumcache peer-link CA";
	unsigned char d[32], pub[65];
	unsigned int dlen = sizeof(d);
	EC_GROUP *g = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	BN_CTX *bc = BN_CTX_new();
	BIGNUM *bn = NULL, *n1 = BN_new();
	EC_POINT *p = NULL;
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	EVP_PKEY *pk = NULL;
	size_t publen = 0;

	if (g == NULL || bc == NULL || n1 == NULL || bld == NULL ||
	    pc == NULL || HMAC(EVP_sha256(), key, (int)len,
	    (const unsigned char *)label, sizeof(label) - 1, d, &dlen) ==
	    NULL || (bn = BN_bin2bn(d, sizeof(d), NULL)) == NULL ||
	    BN_copy(n1, EC_GROUP_get0_order(g)) == NULL ||
	    !BN_sub_word(n1, 1) || !BN_mod(bn, bn, n1, bc) ||
	    !BN_add_word(bn, 1) || (p = EC_POINT_new(g)) == NULL ||
	    !EC_POINT_mul(g, p, bn, NULL, NULL, bc) ||
	    (publen = EC_POINT_point2oct(g, p, POINT_CONVERSION_UNCOMPRESSED,
	    pub, sizeof(pub), bc)) == 0 ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
	    "prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, bn) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY,
	    pub, publen) ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    EVP_PKEY_fromdata_init(pc) != 1 ||
	    EVP_PKEY_fromdata(pc, &pk, EVP_PKEY_KEYPAIR, params) != 1)
		pk = NULL;
	OPENSSL_cleanse(d, sizeof(d));
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	EVP_PKEY_CTX_free(pc);
	EC_POINT_free(p);
	BN_clear_free(bn);
	BN_free(n1);
	BN_CTX_free(bc);
	EC_GROUP_free(g);
	return pk;
}

/* PEM of x or of k (a private key) in a new string; NULL on failure. */
static char *
pem_of(X509 *x, EVP_PKEY *k, size_t *len)
{
	BIO *b = BIO_new(BIO_s_secmem());
	char *data, *s = NULL;
	long n;

	if (b != NULL && (x != NULL ? PEM_write_bio_X509(b, x) :
	    PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL)) == 1 &&
	    (n = BIO_get_mem_data(b, &data)) > 0 &&
	    (s = malloc((size_t)n + 1)) != NULL) {
		memcpy(s, data, (size_t)n);
		s[n] = '\0';
		*len = (size_t)n;
	}
	BIO_free(b);
	return s;
}

struct cluster_id *
cluster_id_new(const unsigned char *key, size_t len, const char *node,
    char *err, size_t elen)
{
	return cluster_id_new_named(key, len, node, CLUSTER_LINK_NAME, err,
	    elen);
}

struct cluster_id *
cluster_id_new_named(const unsigned char *key, size_t len, const char *node,
    const char *name, char *err, size_t elen)
{
	struct cluster_id *id = calloc(1, sizeof(*id));
	EVP_PKEY *ca_key = NULL;
	time_t now = time(NULL);
	char cn[64];

	if (id == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	if ((ca_key = derive_ca_key(key, len)) == NULL) {
		cert_ssl_error("cannot derive the cluster CA", err, elen);
		goto fail;
	}
	struct cert_spec ca = {.cn = "sumcache cluster CA", .is_ca = true,
	    .not_before = now - 86400, .not_after = now + 2 *
	    CLUSTER_CERT_DAYS * 86400L};
	snprintf(cn, sizeof(cn), "sumcache node %s", node);
	struct cert_spec mine = {.cn = cn, .host = name,
	    .client_too = true, .not_before = now - 3600,
	    .not_after = now + CLUSTER_CERT_DAYS * 86400L};
	if ((id->ca = cert_build(&ca, ca_key, NULL, NULL, err, elen)) ==
	    NULL || (id->key = cert_new_key(err, elen)) == NULL ||
	    (id->cert = cert_build(&mine, id->key, id->ca, ca_key, err,
	    elen)) == NULL)
		goto fail;
	if ((id->ca_pem = pem_of(id->ca, NULL, &id->ca_pem_len)) == NULL ||
	    (id->cert_pem = pem_of(id->cert, NULL, &id->cert_pem_len)) ==
	    NULL || (id->key_pem = pem_of(NULL, id->key, &id->key_pem_len)) ==
	    NULL) {
		snprintf(err, elen, "out of memory");
		goto fail;
	}
	EVP_PKEY_free(ca_key);
	return id;
fail:
	EVP_PKEY_free(ca_key);
	cluster_id_free(&id);
	return NULL;
}

void
cluster_id_free(struct cluster_id **idp)
{
	struct cluster_id *id = *idp;

	if (id == NULL)
		return;
	*idp = NULL;
	X509_free(id->ca);
	X509_free(id->cert);
	EVP_PKEY_free(id->key);
	free(id->ca_pem);
	free(id->cert_pem);
	if (id->key_pem != NULL)
		OPENSSL_cleanse(id->key_pem, id->key_pem_len);
	free(id->key_pem);
	free(id);
}
