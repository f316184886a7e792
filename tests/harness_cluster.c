/*
 * Test harness, clusters: several real nodes with peers, a peer that lies
 * (test-peer), and the waits on their metrics that a cluster test needs.
 * The single node, the origin and the requests are harness.c's; both are
 * declared in harness.h.
 */
#include "harness.h"
#include "testrun.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

pid_t
fakepeer_start(const struct env *e, const struct cluster *cl,
    const char *name, const char *objects, int delay_ms, long answer_bytes,
    int *port)
{
	return fakepeer_start_tls(e, cl, name, objects, delay_ms, answer_bytes,
	    NULL, NULL, port);
}

pid_t
fakepeer_start_tls(const struct env *e, const struct cluster *cl,
    const char *name, const char *objects, int delay_ms, long answer_bytes,
    const char *cert, const char *key, int *port)
{
	char portarg[16], delay[16], answer[24], out[320];

	*port = harness_free_port();
	snprintf(portarg, sizeof(portarg), "%d", *port);
	snprintf(delay, sizeof(delay), "%d", delay_ms);
	snprintf(answer, sizeof(answer), "%ld", answer_bytes);
	snprintf(out, sizeof(out), "%s/%s.out", e->dir, name);
	char *argv[] = {PEER_BIN, portarg, (char *)cl->key_file, (char *)name,
	    (char *)objects, delay, answer, (char *)cert, (char *)key, NULL};
	pid_t pid = harness_spawn(argv, out);
	cr_assert(harness_wait_port(*port, 5000), "test-peer did not start");
	return pid;
}

struct node *
node_with_fakepeer(const char *objects, int delay_ms, long answer_bytes,
    const char *const *more, pid_t *z)
{
	int zport;

	cluster_init(&CE, &CL, 1, NULL, NULL);
	return node_with_fakepeer_tls(objects, delay_ms, answer_bytes, NULL,
	    NULL, more, z, &zport);
}

struct node *
node_with_fakepeer_tls(const char *objects, int delay_ms, long answer_bytes,
    const char *cert, const char *key, const char *const *more, pid_t *z,
    int *zport)
{
	static char zpeer[64];
	static const char *opts[16];
	int n = 0;

	*z = fakepeer_start_tls(&CE, &CL, "z", objects, delay_ms, answer_bytes,
	    cert, key, zport);
	snprintf(zpeer, sizeof(zpeer), "peer=z 127.0.0.1:%d", *zport);
	opts[n++] = zpeer;
	for (; more != NULL && *more != NULL && n < 15; more++)
		opts[n++] = *more;
	opts[n] = NULL;
	CL.opts = opts;
	node_start(&CE, &CL, 0);
	return &CL.nodes[0];
}

void
node_start(struct env *e, struct cluster *cl, int i)
{
	struct node *nd = &cl->nodes[i];
	static char opt[64][400];
	char *argv[160];
	int n = 0, k = 0;

	argv[n++] = (char *)harness_sumcache();
	argv[n++] = "-o";
	argv[n++] = (char *)harness_workers_opt();
#define OPT(...) do {                                                         \
		snprintf(opt[k], sizeof(opt[k]), __VA_ARGS__);                 \
		argv[n++] = "-o";                                              \
		argv[n++] = opt[k++];                                          \
	} while (0)
	OPT("node_name=%s", nd->name);
	OPT("http_listen=%s:%d", nd->host, nd->port);
	OPT("access_log=%s", nd->log);
	OPT("sharing=%s", cl->icp ? "icp" : "summary");
	OPT("cluster_key_file=%s", cl->key_file);
	if (cl->icp)
		OPT("icp_listen=%s:%d", nd->host, nd->icp_port);
	if (nd->conf_file != NULL) {
		argv[n++] = "-c";
		argv[n++] = (char *)nd->conf_file;
	}
	for (int j = 0; j < cl->n && cl->peer_dns == NULL &&
	    nd->conf_file == NULL; j++)
		if (j != i)
			OPT("peer=%s %s:%d icp=%d %s", cl->nodes[j].name,
			    cl->nodes[j].host, cl->nodes[j].port,
			    cl->nodes[j].icp_port, cl->peer_flags ?
			    cl->peer_flags : "");
	if (cl->peer_dns != NULL)
		OPT("peer_dns=%s %s", cl->peer_dns, cl->peer_flags ?
		    cl->peer_flags : "");
	if (cl->cache_dir_size != NULL)
		OPT("cache_dir=%s/cache-%s %s", e->dir, nd->name,
		    cl->cache_dir_size);
#undef OPT
	for (const char *const *o = cl->opts; o && *o && n < 150; o++) {
		argv[n++] = "-o";
		argv[n++] = (char *)*o;
	}
	argv[n] = NULL;
	nd->pid = harness_spawn(argv, nd->out);
	cr_assert(harness_wait_addr(nd->host, nd->port, 10000), "node %s did "
	    "not start; see %s", nd->name, nd->out);
}

