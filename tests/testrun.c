/*
 * The runner's side of testrun.h (report hooks run in Criterion's runner
 * process, whose workers inherit its environment) and the test's side.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "testrun.h"

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROOT_ENV "SUMCACHE_TEST_ROOT"

static char root[64];
static size_t teardowns_failed;

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	snprintf(root, sizeof(root), "/tmp/sumcache-tests.XXXXXX");
	if (mkdtemp(root) == NULL || chmod(root, 0755) != 0) {
		perror("sumcache tests: scratch directory");
		exit(2);
	}
	setenv(ROOT_ENV, root, 1);
}

static int
remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void
test_path(char *buf, size_t size, const char *top,
    const struct criterion_test *t)
{
	snprintf(buf, size, "%s/%s.%s", top, t->category, t->name);
}

/* After the suite's .fini: a passed test with a failed assertion failed
 * it there. */
ReportHook(POST_FINI)(struct criterion_test_stats *stats)
{
	char dir[PATH_MAX];
	/* (a skipped test did not fail: nothing of it is worth keeping) */
	bool passed = stats->test_status != CR_STATUS_FAILED &&
	    !stats->timed_out;

	if (passed && stats->failed_asserts > 0) {
		fprintf(stderr, "[FAIL] %s::%s: its teardown failed (the "
		    "assertion above)\n", stats->test->category,
		    stats->test->name);
		teardowns_failed++;
		passed = false;
	}
	if (!passed || getenv("SUMCACHE_TEST_KEEP") != NULL)
		return;
	test_path(dir, sizeof(dir), root, stats->test);
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs before Criterion prints the synthesis and picks the exit status
 * from these counts. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	stats->tests_passed -= teardowns_failed;
	stats->tests_failed += teardowns_failed;
	if (rmdir(root) != 0)
		fprintf(stderr, "sumcache tests: the files of the tests that "
		    "did not pass (or all, with SUMCACHE_TEST_KEEP) are kept "
		    "in %s\n", root);
}

const char *
scratch_dir(void)
{
	static char dir[PATH_MAX];
	const char *top = getenv(ROOT_ENV);

	cr_assert_not_null(top, "no " ROOT_ENV " from the runner");
	test_path(dir, sizeof(dir), top, criterion_current_test);
	cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST,
	    "mkdir %s: %s", dir, strerror(errno));
	return dir;
}
