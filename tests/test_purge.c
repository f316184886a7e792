/*
 * PURGE through the real binary: every variant of a URL leaves the cache,
 * the next request goes to the origin, and only purge_allow may.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "wire.h"

static struct env P;
static struct cluster C;

static void
down(void)
{
	cluster_stop(&C);
	env_stop(&P);
}

TestSuite(purge, .fini = down, .timeout = 60);

static long
purge(const char *url)
{
	struct resp r;

	proxy_request(&P, "PURGE", url, NULL, NULL, 0, false, &r);
	long status = r.status;
	resp_free(&r);
	return status;
}

Test(purge, drops_every_variant_and_only_from_purge_allow_addresses)
{
	const char *en[] = {"Accept-Language: en", NULL};
	const char *fr[] = {"Accept-Language: fr", NULL};
	struct resp r;

	env_start(&P, NULL);
	const char *obj = env_url(&P, "/obj/pg?max_age=600");
	const char *vary = env_url(&P, "/vary/pg");
	proxy_get(&P, obj, NULL, &r);
	resp_free(&r);
	proxy_get(&P, vary, en, &r);
	resp_free(&r);
	proxy_get(&P, vary, fr, &r);
	resp_free(&r);

	cr_assert_eq(purge(obj), 200);
	cr_assert_eq(purge(vary), 200);
	cr_assert_eq(purge(vary), 404, "nothing left to purge");
	cr_assert_eq(origin_count(&P, "PURGE", NULL), 0,
	    "PURGE never reaches the origin");
	proxy_get(&P, obj, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "MISS from test-node");
	resp_free(&r);
	proxy_get(&P, vary, fr, &r);
	cr_assert_str_eq(r.body, "lang=fr\n");
	resp_free(&r);
	cr_assert_eq(origin_count(&P, "/obj/pg", NULL), 2);
	cr_assert_eq(origin_count(&P, "/vary/pg", NULL), 3);
	cr_assert_eq(proxy_metric(&P, "sumcache_purges_total{result=\"purged\"}"),
	    2);
	cr_assert_eq(proxy_metric(&P, "sumcache_purges_total{result=\"absent\"}"),
	    1);
	cr_assert(harness_file_has(P.log, "PURGE", "/obj/pg", 5000));

	/* loopback left out of purge_allow: refused, the copy stays */
	const char *const others[] = {"purge_allow=10.0.0.0/8", NULL};
	proxy_restart(&P, others, SIGTERM);
	proxy_get(&P, obj, NULL, &r);
	resp_free(&r);
	cr_assert_eq(purge(obj), 403);
	proxy_get(&P, obj, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	cr_assert_eq(proxy_metric(&P, "sumcache_purges_total{result=\"denied\"}"),
	    1);
}

/* A request through node nd with method to url; the status. */
static long
node_request(const struct node *nd, const char *method, const char *url)
{
	struct resp r;

	http_request_at(nd->host, nd->port, method, url, NULL, NULL, 0, false,
	    &r);
	long status = r.status;
	resp_free(&r);
	return status;
}

/* Every node holds a copy of url; the origin's body then changes; a
 * PURGE at A, then a POST through C, are carried to the other nodes,
 * and after each no node serves the old body. */
Test(purge, reaches_every_peer_and_no_node_serves_the_old_body)
{
	struct resp r, fresh;
	char url[160], bump[96];

	origin_start(&P);
	cluster_start(&P, &C, 3, NULL, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big?size=3000&"
	    "max_age=600&gen=1", P.oport);
	snprintf(bump, sizeof(bump), "http://127.0.0.1:%d/__bump", P.oport);
	for (int i = 0; i < 3; i++) {
		node_get(&C.nodes[i], url, &r);
		cr_assert_eq(r.status, 200);
		cr_assert(memcmp(r.body, "big0", 4) == 0);
		resp_free(&r);
	}
	for (int round = 0; round < 2; round++) {
		http_request(0, "GET", bump, NULL, NULL, 0, false, &r);
		resp_free(&r);
		http_request(0, "GET", url, NULL, NULL, 0, false, &fresh);
		const char *applied = "sumcache_peer_invalidations_received_"
		    "total{result=\"applied\"}";
		const struct node *told[2] = {
		    &C.nodes[round == 0 ? 1 : 0], &C.nodes[round == 0 ? 2 : 1]};
		double before[2] = {node_metric(told[0], applied),
		    node_metric(told[1], applied)};
		long t0 = harness_now_ms();
		/* round 0: an operator's PURGE at A; round 1: a client's
		 * POST through C, which the origin accepts */
		if (round == 0)
			cr_assert_eq(node_request(&C.nodes[0], "PURGE", url),
			    200);
		else
			cr_assert_eq(node_request(&C.nodes[2], "POST", url),
			    200);
		for (int i = 0; i < 2; i++)
			cr_assert_geq(node_wait_metric(told[i], applied,
			    before[i] + 1, 5000), before[i] + 1,
			    "node %s was not told", told[i]->name);
		printf("figure: %s reached both other nodes in %ld ms\n",
		    round == 0 ? "a PURGE" : "a POST's invalidation",
		    harness_now_ms() - t0);
		for (int i = 0; i < 3; i++) {
			node_get(&C.nodes[i], url, &r);
			cr_assert_eq(r.status, 200);
			cr_assert(r.len == fresh.len &&
			    memcmp(r.body, fresh.body, r.len) == 0,
			    "node %s served the old body", C.nodes[i].name);
			resp_free(&r);
		}
		resp_free(&fresh);
	}
	cr_assert_eq(node_metric(&C.nodes[1],
	    "sumcache_peer_invalidations_received_total{result=\"refused\"}"),
	    0);
	cr_assert_gt(node_sent(&C.nodes[0], "invalidation", "b"), 0);
}

