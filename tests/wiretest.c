/*
 * See wiretest.h.
 */
#include "wiretest.h"

#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

struct sum_buf
wiretest_versioned(uint32_t version, Sumcache__V1__Kind kind, uint32_t k,
    const char *sender, const void *key, size_t keylen)
{
	Sumcache__V1__Summary sum = SUMCACHE__V1__SUMMARY__INIT;
	Sumcache__V1__Signed sig = SUMCACHE__V1__SIGNED__INIT;
	uint8_t payload[2] = {0, 0}, inner[256], tag[32];
	unsigned taglen = 0;
	struct sum_buf b = {0};

	sum.sender = (char *)sender;
	sum.epoch = 1;
	sum.seq = 1;
	sum.scheme = SUMCACHE__V1__HASH_SCHEME__HASH_XXH3;
	sum.m = 64;
	sum.k = k;
	sum.kind = kind;
	sum.payload.data = payload;
	sum.payload.len = sizeof(payload);
	sum.version = version;
	size_t n = sumcache__v1__summary__pack(&sum, inner);
	cr_assert_leq(n, sizeof(inner));
	cr_assert_not_null(HMAC(EVP_sha256(), key, (int)keylen, inner, n,
	    tag, &taglen));
	sig.summary.data = inner;
	sig.summary.len = n;
	sig.mac.data = tag;
	sig.mac.len = taglen;
	cr_assert_eq(sum_buf_reserve(&b,
	    sumcache__v1__signed__get_packed_size(&sig)), 0);
	b.len = sumcache__v1__signed__pack(&sig, b.p);
	return b;
}
