#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sumkey.h"

/* PROTOCOLS.md section 2: Squid's own keys and positions, m = 5,000,000 */
Test(sumkey, squid_md5_vectors)
{
	struct { const char *url, *md5; uint64_t pos[4]; } v[] = {
		{"http://www.squid-cache.org/",
		    "69677C33244C8D776D1ED1210E07C120",
		    {3389683, 3996727, 736161, 389216}},
		{"http://www.oreilly.com/", "4DC8FAFB9B5B0A4C08D992E453059333",
		    {17083, 1434892, 3476644, 2874291}},
		{"ftp://ftp.ircache.net/", "F36FB917F5D687629A6E2BEB6BB569FF",
		    {4185367, 4477282, 911467, 2051263}},
	};
	struct sumkey_hasher *h = sumkey_hasher_new(SUM_SQUID_MD5);

	cr_assert_not_null(h);
	/* twice through: the reused MD5 context must not carry state */
	for (size_t i = 0; i < 2 * sizeof(v) / sizeof(v[0]); i++) {
		struct sumkey k;
		char hex[33];
		uint64_t pos[4];
		size_t t = i % (sizeof(v) / sizeof(v[0]));

		cr_assert_eq(sumkey_make(h, SUM_METHOD_GET, v[t].url,
		    strlen(v[t].url), &k), 0);
		for (int j = 0; j < 16; j++)
			snprintf(hex + 2 * j, 3, "%02X", k.bytes[j]);
		cr_expect_str_eq(hex, v[t].md5, "%s", v[t].url);
		sumkey_positions(SUM_SQUID_MD5, &k, 4, 5000000, pos);
		for (int j = 0; j < 4; j++)
			cr_expect_eq(pos[j], v[t].pos[j], "%s position %d",
			    v[t].url, j);
	}
	sumkey_hasher_free(&h);
}

Test(sumkey, xxh3_positions_in_range_and_distinct)
{
	struct sumkey_hasher *h = sumkey_hasher_new(SUM_XXH3);
	struct sumkey k;
	uint64_t pos[8];

	cr_assert_not_null(h);
	sumkey_make(h, SUM_METHOD_GET, "http://a/", 9, &k);
	sumkey_positions(SUM_XXH3, &k, 8, 1u << 20, pos);
	for (int i = 0; i < 8; i++) {
		cr_assert_lt(pos[i], 1u << 20);
		for (int j = 0; j < i; j++)
			cr_assert_neq(pos[i], pos[j], "positions %d and %d "
			    "meet", i, j);
	}
	struct sumkey k2;
	sumkey_make(h, SUM_METHOD_HEAD, "http://a/", 9, &k2);
	cr_assert(memcmp(k.bytes, k2.bytes, 16) == 0,
	    "xxh3 keys depend on the URL only");
	sumkey_hasher_free(&h);
}
