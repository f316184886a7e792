#include <criterion/criterion.h>
#include <string.h>

#include "url.h"

static void
norm(const char *in, const char *want)
{
	struct url u;
	const char *why = "";

	cr_assert_eq(url_parse_absolute(in, strlen(in), &u, &why), 0,
	    "%s: %s", in, why);
	cr_assert_str_eq(u.norm, want);
	url_clear(&u);
}

Test(url, normalization)
{
	norm("http://Example.COM/a/B?x=Y", "http://example.com/a/B?x=Y");
	norm("HTTP://example.com:80/", "http://example.com/");
	norm("http://example.com", "http://example.com/");
	norm("http://example.com?q", "http://example.com/?q");
	norm("http://example.com:8080/x", "http://example.com:8080/x");
	norm("https://example.com:443/x", "https://example.com/x");
	norm("http://example.com:/x", "http://example.com/x");
	norm("http://[::1]:8080/%7Ex", "http://[::1]:8080/%7Ex");
}

Test(url, parts)
{
	struct url u;
	const char *why;

	cr_assert_eq(url_parse_absolute("http://H:81/p?q", 15, &u, &why), 0);
	cr_assert_eq(u.port, 81);
	cr_assert_eq(u.host_len, 1);
	cr_assert_eq(u.norm[u.host_off], 'h');
	cr_assert_str_eq(u.norm + u.path_off, "/p?q");
	url_clear(&u);
}

Test(url, refusals)
{
	const char *bad[] = {"ftp://a/", "http://", "http://u@h/",
	    "http://h:99999/", "http://h:8x/", "http://h/#frag", "http://[zz]/",
	    "http://a b/", "/relative"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct url u;
		const char *why;
		cr_expect_lt(url_parse_absolute(bad[i], strlen(bad[i]), &u,
		    &why), 0, "%s accepted", bad[i]);
	}
}

Test(url, authority)
{
	struct url u;
	const char *why;

	cr_assert_eq(url_parse_authority("Host.example:443", 16, &u, &why), 0);
	cr_assert_str_eq(u.norm, "host.example:443");
	cr_assert_eq(u.port, 443);
	char host[64];
	url_host(&u, host, sizeof(host));
	cr_assert_str_eq(host, "host.example");
	url_clear(&u);
	/* an IPv6 address is the host without the URL's brackets */
	cr_assert_eq(url_parse_authority("[::1]:8443", 10, &u, &why), 0);
	url_host(&u, host, sizeof(host));
	cr_assert_str_eq(host, "::1");
	cr_assert_eq(u.port, 8443);
	url_clear(&u);
	cr_assert_lt(url_parse_authority("host", 4, &u, &why), 0);
}

Test(url, userinfo_is_named_as_such)
{
	const char *in[] = {"http://a:b@host/", "http://a@host:80/",
	    "http://a:@host/"};
	struct url u;
	const char *why = "";

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		cr_assert_lt(url_parse_absolute(in[i], strlen(in[i]), &u, &why),
		    0, "%s", in[i]);
		cr_expect_not_null(strstr(why, "userinfo"), "%s: %s", in[i],
		    why);
	}
}
