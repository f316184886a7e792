/*
 * What the test runner does around each test, in every test binary:
 *
 *   - Scratch directories that do not outlive a passing test. The runner
 *     makes one directory for the run, /tmp/sumcache-tests.XXXXXX, and
 *     each test writes under ROOT/SUITE.TEST (its logs, caches, configs,
 *     a Squid's files). A test that passes has its directory removed; one
 *     that fails, crashes or times out keeps it, and the run ends by
 *     saying where (SUMCACHE_TEST_KEEP=1 keeps every test's). So a green
 *     run leaves nothing in /tmp, and a red one leaves what shows why.
 *     (Directories are named by test: a parameterized test's instances
 *     would share one.)
 *   - A teardown that fails fails its test. Criterion settles a test's
 *     result before the suite's .fini runs and ignores what fails there,
 *     but that is where the harness stops the nodes and checks that each
 *     exited cleanly (no crash, no sanitizer report): such a test is
 *     reported as failed and counted so in the run's synthesis and exit
 *     status.
 */
#ifndef TESTRUN_H
#define TESTRUN_H

/* This test's directory, made on first use (0755, for a Squid that runs
 * as another user). Static storage; fails the test if it cannot be made. */
const char *scratch_dir(void);

#endif
