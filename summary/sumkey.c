/*
 * Hash positions for summaries.
 *
 * xxh3: the two 64-bit halves of XXH3-128 drive double hashing,
 * g_i = h1 + i * h2 (mod 2^64), and each g_i is mapped onto [0, m) by the
 * high half of g_i * m (Lemire's multiply-shift) instead of g_i mod m: as
 * uniform, and a multiply instead of a 64-bit division per position, which
 * was most of a probe's cost. h2 is forced odd so the g_i never repeat; two
 * positions can still meet after the mapping (chance about k^2/2m), which
 * the filter tolerates.
 *
 * squid-md5: byte-exact with Squid's CacheDigest (store_key_md5.cc,
 * CacheDigest.cc): MD5 over the method id byte followed by the URL, and
 * the digest read as four big-endian 32-bit words, each taken mod m.
 */
#include "sumkey.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

#include "bytes.h"

struct sumkey_hasher {
	enum sum_scheme scheme;
	EVP_MD *md5;      /* squid-md5 only */
	EVP_MD_CTX *ctx;
};

struct sumkey_hasher *
sumkey_hasher_new(enum sum_scheme scheme)
{
	struct sumkey_hasher *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->scheme = scheme;
	if (scheme == SUM_SQUID_MD5) {
		h->md5 = EVP_MD_fetch(NULL, "MD5", NULL);
		h->ctx = EVP_MD_CTX_new();
		if (h->md5 == NULL || h->ctx == NULL)
			sumkey_hasher_free(&h);
	}
	return h;
}

void
sumkey_hasher_free(struct sumkey_hasher **hp)
{
	struct sumkey_hasher *h = *hp;

	if (h == NULL)
		return;
	EVP_MD_CTX_free(h->ctx);
	EVP_MD_free(h->md5);
	free(h);
	*hp = NULL;
}

enum sum_scheme
sumkey_hasher_scheme(const struct sumkey_hasher *h)
{
	return h->scheme;
}

int
sumkey_make(struct sumkey_hasher *h, enum sum_method method, const char *url,
    size_t len, struct sumkey *key)
{
	if (h->scheme == SUM_XXH3) {
		XXH128_hash_t x = XXH3_128bits(url, len);
		store_le64(key->bytes, x.low64);
		store_le64(key->bytes + 8, x.high64);
		return 0;
	}
	uint8_t m = (uint8_t)method;
	unsigned int n = 0;

	if (EVP_DigestInit_ex2(h->ctx, h->md5, NULL) != 1 ||
	    EVP_DigestUpdate(h->ctx, &m, 1) != 1 ||
	    EVP_DigestUpdate(h->ctx, url, len) != 1 ||
	    EVP_DigestFinal_ex(h->ctx, key->bytes, &n) != 1 || n != 16) {
		memset(key->bytes, 0, sizeof(key->bytes));
		return -1;
	}
	return 0;
}

void
sumkey_positions(enum sum_scheme scheme, const struct sumkey *key,
    unsigned k, uint64_t m, uint64_t *pos)
{
	if (scheme == SUM_SQUID_MD5) {
		for (unsigned i = 0; i < k && i < SUM_SQUID_K; i++) {
			const uint8_t *w = key->bytes + 4 * i;
			uint32_t v = (uint32_t)w[0] << 24 | (uint32_t)w[1] << 16 |
			    (uint32_t)w[2] << 8 | w[3];
			pos[i] = v % m;
		}
		return;
	}
	uint64_t h1 = load_le64(key->bytes), h2 = load_le64(key->bytes + 8) | 1;
	for (unsigned i = 0; i < k; i++) {
		unsigned __int128 g = h1 + (uint64_t)i * h2;
		pos[i] = (uint64_t)((g * m) >> 64);
	}
}