/* POSTs a signed invalidation straight to node nd; the status. */
static long
post_invalidation(const struct node *nd, const struct sum_buf *msg)
{
	char target[96];
	struct resp r;
	const char *ct[] = {"Content-Type: application/x-protobuf", NULL};

	snprintf(target, sizeof(target), "http://%s:%d/sumcache/v1/invalidate",
	    nd->host, nd->port);
	http_request(0, "POST", target, ct, (const char *)msg->p, msg->len,
	    false, &r);
	long status = r.status;
	resp_free(&r);
	return status;
}

/* Only the cluster key, a peer's name at its address and a newer time
 * get a URL dropped: a forged, a replayed or a stranger's invalidation
 * is refused, counted, and the copy stays. */
Test(purge, forged_or_replayed_invalidations_change_nothing)
{
	struct resp r;
	char url[160], key[128];
	struct sum_buf good = {0}, forged = {0}, stranger = {0};

	origin_start(&P);
	cluster_start(&P, &C, 2, NULL, NULL);
	struct node *b = &C.nodes[1];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/hostile?"
	    "max_age=600", P.oport);
	node_get(b, url, &r);
	resp_free(&r);
	FILE *f = fopen(C.key_file, "r");
	cr_assert_not_null(f);
	cr_assert(fgets(key, sizeof(key), f) != NULL);
	fclose(f);
	key[strcspn(key, "\n")] = '\0';
	const char *urls[] = {url};
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t now_us = (uint64_t)ts.tv_sec * 1000000 +
	    (uint64_t)ts.tv_nsec / 1000;
	cr_assert_eq(wire_encode_invalidation("a", now_us, urls, 1,
	    (const uint8_t *)"not the cluster key", 19, &forged), 0);
	cr_assert_eq(wire_encode_invalidation("zed", now_us, urls, 1,
	    (const uint8_t *)key, strlen(key), &stranger), 0);
	cr_assert_eq(wire_encode_invalidation("a", now_us, urls, 1,
	    (const uint8_t *)key, strlen(key), &good), 0);

	cr_expect_eq(post_invalidation(b, &forged), 403);
	cr_expect_eq(post_invalidation(b, &stranger), 403);
	node_get(b, url, &r);
	cr_expect_str_eq(resp_header(&r, "X-Cache"), "HIT from b");
	resp_free(&r);
	cr_expect_eq(post_invalidation(b, &good), 204);
	cr_expect_eq(post_invalidation(b, &good), 403, "a replay is refused");
	cr_expect_eq(node_metric(b, "sumcache_peer_invalidations_received_"
	    "total{result=\"applied\"}"), 1);
	cr_expect_eq(node_metric(b, "sumcache_peer_invalidations_received_"
	    "total{result=\"refused\"}"), 3);
	node_get(b, url, &r);
	cr_expect_str_eq(resp_header(&r, "X-Cache"), "MISS from b");
	resp_free(&r);
	/* a signed one naming what is no URL: taken, the name counted */
	struct sum_buf odd = {0};
	const char *junk[] = {"not a url"};
	cr_assert_eq(wire_encode_invalidation("a", now_us + 1, junk, 1,
	    (const uint8_t *)key, strlen(key), &odd), 0);
	cr_expect_eq(post_invalidation(b, &odd), 204);
	cr_expect_eq(node_metric(b, "sumcache_peer_invalidations_received_"
	    "total{result=\"bad_url\"}"), 1);
	cr_expect(harness_file_has(b->out, "invalidation from 127.0.0.1 "
	    "refused", "a replay", 0), "a refusal is not logged");

	/* a restart forgets the last time taken from a: the recorded
	 * message is still refused, being older than b's start */
	node_get(b, url, &r);
	resp_free(&r);
	node_stop(b);
	node_start(&P, &C, 1);
	cr_expect_eq(post_invalidation(b, &good), 403, "replayed after a "
	    "restart, and taken");
	cr_expect(harness_file_has(b->out, "invalidation from 127.0.0.1 "
	    "refused", "older than this node's start", 2000));
	cr_expect_eq(node_metric(b, "sumcache_peer_invalidations_received_"
	    "total{result=\"applied\"}"), 0);
	free(odd.p);
	free(good.p);
	free(forged.p);
	free(stranger.p);
}
