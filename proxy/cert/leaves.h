/*
 * Leaf certificates for intercepted hosts, minted on first use and signed
 * by the CA, held in a bounded cache so that a host's next connection
 * reuses its leaf (minting costs one ECDSA signature; a handshake with a
 * cached leaf costs none of ours).
 */
#ifndef CERT_LEAVES_H
#define CERT_LEAVES_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

struct ca;
struct leaves;

#define LEAF_VALID_DAYS 30
/* a cached leaf this close to its end is minted again */
#define LEAF_RENEW_S 86400

struct leaves_stats {
	uint64_t minted;         /* leaves signed */
	uint64_t reused;         /* asked for and found in the cache */
	uint64_t evicted;        /* dropped to stay within the bound */
	uint64_t refused;        /* hosts no leaf may name */
	uint64_t cached;         /* held now */
};

/* A cache of at most capacity leaves signed by ca (borrowed; it outlives
 * the cache). Every leaf shares one key, made here. NULL with err. */
struct leaves *leaves_new(const struct ca *ca, size_t capacity, char *err,
    size_t elen);
void leaves_free(struct leaves **l);

/* host's leaf, valid now: cached, or minted and cached. Borrowed until
 * the next leaves_get or leaves_free (take a reference to hold it longer).
 * NULL with the reason in err (a host no certificate may name). */
X509 *leaves_get(struct leaves *l, const char *host, char *err, size_t elen);

/* The key every leaf certifies. */
EVP_PKEY *leaves_key(const struct leaves *l);

const struct leaves_stats *leaves_stats(struct leaves *l);

#endif
