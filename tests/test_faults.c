/*
 * Faults a node must absorb without a wrong answer or a lost client, end
 * to end on the real binary: a peer that floods its answers, lies in its
 * summary or stalls; an invalidation replayed after a restart. The disk
 * damaged while the node runs is test_damage.c's; an origin failing under
 * collapsed forwarding is test_collapse.c's; connections at the limit and
 * client aborts are test_ops.c's.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static pid_t liar;

static void
down(void)
{
	if (liar > 0)
		harness_stop(liar, SIGTERM, 5000);
	liar = 0;
	cluster_suite_down();
}

TestSuite(faults, .init = cluster_suite_up, .fini = down, .timeout = 90);

static long
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Node a with one peer, z, the fake peer behaving as told. */
static struct node *
node_with_liar(const char *objects, int delay_ms, long answer_bytes,
    const char *const *more)
{
	static char zpeer[64];
	static const char *opts[16];
	int zport, n = 0;

	cluster_init(&CE, &CL, 1, NULL, NULL);
	liar = fakepeer_start(&CE, &CL, "z", objects, delay_ms, answer_bytes,
	    &zport);
	snprintf(zpeer, sizeof(zpeer), "peer=z 127.0.0.1:%d", zport);
	opts[n++] = zpeer;
	for (; more != NULL && *more != NULL && n < 15; more++)
		opts[n++] = *more;
	opts[n] = NULL;
	CL.opts = opts;
	node_start(&CE, &CL, 0);
	return &CL.nodes[0];
}

/* A peer's answer to a push is a status: a body, however large, reaches
 * neither the node's stdout (where the access log goes by default) nor
 * its log; the peer is marked down for it. */
Test(faults, a_peer_flooding_its_answers_writes_nothing_of_ours)
{
	struct node *a = node_with_liar("false", 0, 20L << 20, NULL);

	/* z comes up at its first pull (its summary is validly signed), and
	 * is sent our full summary: z answers with 20 MB */
	double downs = node_wait_metric(a,
	    "sumcache_peer_downs_total{peer=\"z\"}", 1, 4000);
	cr_expect(!harness_file_has(a->out, "forged.example", NULL, 0),
	    "the peer's answer reached the node's output");
	cr_expect(!harness_file_has(a->log, "forged.example", NULL, 0),
	    "the peer's answer reached the access log");
	cr_expect_lt(file_size(a->out), 64 * 1024, "the node's output grew "
	    "to %ld bytes", file_size(a->out));
	cr_assert_geq(downs, 1, "the push with a 20 MB answer did not fail");
	cr_assert(harness_file_has(a->out, "peer z", "over 64 KB", 2000),
	    "the refusal is not logged");
}
