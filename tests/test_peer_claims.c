/*
 * Which peers a miss asks, end to end: a summary claims only copies a peer
 * can serve (an expired one leaves it first), a claim that proves false
 * costs one round trip and the origin, and peers whose claims proved false
 * are asked after those whose claims hold.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(peer_claims, .init = cluster_suite_up, .fini = cluster_suite_down,
    .timeout = 90);

/* GET url through nd with one Accept-Language. */
static void
node_get_lang(const struct node *nd, const char *url, const char *lang,
    struct resp *r)
{
	char h[64];
	const char *extra[] = {h, NULL};

	snprintf(h, sizeof(h), "Accept-Language: %s", lang);
	http_request_at(nd->host, nd->port, "GET", url, extra, NULL, 0, false,
	    r);
}

Test(peer_claims, false_hit_recovers_through_the_origin)
{
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 2, NULL, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	/* A holds the English variant, and its summary claims the URL; a
	 * French request through B finds no variant to be served at A */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/vary/fh", CE.oport);
	node_get_lang(a, url, "en", &r);
	resp_free(&r);
	node_wait_synced(a, b);
	node_get_lang(b, url, "fr", &r);
	cr_assert_eq(r.status, 200, "the client never sees the false hit");
	cr_assert_str_eq(r.body, "lang=fr\n");
	resp_free(&r);
	cr_expect_eq(node_metric(b, "sumcache_peer_false_hits_total"), 1);
	cr_expect_eq(origin_count(&CE, "/vary/fh", NULL), 2);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\"miss\"}"),
	    1);
}

/* A copy leaves its node's summary before it expires (by the publication
 * delay, at most summary_max_interval): while fresh it is a remote hit;
 * once not, no peer is asked for it, and no false hit is paid. */
Test(peer_claims, expired_copies_leave_the_summary_before_a_peer_asks)
{
	const char *opts[] = {"summary_max_interval=1s", NULL};
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 3, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1], *c = &CL.nodes[2];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/brief?max_age=4",
	    CE.oport);
	node_get(a, url, &r);
	resp_free(&r);
	node_wait_synced(a, b);
	node_get(b, url, &r);
	resp_free(&r);
	cr_assert_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1, "claimed while fresh");
	usleep(4000 * 1000);  /* both copies expired */
	/* the lapse is checked every second, on whole seconds of expiry */
	cr_assert_geq(node_wait_metric(a, "sumcache_summary_expired_total", 1,
	    3000), 1);
	cr_assert_geq(node_wait_metric(b, "sumcache_summary_expired_total", 1,
	    3000), 1);
	node_wait_synced(a, c);
	node_wait_synced(b, c);
	node_get(c, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_sent(c, "peer_request", "a") +
	    node_sent(c, "peer_request", "b"), 0, "a peer was asked for an "
	    "expired copy");
	cr_expect_eq(node_metric(c, "sumcache_peer_false_hits_total"), 0);
	cr_expect_eq(origin_count(&CE, "/obj/brief", NULL), 2);
}

/* With one peer asked per miss and two claiming, a peer whose claim was
 * false is asked after the one whose claims hold, whatever their RTTs:
 * B holds the English variants, C the French ones, and A asks in French.
 * A's first miss only B claims; of the three both claim, A asks C each
 * time. */
Test(peer_claims, claims_that_proved_false_are_asked_last)
{
	const char *opts[] = {"peers_asked=1", NULL};
	const char *names[] = {"cl1", "cl2", "cl3", "cl4"};
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 3, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1], *c = &CL.nodes[2];
	for (int i = 0; i < 4; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/vary/%s",
		    CE.oport, names[i]);
		node_get_lang(b, url, "en", &r);
		resp_free(&r);
	}
	node_wait_synced(b, a);
	node_wait_synced(b, c);
	for (int i = 1; i < 4; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/vary/%s",
		    CE.oport, names[i]);
		node_get_lang(c, url, "fr", &r);
		resp_free(&r);
	}
	node_wait_synced(c, a);
	for (int i = 0; i < 4; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/vary/%s",
		    CE.oport, names[i]);
		node_get_lang(a, url, "fr", &r);
		cr_assert_eq(r.status, 200);
		cr_assert_str_eq(r.body, "lang=fr\n");
		resp_free(&r);
	}
	cr_expect_eq(node_sent(a, "peer_request", "b") +
	    node_sent(a, "peer_request", "c"), 4, "one peer asked a miss");
	cr_expect_eq(origin_count(&CE, "/vary/cl1", NULL), 2);
	cr_expect_eq(node_peer_metric(a, "sumcache_peer_claim_false_hits_total",
	    "b"), 1, "B was asked again after its false claim");
	cr_expect_eq(node_peer_metric(a, "sumcache_peer_remote_hits_total", "c"), 3);
	cr_expect_gt(node_peer_metric(a, "sumcache_peer_claim_false_rate", "b"), 0);
	cr_expect_eq(node_peer_metric(a, "sumcache_peer_claim_false_rate", "c"), 0);
}

