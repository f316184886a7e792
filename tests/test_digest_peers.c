/*
 * Peers of type=squid-digest: their Squid Cache Digest is their summary.
 * A sumcache node serves the same digest a Squid does, so two sumcache
 * nodes that call each other squid-digest peers exercise the whole path
 * without a Squid: the lazy fetch, Squid's receiver checks, forwarding on
 * a digest hit, and no summary traffic. (tests/test_squid_digest.c does
 * the same against a real Squid.)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct env env;
static struct env bogus;  /* origin only: a peer with a bad digest */
static struct cluster cl;

static void
down(void)
{
	cluster_stop(&cl);
	env_stop(&env);
	if (bogus.origin > 0)
		env_stop(&bogus);
}

TestSuite(digest_peers, .fini = down, .timeout = 60);

/* Traffic of node nd with peer, one type and direction. */
static double
traffic(const struct node *nd, const char *what, const char *dir,
    const char *type, const char *peer)
{
	char series[200];

	snprintf(series, sizeof(series), "sumcache_interproxy_%s_total{"
	    "direction=\"%s\",type=\"%s\",peer=\"%s\"}", what, dir, type,
	    peer);
	return node_metric(nd, series);
}

Test(digest_peers, fetched_when_first_wanted_and_used_for_a_remote_hit)
{
	/* a renews the digest it serves every second; ICP (on by default
	 * with a Squid peer) is off: both nodes share one address */
	static const char *const opts[] = {"digest_rebuild_period=1s",
	    "icp_listen=none", NULL};
	struct node *a = &cl.nodes[0], *b = &cl.nodes[1];
	char url[160], wake[160], none[160];
	struct resp r;

	origin_start(&env);
	cluster_start(&env, &cl, 2, opts, "type=squid-digest");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/at-a?max_age=600",
	    env.oport);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	sleep(1);  /* into a's next copy of its digest */

	/* b has looked nothing up yet, so it has fetched nothing (a, whose
	 * lookup above wanted b's digest, has) */
	cr_expect_eq(node_metric(a, "sumcache_squid_digests_served_total"),
	    0);
	cr_expect_eq(traffic(b, "bytes", "received", "squid_digest", "a"), 0);
	snprintf(wake, sizeof(wake), "http://127.0.0.1:%d/obj/wake?"
	    "max_age=600", env.oport);
	node_get(b, wake, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_geq(node_wait_metric(b, "sumcache_peer_summary_entries"
	    "{peer=\"a\"}", 1, 5000), 1, "b never loaded a's digest; see %s",
	    b->out);
	cr_expect_eq(node_metric(b, "sumcache_peer_summary_entries"
	    "{peer=\"a\"}"), 1, "a held one object when its digest was made");

	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	cr_expect(r.len == 100, "body of %zu bytes", r.len);
	resp_free(&r);
	cr_expect(harness_file_has(b->log, url, "CD_SIBLING_HIT/a", 3000),
	    "b did not forward the digest hit to a; see %s", b->log);
	cr_expect_eq(origin_count(&env, "/obj/at-a", NULL), 1);
	cr_expect_eq(node_metric(b, "sumcache_peer_remote_hits_total"
	    "{peer=\"a\"}"), 1);

	/* an object neither holds goes direct, asking no one */
	snprintf(none, sizeof(none), "http://127.0.0.1:%d/obj/nowhere?"
	    "max_age=600", env.oport);
	node_get(b, none, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(traffic(b, "messages", "sent", "peer_request", "a"), 1);

	/* one fetch of a's digest, the same bytes counted on both sides;
	 * and no summary went to a peer that reads digests */
	cr_expect_eq(node_metric(a, "sumcache_squid_digests_served_total"),
	    1);
	double got = traffic(b, "bytes", "received", "squid_digest", "a");
	cr_expect_gt(got, 128);
	cr_expect_eq(traffic(a, "bytes", "sent", "squid_digest", "b"), got);
	cr_expect_eq(traffic(b, "messages", "sent", "summary_full", "a"), 0);
	cr_expect_eq(traffic(a, "messages", "sent", "summary_full", "b"), 0);
	cr_expect_eq(traffic(a, "messages", "sent", "summary_pull", "b"), 0);
}

/* A peer whose digest Squid would refuse (a test origin serves one with
 * three hash functions) is counted and logged, never used, and the
 * request is served from the origin. */
Test(digest_peers, a_digest_squid_would_refuse_is_not_used)
{
	char peer[120], url[160], out[320];
	struct resp r;

	origin_start(&bogus);
	snprintf(peer, sizeof(peer), "peer=bogus 127.0.0.1:%d "
	    "type=squid-digest", bogus.oport);
	const char *opts[] = {"sharing=summary", peer, "icp_listen=none",
	    NULL};
	env_start(&env, opts);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/x?max_age=600",
	    env.oport);
	proxy_get(&env, url, NULL, &r);  /* the lookup that wants it */
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(proxy_wait_metric(&env,
	    "sumcache_summary_rejected_total{reason=\"malformed\"}", 1, 5000),
	    1);
	cr_expect_eq(proxy_metric(&env,
	    "sumcache_peer_summary_entries{peer=\"bogus\"}"), 0);
	cr_expect_eq(proxy_metric(&env, "sumcache_peer_up{peer=\"bogus\"}"),
	    1, "a peer that answers is up, digest or not");
	snprintf(out, sizeof(out), "%s/sumcache.out", env.dir);
	cr_expect(harness_file_has(out, "no usable digest", "hash function "
	    "count is not 4", 3000), "no log line in %s", out);
	/* asked again in a minute, not at every lookup */
	proxy_get(&env, url, NULL, &r);
	cr_expect_eq(r.status, 200);
	resp_free(&r);
	usleep(500000);
	cr_expect_eq(origin_count(&bogus, "/squid-internal-periodic/"
	    "store_digest", NULL), 1);
}
