/*
 * A node of four workers under a load that changes the cache under it:
 * 200 keep-alive clients over 500 hot URLs in a cache too small for
 * them (inserts, evictions), fresh for 1 s (revalidations: 304s), PURGEd
 * now and then, every byte of every answer checked against its URL's.
 * And two such nodes sharing summaries, each a peer of the other. Run
 * by the end-to-end suite for SUMCACHE_STRESS_SECONDS (default 8), and
 * by tests/tsan-check.sh for 30 s against the TSan daemon.
 */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#define CLIENTS 200
#define URLS 500
#define BUF 32768
/* what the node may hold at most: 64 MB, and with AddressSanitizer's
 * shadow and quarantine (16 MB in tests/run.sh) beside it, 128 MB */
#ifdef __SANITIZE_ADDRESS__
#define RSS_BOUND_KB (128 * 1024)
#else
#define RSS_BOUND_KB (64 * 1024)
#endif

struct conn {
	int fd;
	unsigned url;      /* asked for */
	bool purge;        /* a PURGE is out */
	char buf[BUF];
	size_t len;
};

/* /obj/wNNN's size: 1 to 12 KB, by its number */
static size_t
size_of(unsigned url)
{
	return 1000 + (url * 2654435761u) % 11000;
}

/* max_age 0: mixed, a quarter of the URLs fresh for 1 s (revalidated),
 * the rest for 600 s (claimed by the summary) */
static void
ask(const struct env *e, struct conn *c, unsigned *seed, int max_age)
{
	char req[512];
	*seed = *seed * 1103515245u + 12345u;
	unsigned r = (*seed >> 8) % 1000;

	c->url = (*seed >> 4) % URLS;
	c->purge = r < 3;
	if (max_age == 0)
		max_age = c->url % 4 == 0 ? 1 : 600;
	int n = snprintf(req, sizeof(req), "%s http://127.0.0.1:%d/obj/w%u?"
	    "size=%zu&max_age=%d&etag=1 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
	    "\r\n", c->purge ? "PURGE" : "GET", e->oport, c->url,
	    size_of(c->url), max_age, e->oport);
	c->len = 0;
	cr_assert(send(c->fd, req, (size_t)n, MSG_NOSIGNAL) == n);
}

/* A whole response in c->buf: 1 when right, 0 when wrong, -1 when more
 * is to come. */
static int
judge(struct conn *c)
{
	const char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (end == NULL)
		return -1;
	const char *cl = strcasestr(c->buf, "\r\nContent-Length:");
	size_t body = cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
	size_t head = (size_t)(end + 4 - c->buf);
	if (c->len < head + body)
		return -1;
	if (c->purge)
		return strncmp(c->buf, "HTTP/1.1 200", 12) == 0 ||
		    strncmp(c->buf, "HTTP/1.1 404", 12) == 0;
	char name[16];
	int nl = snprintf(name, sizeof(name), "w%u", c->url);
	if (strncmp(c->buf, "HTTP/1.1 200", 12) != 0 ||
	    body != size_of(c->url))
		return 0;
	for (size_t i = 0; i < body; i++)
		if (c->buf[head + i] != name[i % (size_t)nl])
			return 0;
	return 1;
}

/* What a churn saw. */
struct tally {
	long right, wrong, purges, rss_max;
};

/* CLIENTS keep-alive clients, client i on ports[i % nports], for ms,
 * asking for objects fresh for max_age seconds (0: mixed, ask's): every
 * answer judged; the largest RSS of pids[0..npids) noted. */
static void
churn(const struct env *e, const int *ports, int nports, const pid_t *pids,
    int npids, int max_age, long ms, struct tally *t)
{
	static struct conn c[CLIENTS];
	struct pollfd p[CLIENTS];
	unsigned seed = 7;

	memset(t, 0, sizeof(*t));
	harness_raise_nofile();
	for (int i = 0; i < CLIENTS; i++) {
		c[i].fd = harness_connect(ports[i % nports]);
		cr_assert(c[i].fd >= 0);
		ask(e, &c[i], &seed, max_age);
	}
	long t0 = harness_now_ms(), next_rss = t0;
	while (harness_now_ms() - t0 < ms) {
		for (int i = 0; i < CLIENTS; i++)
			p[i] = (struct pollfd){c[i].fd, POLLIN, 0};
		cr_assert(poll(p, CLIENTS, 5000) > 0, "no answer in 5 s");
		for (int i = 0; i < CLIENTS; i++) {
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct conn *k = &c[i];
			ssize_t n = recv(k->fd, k->buf + k->len,
			    BUF - k->len - 1, 0);
			cr_assert(n > 0, "connection %d closed: %s", i,
			    n < 0 ? strerror(errno) : "EOF");
			k->len += (size_t)n;
			k->buf[k->len] = '\0';
			int v = judge(k);
			if (v < 0)
				continue;
			if (k->purge)
				t->purges++;
			else if (v == 1)
				t->right++;
			else if (t->wrong++ == 0)
				fprintf(stderr, "wrong answer for w%u: %.*s\n",
				    k->url, 200, k->buf);
			ask(e, k, &seed, max_age);
		}
		if (harness_now_ms() >= next_rss) {
			for (int j = 0; j < npids; j++) {
				long rss = proc_rss_kb(pids[j]);
				t->rss_max = rss > t->rss_max ? rss :
				    t->rss_max;
			}
			next_rss += 500;
		}
	}
	for (int i = 0; i < CLIENTS; i++)
		close(c[i].fd);
}

static long
stress_ms(void)
{
	const char *secs = getenv("SUMCACHE_STRESS_SECONDS");

	return (secs != NULL ? atol(secs) : 8) * 1000;
}