/* Timed summaries (issue 35): a claim ends at its deadline at the peer by
 * itself, so copies that expire cost their owner no summary message; a
 * revalidation (a 304) claims the copy again, in a delta. */
Test(peer_claims, expired_claims_lapse_at_the_peer_with_no_message)
{
	const char *opts[] = {"summary_max_interval=1s", NULL};
	struct resp r;
	char fresh[256], lapsing[256], revalidated[256], url[256];

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	/* claimed at B until 3 s after A stores them (expiry less a second
	 * of slack, rounded down); the lapsing one until 2 s after: at 1 s
	 * (max_age=2) a daemon slowed by TSan could store it past its
	 * deadline, unclaimed, and A would never count it lapsed */
	snprintf(fresh, sizeof(fresh), "http://127.0.0.1:%d/obj/tf?max_age=4",
	    CE.oport);
	snprintf(lapsing, sizeof(lapsing), "http://127.0.0.1:%d/obj/tl?"
	    "max_age=3", CE.oport);
	snprintf(revalidated, sizeof(revalidated), "http://127.0.0.1:%d/obj/"
	    "tr?max_age=4&etag=1", CE.oport);
	node_get(a, fresh, &r);
	resp_free(&r);
	node_get(a, lapsing, &r);
	resp_free(&r);
	node_get(a, revalidated, &r);
	resp_free(&r);
	/* and one that stays, as a cache holds many */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/tk?max_age=600",
	    CE.oport);
	node_get(a, url, &r);
	resp_free(&r);
	node_wait_synced(a, b);
	double deltas = node_sent(a, "summary_delta", "b");
	double fulls = node_sent(a, "summary_full", "b");
	node_get(b, fresh, &r);
	resp_free(&r);
	cr_assert_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1, "claimed while fresh");

	/* the 3 s copy's claim ends, then the 4 s ones' (all lapse at A
	 * too); A says nothing about it */
	usleep(3000 * 1000);
	/* the expiry tick is a second; the wait allows a slow daemon */
	cr_assert_geq(node_wait_metric(a, "sumcache_summary_expired_total", 3,
	    10000), 3);
	usleep(1500 * 1000);     /* a max interval and more */
	cr_assert_eq(node_sent(a, "summary_delta", "b"), deltas,
	    "A published its lapses");
	cr_assert_eq(node_sent(a, "summary_full", "b"), fulls);
	double asked = node_sent(b, "peer_request", "a");
	node_get(b, lapsing, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(node_sent(b, "peer_request", "a"), asked,
	    "B asked A for a copy whose claim had ended");
	cr_assert_eq(node_metric(b, "sumcache_peer_false_hits_total"), 0);
	cr_assert_eq(origin_count(&CE, "/obj/tl", NULL), 2);

	/* A revalidates its copy for a client of its own: a 304, and the
	 * claim is back, in a delta */
	int conditional = 0;
	node_get(a, revalidated, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	origin_count(&CE, "/obj/tr", &conditional);
	cr_assert_eq(conditional, 1, "revalidated with the origin");
	char sent[200];
	snprintf(sent, sizeof(sent), "sumcache_interproxy_messages_total"
	    "{direction=\"sent\",type=\"summary_delta\",peer=\"b\"}");
	cr_assert_gt(node_wait_metric(a, sent, deltas + 1, 3000), deltas);
	node_wait_synced(a, b);
	cr_assert_eq(node_sent(a, "summary_full", "b"), fulls,
	    "a full summary was sent");
	node_get(b, revalidated, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 2, "claimed again after the 304");
}
