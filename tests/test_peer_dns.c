/*
 * peer_dns: a cluster that finds its members through DNS, as behind a
 * Kubernetes headless Service. Three sumcache nodes on one port and three
 * loopback addresses (127.0.0.2-4), a real DNS server of our own
 * (test-dns) that the test reprograms by rewriting its zone file.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct env env;
static struct cluster cl;
static pid_t dns_pid;
static char zone[320];

static void
dns_down(void)
{
	cluster_stop(&cl);
	harness_stop(dns_pid, SIGTERM, 5000);
	env_stop(&env);
}

TestSuite(peer_dns, .fini = dns_down, .timeout = 90);

/* The zone: peers.test lists the nodes whose bit is set in members. */
static void
write_zone(unsigned members)
{
	char tmp[340];

	snprintf(tmp, sizeof(tmp), "%s.new", zone);
	FILE *f = fopen(tmp, "w");
	cr_assert_not_null(f);
	fprintf(f, "other.test 127.0.0.9\n");
	for (int i = 0; i < cl.n; i++)
		if (members & (1u << i))
			fprintf(f, "peers.test %s\n", cl.nodes[i].host);
	fclose(f);
	cr_assert(rename(tmp, zone) == 0);  /* the server never reads half */
}

static double
peer_up(const struct node *at, const char *peer)
{
	char series[128];

	snprintf(series, sizeof(series), "sumcache_peer_up{peer=\"%s\"}",
	    peer);
	return node_metric(at, series);
}

/* Polls until at's sumcache_peer_up for peer equals want (1 up, 0 down,
 * -1 not in the table). */
static bool
wait_peer(const struct node *at, const char *peer, double want)
{
	for (int waited = 0; waited < 8000; waited += 50) {
		if (peer_up(at, peer) == want)
			return true;
		usleep(50000);
	}
	return false;
}

static void
dns_cluster_up(void)
{
	static char dns_opt[64], peer_dns[64];
	static const char *opts[] = {dns_opt, "peer_dns_interval=200ms",
	    NULL};
	char port[16];

	origin_start(&env);
	cluster_init(&env, &cl, 3, opts, NULL);
	int p = harness_free_port(), dport = harness_free_port();
	for (int i = 0; i < cl.n; i++) {
		snprintf(cl.nodes[i].host, sizeof(cl.nodes[i].host),
		    "127.0.0.%d", (i + 2) & 0xff);
		cl.nodes[i].port = p;
	}
	snprintf(dns_opt, sizeof(dns_opt), "dns_nameservers=127.0.0.1:%d",
	    dport);
	snprintf(peer_dns, sizeof(peer_dns), "peers.test:%d", p);
	cl.peer_dns = peer_dns;
	snprintf(zone, sizeof(zone), "%s/zone", env.dir);
	write_zone(7);
	snprintf(port, sizeof(port), "%d", dport & 0xffff);
	char *argv[] = {DNS_BIN, port, zone, NULL};
	char out[340];
	snprintf(out, sizeof(out), "%s/dns.out", env.dir);
	dns_pid = harness_spawn(argv, out);
	for (int i = 0; i < cl.n; i++)
		node_start(&env, &cl, i);
}

Test(peer_dns, members_found_self_left_out_and_changes_followed)
{
	struct resp r;
	char url[256];

	dns_cluster_up();
	struct node *a = &cl.nodes[0], *b = &cl.nodes[1], *c = &cl.nodes[2];
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			if (i != j)
				cr_assert(wait_peer(&cl.nodes[i],
				    cl.nodes[j].name, 1), "%s never saw %s "
				    "up; see %s", cl.nodes[i].name,
				    cl.nodes[j].name, cl.nodes[i].out);
	/* DNS lists every member, a itself too: a pulled itself once, saw
	 * its own name and left that address out */
	char self[64];
	snprintf(self, sizeof(self), "%s:%d", a->host, a->port);
	cr_expect_eq(peer_up(a, "a"), -1);
	cr_expect_eq(peer_up(a, self), -1);
	cr_expect(harness_file_has(a->out, "is this node", NULL, 0));
	cr_expect_eq(node_metric(a, "sumcache_peer_dns_addresses"), 3);

	/* the found peers share summaries like configured ones */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/dns-shared?"
	    "max_age=600", env.oport);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	node_wait_metric(b, "sumcache_peer_summary_entries{peer=\"a\"}", 1,
	    5000);
	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(origin_count(&env, "/obj/dns-shared", NULL), 1);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);

	/* c leaves DNS: a and b drop it; what a sent it stays counted */
	double sent_c = node_metric(a, "sumcache_interproxy_messages_total{"
	    "direction=\"sent\",type=\"summary_full\",peer=\"c\"}");
	cr_assert_geq(sent_c, 1);
	write_zone(3);
	cr_assert(wait_peer(a, "c", -1), "a kept c after DNS dropped it");
	cr_assert(wait_peer(b, "c", -1));
	cr_expect(harness_file_has(a->out, "leaves: no longer in DNS", NULL,
	    0));
	cr_expect_geq(node_metric(a, "sumcache_interproxy_messages_total{"
	    "direction=\"sent\",type=\"summary_full\",peer=\"_left\"}"),
	    sent_c);
	cr_expect_eq(peer_up(a, "b"), 1);

	/* and comes back: found, pulled, named and up again */
	write_zone(7);
	cr_assert(wait_peer(a, "c", 1), "a never took c back");
	cr_assert(wait_peer(c, "a", 1));

	/* a failing lookup (NXDOMAIN) keeps the peers we have */
	write_zone(0);
	double errors = node_metric(a, "sumcache_peer_dns_lookups_total{"
	    "result=\"error\"}");
	cr_assert_geq(node_wait_metric(a, "sumcache_peer_dns_lookups_total{"
	    "result=\"error\"}", errors + 2, 5000), errors + 2);
	cr_expect_eq(peer_up(a, "b"), 1);
	cr_expect_eq(peer_up(a, "c"), 1);
	node_get(c, url, &r);
	cr_expect_eq(r.status, 200);
	resp_free(&r);

	/* c comes back on a new address, as a pod does: same name, new
	 * peer entry, the old address gone from every table */
	char old[64];
	snprintf(old, sizeof(old), "%s:%d", c->host, c->port);
	node_stop(c);
	snprintf(c->host, sizeof(c->host), "127.0.0.5");
	write_zone(7);
	node_start(&env, &cl, 2);
	cr_assert(wait_peer(a, "c", 1), "a never found c at its new address");
	cr_assert(wait_peer(b, "c", 1));
	cr_assert(wait_peer(c, "a", 1));
	cr_expect_eq(peer_up(a, old), -1);
	char named[64];
	snprintf(named, sizeof(named), "peer %s:%d is c", c->host, c->port);
	cr_expect(harness_file_has(a->out, named, NULL, 0), "%s", named);
}
