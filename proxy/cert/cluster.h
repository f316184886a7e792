/*
 * A node's identity on its peer links: TLS between two nodes in which
 * both present a certificate signed by the cluster's CA. That CA is
 * derived from the cluster key (cluster_key_file), so holding the key is
 * what membership means, as for the summaries' HMAC, and there is no
 * certificate to hand out, renew or lose: every node derives the same CA
 * key and signs its own node certificate with it at start.
 */
#ifndef CERT_CLUSTER_H
#define CERT_CLUSTER_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

/* The name every node certificate carries and every link verifies: the
 * identity is the membership, not an address (".invalid" can never be a
 * real host, RFC 6761). */
#define CLUSTER_LINK_NAME "peer.sumcache.invalid"

/* This node's copy of the cluster CA, its own certificate and key, and
 * the same as PEM for libcurl. Owns all of it. */
struct cluster_id {
	X509 *ca;
	X509 *cert;
	EVP_PKEY *key;
	char *ca_pem, *cert_pem, *key_pem;
	size_t ca_pem_len, cert_pem_len, key_pem_len;
};

/*
 * The identity of node `node` for the cluster key key (len bytes): the
 * CA's key is HMAC-SHA256(key, "sumcache peer-link CA") reduced to a
 * P-256 scalar; the node's key is new. NULL with the reason in err.
 */
struct cluster_id *cluster_id_new(const unsigned char *key, size_t len,
    const char *node, char *err, size_t elen);
/* The same with a certificate naming name instead of CLUSTER_LINK_NAME:
 * what the tests mint to show that a link naming anything else is
 * refused at both ends. */
struct cluster_id *cluster_id_new_named(const unsigned char *key,
    size_t len, const char *node, const char *name, char *err, size_t elen);
void cluster_id_free(struct cluster_id **id);

#endif
