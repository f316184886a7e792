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

#include <string.h>

#include <openssl/evp.h>
#include <xxhash.h>

static uint64_t
load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
store_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void
sumkey_make(enum sum_scheme scheme, enum sum_method method, const char *url,
    size_t len, struct sumkey *key)
{
	if (scheme == SUM_XXH3) {
		XXH128_hash_t h = XXH3_128bits(url, len);
		store_le64(key->bytes, h.low64);
		store_le64(key->bytes + 8, h.high64);
		return;
	}
	/* EVP rather than the deprecated MD5() of OpenSSL 3 */
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t m = (uint8_t)method;
	unsigned int n = 0;

	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, &m, 1) != 1 ||
	    EVP_DigestUpdate(ctx, url, len) != 1 ||
	    EVP_DigestFinal_ex(ctx, key->bytes, &n) != 1 || n != 16)
		memset(key->bytes, 0, sizeof(key->bytes));
	EVP_MD_CTX_free(ctx);
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
