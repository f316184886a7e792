/*
 * Operator freshness rules (refresh_pattern), end to end: apt itself
 * fetching through a node that runs the shipped sample configuration, from
 * a mirror-like origin that sends no Cache-Control, Last-Modified or ETag.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"

#define APT_HELPER "/usr/lib/apt/apt-helper"

static struct env R;

static void
down(void)
{
	env_stop(&R);
}

TestSuite(refresh, .fini = down, .timeout = 60);

/* apt-helper download-file of path from the origin through the node into
 * R.dir/dest; cr_asserts that apt succeeded. */
static void
apt_download(const char *path, const char *dest)
{
	char proxy[64], target[400], out[400];

	snprintf(proxy, sizeof(proxy), "Acquire::http::Proxy=http://"
	    "127.0.0.1:%d", R.pport);
	snprintf(target, sizeof(target), "%s/%s", R.dir, dest);
	snprintf(out, sizeof(out), "%s/apt-%s.out", R.dir, dest);
	/* as root, so that it may write into the test's directory; the
	 * transfer is apt's own http method either way */
	char *argv[] = {APT_HELPER, "-o", proxy, "-o", "APT::Sandbox::User=root",
	    "download-file", env_url(&R, path), target, NULL};
	pid_t pid = harness_spawn(argv, out);
	int st = harness_stop(pid, 0, 20000);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "apt-helper failed (status %d); see %s", st, out);
}

static char *
slurp(const char *dir, const char *name, size_t *len)
{
	char p[400];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "rb");
	cr_assert_not_null(f, "%s missing", p);
	char *b = malloc(1 << 16);
	*len = fread(b, 1, 1 << 16, f);
	fclose(f);
	return b;
}

Test(refresh, apt_fetches_a_package_from_the_mirror_once)
{
	/* the origin's /obj/ sends no freshness or validators unless asked
	 * in a query, which would also hide the name's suffix from a rule */
	const char *deb = "/obj/debian/pool/main/h/hello/hello_2.10-3_amd64"
	    ".deb";
	const char *index = "/obj/debian/dists/bookworm/InRelease";

	/* the package's config, but for its disk tier, which is the
	 * system's (/var/cache/sumcache), not a test's */
	const char *const memory_only[] = {"cache_dir=", NULL};

	origin_start(&R);
	R.conf_file = SOURCE_DIR "/deploy/conf/standalone.conf";
	proxy_start(&R, memory_only);
	apt_download(deb, "one.deb");
	apt_download(deb, "two.deb");
	/* a package is immutable by name: the rule keeps it; an index
	 * changes under the same name and no rule covers it */
	apt_download(index, "InRelease.1");
	apt_download(index, "InRelease.2");
	cr_expect_eq(origin_count(&R, "hello_2.10-3_amd64.deb", NULL), 1);
	cr_expect_eq(origin_count(&R, "InRelease", NULL), 2);
	size_t l1, l2;
	char *b1 = slurp(R.dir, "one.deb", &l1), *b2 = slurp(R.dir, "two.deb",
	    &l2);
	cr_expect_eq(l1, 100);
	cr_expect(l1 == l2 && memcmp(b1, b2, l1) == 0, "the hit differs");
	free(b1);
	free(b2);
	cr_expect(harness_file_has(R.log, "TCP_MEM_HIT/200", "amd64.deb", 5000),
	    "no hit logged for the second download");
}

/* Without a rule, the same package is not kept: the origin gave the
 * cache nothing to serve it by (and the rule is what changed that). */
Test(refresh, without_a_rule_a_package_goes_to_the_mirror_each_time)
{
	const char *const opts[] = {
	    "refresh_pattern=-i \\.rpm$ 10 100% 20", NULL};
	const char *deb = "/obj/pool/hello_2.10-3_amd64.deb";

	env_start(&R, opts);
	apt_download(deb, "one.deb");
	apt_download(deb, "two.deb");
	cr_expect_eq(origin_count(&R, "hello_2.10-3_amd64.deb", NULL), 2);
	apt_download("/obj/el9/hello-2.10-1.x86_64.RPM", "one.rpm");
	apt_download("/obj/el9/hello-2.10-1.x86_64.RPM", "two.rpm");
	cr_expect_eq(origin_count(&R, "x86_64.RPM", NULL), 1);
}
