/*
 * Summary keys: how a request (method and normalized URL) becomes hash
 * positions in a Bloom filter. Two schemes behind one interface:
 *
 *   xxh3       XXH3-128 of the URL; position i = (h1 + i * h2) scaled
 *              onto [0, m) by a multiply-shift; any k, any m (double
 *              hashing, Kirsch and Mitzenmacher).
 *   squid-md5  MD5 of (method byte || URL), as Squid Cache Digests key
 *              objects; position i = big-endian 32-bit word i mod m, k = 4.
 *
 * A request is hashed once into a struct sumkey; every filter and every
 * peer summary probes with that same value.
 */
#ifndef SUMKEY_H
#define SUMKEY_H

#include <stddef.h>
#include <stdint.h>

enum sum_scheme {
	SUM_XXH3 = 1,
	SUM_SQUID_MD5 = 2,
};

/* Squid's method ids for the MD5 key (PROTOCOLS.md section 2) */
enum sum_method {
	SUM_METHOD_GET = 1,
	SUM_METHOD_HEAD = 4,
};

#define SUM_SQUID_K 4

struct sumkey {
	uint8_t bytes[16]; /* XXH3-128 (h1 low, h2 high) or the MD5 digest */
};

/*
 * A hasher for one scheme. squid-md5 keeps its MD5 implementation and
 * context between keys: OpenSSL 3 fetches the algorithm and allocates a
 * context per use otherwise, which was 60 % of a key's cost.
 */
struct sumkey_hasher;

struct sumkey_hasher *sumkey_hasher_new(enum sum_scheme scheme);
void sumkey_hasher_free(struct sumkey_hasher **h);
enum sum_scheme sumkey_hasher_scheme(const struct sumkey_hasher *h);

/* Hashes a normalized URL. method matters only for squid-md5. Returns 0,
 * or -1 when the crypto library fails (key zeroed). */
int sumkey_make(struct sumkey_hasher *h, enum sum_method method,
    const char *url, size_t len, struct sumkey *key);

/*
 * Writes the k bit positions of key in a filter of m bits to pos[0..k).
 * For squid-md5, k must be SUM_SQUID_K.
 */
void sumkey_positions(enum sum_scheme scheme, const struct sumkey *key,
    unsigned k, uint64_t m, uint64_t *pos);

#endif
