/*
 * SIGHUP reloads, end to end: a peer added to the file joins a running
 * node, which then remote-hits it, and leaves again; the cache stays
 * through every reload; a directive that needs a restart is named and
 * kept; a file that fails its checks, or a peer under the node's own
 * name, is refused whole; a new allow list takes effect at once.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct env T;

/* A peer line for a node that is never there: sharing summary needs
 * one peer at least. */
#define NOBODY "peer = [\"c 127.0.0.2:9\"];"

/* Node a's file: its lines, then extra (NULL: none). */
static void
write_conf(const char *path, const char *allow, const char *extra)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f, "# node a, rewritten by the test\n");
	fprintf(f, "allow = [\"%s\"];\n", allow);
	fprintf(f, "peer_timeout = \"2s\";\n");
	if (extra != NULL)
		fprintf(f, "%s\n", extra);
	cr_assert_eq(fclose(f), 0);
}

static void
reload(const struct node *nd, const char *result, double n)
{
	char series[96];

	snprintf(series, sizeof(series),
	    "sumcache_reloads_total{result=\"%s\"}", result);
	cr_assert_eq(kill(nd->pid, SIGHUP), 0);
	double got = node_wait_metric(nd, series, n, 5000);
	cr_assert_eq(got, n, "%s: %g, wanted %g", series, got, n);
}

static long
status_of(const struct node *nd, const char *url)
{
	struct resp r;

	node_get(nd, url, &r);
	long st = r.status;
	resp_free(&r);
	return st;
}

Test(reload, peers_join_and_leave_live_and_the_cache_stays, .timeout = 120)
{
	struct cluster cl;
	char conf[320], u0[160], u1[160], peer[200];

	origin_start(&T);
	cluster_init(&T, &cl, 2, NULL, NULL);
	struct node *a = &cl.nodes[0], *b = &cl.nodes[1];
	snprintf(conf, sizeof(conf), "%s/a.conf", T.dir);
	write_conf(conf, "127.0.0.0/8", NOBODY);
	a->conf_file = conf;
	node_start(&T, &cl, 0);
	node_start(&T, &cl, 1);
	snprintf(u0, sizeof(u0), "http://127.0.0.1:%d/obj/a?size=3000"
	    "&max_age=600", T.oport);
	snprintf(u1, sizeof(u1), "http://127.0.0.1:%d/obj/b?size=3000"
	    "&max_age=600", T.oport);
	cr_assert_eq(status_of(a, u0), 200);
	cr_assert_eq(status_of(b, u1), 200);
	cr_assert_eq(node_metric(a, "sumcache_peer_up{peer=\"b\"}"), -1,
	    "a has no peer yet");

	/* b joins, c leaves; cache_mem wants a restart: named, kept */
	snprintf(peer, sizeof(peer), "peer = [\"b %s:%d\"];\n"
	    "cache_mem = \"8MB\";", b->host, b->port);
	write_conf(conf, "127.0.0.0/8", peer);
	reload(a, "applied", 1);
	cr_assert(harness_file_has(a->out, "cache_mem cannot change without "
	    "a restart", NULL, 2000), "the kept directive is not named");
	cr_assert(harness_file_has(a->out, "peer c", "no longer configured",
	    2000));
	cr_assert_eq(node_wait_metric(a, "sumcache_peer_up{peer=\"b\"}", 1,
	    10000), 1, "b never came up at a");
	cr_assert_geq(node_wait_metric(a,
	    "sumcache_peer_summary_entries{peer=\"b\"}", 1, 10000), 1);
	double remote = node_metric(a,
	    "sumcache_requests_total{result=\"remote_hit\"}");
	cr_assert_eq(status_of(a, u1), 200);
	cr_assert_eq(node_metric(a,
	    "sumcache_requests_total{result=\"remote_hit\"}"), remote + 1,
	    "a did not ask b, the peer it was given by the reload");
	cr_assert_eq(origin_count(&T, "/obj/b", NULL), 1);
	/* what a cached before the reload is still a local hit */
	double local = node_metric(a,
	    "sumcache_requests_total{result=\"local_hit\"}");
	cr_assert_eq(status_of(a, u0), 200);
	cr_assert_eq(node_metric(a,
	    "sumcache_requests_total{result=\"local_hit\"}"), local + 1);
	cr_assert_eq(origin_count(&T, "/obj/a", NULL), 1);

	/* a file that fails -t is refused whole, with its line */
	write_conf(conf, "127.0.0.0/8", "idle_timeout = \"soon\";");
	reload(a, "refused", 1);
	cr_assert(harness_file_has(a->out, "reload refused", "a.conf:4",
	    2000), "the refusal does not give the file and line");
	cr_assert_eq(node_metric(a, "sumcache_peer_up{peer=\"b\"}"), 1,
	    "the refused file dropped b");
	/* so is a peer line under this node's own name */
	write_conf(conf, "127.0.0.0/8", "peer = [\"a 127.0.0.2:9\"];");
	reload(a, "refused", 2);
	cr_assert(harness_file_has(a->out, "reload refused",
	    "peer a has this node's own name", 2000));
	cr_assert_eq(node_metric(a, "sumcache_peer_up{peer=\"b\"}"), 1,
	    "the refused file dropped b");

	/* b leaves, c is back */
	write_conf(conf, "127.0.0.0/8", NOBODY);
	reload(a, "applied", 2);
	cr_assert_eq(node_metric(a, "sumcache_peer_up{peer=\"b\"}"), -1,
	    "b is still a peer of a");
	cr_assert(harness_file_has(a->out, "peer b", "no longer configured",
	    2000));

	/* a new allow list: loopback is no longer a client */
	write_conf(conf, "10.0.0.0/8", NOBODY);
	cr_assert_eq(kill(a->pid, SIGHUP), 0);
	long st = 0;
	for (int i = 0; i < 100 && (st = status_of(a, u0)) != 403; i++)
		usleep(50 * 1000);
	cr_assert_eq(st, 403, "still served after allow changed: %ld", st);
	st = status_of(b, u0);
	cr_assert_eq(st, 200, "b's own allow is untouched: %ld", st);
	cluster_stop(&cl);
	env_stop(&T);
}
