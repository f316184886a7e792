/*
 * Host patterns (proxy/http/hostpat.c), as tls_intercept and
 * tls_no_intercept read them: what each form matches, and the patterns
 * refused when read.
 */
#include <criterion/criterion.h>

#include "hostpat.h"

static struct hostpats hp;

static void
clear(void)
{
	hostpat_clear(&hp);
}

TestSuite(hostpat, .fini = clear);

static void
add(const char *text)
{
	const char *why = NULL;

	cr_assert_eq(hostpat_add(&hp, text, &why), 0, "%s: %s", text, why);
}

Test(hostpat, star_matches_every_host)
{
	add("*");
	cr_assert(hostpat_match(&hp, "deb.debian.org"));
	cr_assert(hostpat_match(&hp, "127.0.0.1"));
}

Test(hostpat, wildcard_matches_names_below_not_the_domain)
{
	add("*.Debian.org.");
	cr_assert(hostpat_match(&hp, "deb.debian.org"));
	cr_assert(hostpat_match(&hp, "a.b.DEBIAN.ORG"));
	cr_assert(hostpat_match(&hp, "deb.debian.org."));
	cr_assert_not(hostpat_match(&hp, "debian.org"));
	cr_assert_not(hostpat_match(&hp, "notdebian.org"));
	cr_assert_not(hostpat_match(&hp, "debian.org.evil.example"));
}

Test(hostpat, exact_name_matches_itself_only)
{
	add("registry.npmjs.org");
	add("::1");
	cr_assert(hostpat_match(&hp, "Registry.NPMJS.org"));
	cr_assert_not(hostpat_match(&hp, "x.registry.npmjs.org"));
	cr_assert_not(hostpat_match(&hp, "registry.npmjs.org.evil"));
	cr_assert(hostpat_match(&hp, "::1"));
	cr_assert_not(hostpat_match(&hp, "deb.debian.org"));
}

Test(hostpat, malformed_patterns_are_refused)
{
	const char *bad[] = {"", "*debian.org", "deb.*.org", "*.", ".x.org",
	    "a b.org", "x.org/path", "**"};
	const char *why;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		cr_assert_eq(hostpat_add(&hp, bad[i], &why), -1,
		    "'%s' was taken", bad[i]);
		cr_assert_not_null(why);
	}
	cr_assert_eq(hp.n, 0);
}
