#include <criterion/criterion.h>
#include <string.h>

#include "digest.h"

static const char *urls[] = {"http://www.squid-cache.org/",
    "http://www.oreilly.com/", "ftp://ftp.ircache.net/"};

static void
md5_key(const char *url, struct sumkey *k)
{
	static struct sumkey_hasher *h;

	if (h == NULL)
		h = sumkey_hasher_new(SUM_SQUID_MD5);
	cr_assert_not_null(h);
	cr_assert_eq(sumkey_make(h, SUM_METHOD_GET, url, strlen(url), k), 0);
}

static struct sum_buf
build(uint32_t capacity, uint8_t bpe)
{
	struct cbf *f = cbf_new(SUM_SQUID_MD5,
	    (uint64_t)digest_mask_size(capacity, bpe) * 8, 4);
	struct sum_buf b = {0};
	struct sumkey k;

	for (int i = 0; i < 3; i++) {
		md5_key(urls[i], &k);
		cbf_add(f, &k);
	}
	cr_assert_eq(digest_build(f, capacity, bpe, &b), 0);
	cbf_free(&f);
	return b;
}

Test(digest, build_then_parse)
{
	struct sum_buf b = build(1000000, 5);
	struct psum *p;
	struct digest_info info;
	const char *why = "";

	cr_assert_eq(b.len, 128 + 625000);
	/* the control block, field by field */
	const uint8_t want[22] = {0, 5, 0, 3, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 3,
	    0, 0, 0, 0, 0, 0x09, 0x89, 0x68, 5, 4};
	cr_assert(memcmp(b.p, want, sizeof(want)) == 0);
	for (int i = 22; i < 128; i++)
		cr_assert_eq(b.p[i], 0);
	/* PROTOCOLS.md vector: position 3389683 set for squid-cache.org */
	cr_assert(b.p[128 + (3389683 >> 3)] & (1 << (3389683 & 7)));
	cr_assert_eq(digest_parse(b.p, b.len, &p, &info, &why), 0, "%s", why);
	cr_assert_eq(info.capacity, 1000000);
	cr_assert_eq(info.count, 3);
	for (int i = 0; i < 3; i++) {
		struct sumkey k;
		md5_key(urls[i], &k);
		cr_assert(psum_contains(p, &k, 0), "%s", urls[i]);
	}
	cr_assert_eq(p->ones, 12);
	psum_free(&p);
	free(b.p);
}

Test(digest, squid_receiver_checks)
{
	struct { int off; uint8_t val; const char *why; } v[] = {
		{1, 6, "version"},           /* current 6, required 3: fine */
		{3, 6, "version"},           /* required 6 > 5 */
		{1, 2, "version"},           /* current 2 < 3 */
		{21, 6, "hash function"},
		{20, 6, "mask size"},        /* bits per entry disagrees */
		{4, 0x80, "not positive"},   /* capacity negative */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct sum_buf b = build(1000, 8);
		struct psum *p = NULL;
		struct digest_info info;
		const char *why = "";
		b.p[v[i].off] = v[i].val;
		int rc = digest_parse(b.p, b.len, &p, &info, &why);
		if (i == 0) {
			cr_expect_eq(rc, 0, "a newer current version is fine");
		} else {
			cr_expect_lt(rc, 0, "case %zu accepted", i);
			cr_expect(strstr(why, v[i].why) != NULL, "case %zu: %s",
			    i, why);
			cr_expect_null(p);
		}
		psum_free(&p);
		free(b.p);
	}
	/* lengths */
	struct sum_buf b = build(1000, 8);
	struct psum *p;
	struct digest_info info;
	const char *why;
	cr_assert_lt(digest_parse(b.p, b.len - 1, &p, &info, &why), 0);
	cr_assert_lt(digest_parse(b.p, 100, &p, &info, &why), 0);
	sum_buf_put(&b, "x", 1);
	cr_assert_lt(digest_parse(b.p, b.len, &p, &info, &why), 0);
	cr_assert(strstr(why, "longer") != NULL);
	/* a mask more than 65 % full is refused */
	memset(b.p + 128, 0xff, 1000 * 8 / 8 * 7 / 10);
	cr_assert_lt(digest_parse(b.p, b.len - 1, &p, &info, &why), 0);
	cr_assert(strstr(why, "65") != NULL, "%s", why);
	free(b.p);
}

Test(digest, build_refuses_mismatched_filters)
{
	struct cbf *f = cbf_new(SUM_XXH3, 8000, 4);
	struct sum_buf b = {0};

	cr_assert_eq(digest_build(f, 1000, 8, &b), SUM_ERR_PARAMS);
	cbf_free(&f);
	f = cbf_new(SUM_SQUID_MD5, 8008, 4);
	cr_assert_eq(digest_build(f, 1000, 8, &b), SUM_ERR_PARAMS);
	cbf_free(&f);
}