void
cluster_start(struct env *e, struct cluster *cl, int n,
    const char *const *opts, const char *peer_flags)
{
	cluster_init(e, cl, n, opts, peer_flags);
	for (int i = 0; i < n; i++)
		node_start(e, cl, i);
}

void
cluster_init(struct env *e, struct cluster *cl, int n,
    const char *const *opts, const char *peer_flags)
{
	cr_assert(n <= CLUSTER_MAX);
	memset(cl, 0, sizeof(*cl));
	cl->n = n;
	cl->opts = opts;
	cl->peer_flags = peer_flags;
	snprintf(cl->key_file, sizeof(cl->key_file), "%s/cluster.key",
	    e->dir);
	FILE *f = fopen(cl->key_file, "w");
	cr_assert_not_null(f);
	fprintf(f, "test-cluster-key-%d-0123456789abcdef\n", getpid());
	fclose(f);
	for (int i = 0; i < n; i++) {
		struct node *nd = &cl->nodes[i];
		char name = (char)('a' + i);
		nd->port = harness_free_port();
		nd->icp_port = harness_free_port();
		snprintf(nd->host, sizeof(nd->host), "127.0.0.1");
		snprintf(nd->name, sizeof(nd->name), "%c", name);
		snprintf(nd->log, sizeof(nd->log), "%s/%c.log", e->dir, name);
		snprintf(nd->out, sizeof(nd->out), "%s/%c.out", e->dir, name);
	}
}

void
node_stop(struct node *nd)
{
	if (nd->pid <= 0)
		return;
	int st = harness_stop(nd->pid, SIGTERM, 15000);
	cr_expect(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "node %s exited badly (status %d); see %s", nd->name, st, nd->out);
	nd->pid = 0;
}

void
cluster_stop(struct cluster *cl)
{
	for (int i = 0; i < cl->n; i++)
		node_stop(&cl->nodes[i]);
}

struct env CE;
struct cluster CL;

void
cluster_suite_up(void)
{
	origin_start(&CE);
}

void
cluster_suite_down(void)
{
	cluster_stop(&CL);
	env_stop(&CE);
}

void
node_get(const struct node *nd, const char *url, struct resp *r)
{
	http_request_at(nd->host, nd->port, "GET", url, NULL, NULL, 0, false,
	    r);
}

double
node_metric(const struct node *nd, const char *series)
{
	return metric_at(nd->host, nd->port, series);
}

double
node_wait_metric(const struct node *nd, const char *series, double want,
    int ms)
{
	return metric_wait_at(nd->host, nd->port, series, want, ms);
}

/* What from's summary is now: its epoch, sequence, entries and pending
 * changes, in one number each. */
static void
summary_state(const struct node *from, double v[4])
{
	v[0] = node_metric(from, "sumcache_summary_epoch");
	v[1] = node_metric(from, "sumcache_summary_sequence");
	v[2] = node_metric(from, "sumcache_summary_entries");
	v[3] = node_metric(from, "sumcache_summary_pending");
}

void
node_wait_synced(const struct node *from, const struct node *to)
{
	double was[4], now[4];

	/* with workers, a response may reach its client before the worker
	 * that fetched it has stored it, and a change is published at
	 * home's next loop turn: the summary is taken once it reads the
	 * same twice 25 ms apart */
	summary_state(from, now);
	for (int waited = 0; waited < 2000; waited += 25) {
		memcpy(was, now, sizeof(was));
		usleep(25000);
		summary_state(from, now);
		if (memcmp(was, now, sizeof(was)) == 0)
			break;
	}
	double epoch = now[0], seq = now[1];

	/* a loaded machine (the suites run two at a time, some nodes with
	 * four workers) may hold a push back a few seconds */
	for (int waited = 0; waited < 10000; waited += 20) {
		if (node_peer_metric(to, "sumcache_peer_summary_epoch",
		    from->name) == epoch && node_peer_metric(to,
		    "sumcache_peer_summary_sequence", from->name) >= seq)
			return;
		usleep(20000);
	}
	cr_assert_fail("%s never received %s's summary %g/%g", to->name,
	    from->name, epoch, seq);
}

double
node_sent(const struct node *nd, const char *type, const char *peer)
{
	char series[200];

	snprintf(series, sizeof(series), "sumcache_interproxy_messages_total"
	    "{direction=\"sent\",type=\"%s\",peer=\"%s\"}", type, peer);
	return node_metric(nd, series);
}

double
node_peer_metric(const struct node *nd, const char *family, const char *peer)
{
	char series[200];

	snprintf(series, sizeof(series), "%s{peer=\"%s\"}", family, peer);
	return node_metric(nd, series);
}