Test(workers, four_workers_serve_only_right_bodies_while_the_cache_churns,
    .timeout = 180)
{
	struct env e;
	const char *opts[] = {"workers=4", "cache_mem=3MB",
	    "max_memory_object_size=64KB", "inflight_mem=16MB", NULL};
	long ms = stress_ms();
	struct tally t;

	env_start(&e, opts);
	churn(&e, &e.pport, 1, &e.proxy, 1, 1, ms, &t);
	double evicted = proxy_metric(&e, "sumcache_evictions_total");
	double reval = proxy_metric(&e,
	    "sumcache_revalidations_total{result=\"unmodified\"}");
	double bytes = proxy_metric(&e, "sumcache_cache_bytes");
	printf("figure: 4 workers, %d clients, %d URLs, %ld s: %ld right, "
	    "%ld wrong, %ld purges, %.0f evictions, %.0f revalidations, "
	    "cache %.0f of 3145728 bytes, RSS at most %ld kB\n", CLIENTS,
	    URLS, ms / 1000, t.right, t.wrong, t.purges, evicted, reval,
	    bytes, t.rss_max);
	cr_assert_eq(t.wrong, 0);
	cr_assert_gt(t.right, 1000);
	cr_assert_gt(t.purges, 10);
	cr_assert_gt(evicted, 100, "the cache did not churn");
	cr_assert_gt(reval, 10, "nothing was revalidated");
	cr_assert_leq(bytes, 3 * 1024 * 1024);
	/* the cache, the copies in flight, 200 connections' buffers, and
	 * the heap's slack: far below what a leak under load would reach
	 * (not for another daemon: TSan's shadow memory is its own) */
	if (getenv("SUMCACHE_UNDER_TEST") == NULL)
		cr_assert_lt(t.rss_max, RSS_BOUND_KB, "RSS %ld kB", t.rss_max);
	env_stop(&e);
}

TestSuite(workers_cluster, .init = cluster_suite_up,
    .fini = cluster_suite_down);

/*
 * The same load on two nodes of four workers each sharing summaries,
 * each with a cache_dir too small for the URLs, most objects fresh long
 * enough to be claimed and a quarter revalidated: half the clients on
 * each. Every worker's inserts and evictions change its node's summary
 * and its disk, every worker's misses follow the peer's claims, and a
 * claimed copy is often evicted (on any worker, from memory or from the
 * disk) while the peer's request for it is on its way: a false hit,
 * which goes to the origin. Every body must still be right.
 */
Test(workers_cluster, two_nodes_of_four_workers_with_disks_follow_each_others_claims,
    .timeout = 180)
{
	const char *opts[] = {"workers=4", "cache_mem=3MB",
	    "max_memory_object_size=64KB", "inflight_mem=16MB", NULL};
	long ms = stress_ms();
	struct tally t;

	cluster_init(&CE, &CL, 2, opts, NULL);
	CL.cache_dir_size = "4MB";
	for (int i = 0; i < CL.n; i++)
		node_start(&CE, &CL, i);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	int ports[2] = {a->port, b->port};
	pid_t pids[2] = {a->pid, b->pid};
	/* most fresh long enough for a peer: claimed (summary/publisher.h);
	 * the others revalidated */
	churn(&CE, ports, 2, pids, 2, 0, ms, &t);
	double remote = 0, false_hits = 0, served = 0, evicted = 0, pubs = 0;
	double disk_hits = 0, disk_gone = 0, reval = 0;
	for (int i = 0; i < 2; i++) {
		const struct node *n = &CL.nodes[i];
		remote += node_metric(n, "sumcache_requests_total{result=\""
		    "remote_hit\"}");
		false_hits += node_metric(n, "sumcache_peer_false_hits_total");
		served += node_metric(n, "sumcache_peer_requests_served_total"
		    "{result=\"hit\"}");
		evicted += node_metric(n, "sumcache_evictions_total");
		pubs += node_metric(n, "sumcache_summary_publications_total"
		    "{kind=\"delta\"}");
		disk_hits += node_metric(n, "sumcache_hits_total{tier="
		    "\"disk\"}");
		disk_gone += node_metric(n, "sumcache_disk_segments_evicted"
		    "_total");
		reval += node_metric(n, "sumcache_revalidations_total{result="
		    "\"unmodified\"}");
	}
	printf("figure: 2 nodes of 4 workers, %d clients, %d URLs, %ld s: "
	    "%ld right, %ld wrong, %ld purges, %.0f remote hits, %.0f false "
	    "hits, %.0f peer requests served from cache, %.0f evictions, "
	    "%.0f disk hits, %.0f disk segments evicted, %.0f revalidations, "
	    "%.0f deltas published, RSS at most %ld kB\n", CLIENTS, URLS,
	    ms / 1000, t.right, t.wrong, t.purges, remote, false_hits, served,
	    evicted, disk_hits, disk_gone, reval, pubs, t.rss_max);
	cr_assert_eq(t.wrong, 0);
	cr_assert_gt(t.right, 1000);
	cr_assert_gt(remote, 50, "the nodes did not follow each other's "
	    "claims");
	/* bounds a slow build's run passes too (AddressSanitizer's: a
	 * quarter of the requests) */
	cr_assert_gt(evicted, 50, "the caches did not churn");
	cr_assert_gt(disk_hits, 50, "the disks served nothing");
	cr_assert_geq(disk_gone, 1, "the disks did not churn");
	cr_assert_gt(reval, 10, "nothing was revalidated");
	cr_assert_gt(pubs, 10, "the summaries did not change");
	if (getenv("SUMCACHE_UNDER_TEST") == NULL)
		cr_assert_lt(t.rss_max, RSS_BOUND_KB, "RSS %ld kB", t.rss_max);
}
