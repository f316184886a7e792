#include "sumtest.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static uint64_t state = 0x9e3779b97f4a7c15ull;

uint64_t
test_rand(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

void
test_key(uint64_t id, struct sumkey *k)
{
	static struct sumkey_hasher *h;
	char url[64];

	if (h == NULL)
		h = sumkey_hasher_new(SUM_XXH3);
	cr_assert_not_null(h);
	int n = snprintf(url, sizeof(url), "http://host%llu.example/o/%llu",
	    (unsigned long long)(id % 977), (unsigned long long)id);
	sumkey_make(h, SUM_METHOD_GET, url, (size_t)n, k);
}

struct http_head
test_request(const char *fields)
{
	static char buf[4096];
	struct http_head h;
	const char *why;
	struct http_limits lim = {4096, 4096, 100};

	snprintf(buf, sizeof(buf), "GET http://a/ HTTP/1.1\r\nHost: a\r\n%s"
	    "\r\n", fields);
	cr_assert_eq(http_parse_request(buf, strlen(buf), &lim, &h, &why), 0,
	    "%s", why);
	return h;
}
