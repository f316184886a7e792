/*
 * Placement hash between real sumcache processes on loopback: a miss goes
 * to the key's owner, which fetches it once for the cluster; the asker
 * keeps a copy only at placement_admit_hits; a dead owner is skipped; a
 * placed request never goes on to another peer; and when a node joins,
 * the summaries find the copies the old owners still hold (carp goes to
 * the origin for them).
 */
#define _GNU_SOURCE /* strcasestr */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "placement.h"

TestSuite(placement, .init = cluster_suite_up, .fini = cluster_suite_down,
    .timeout = 90);

static void
obj_url(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "http://127.0.0.1:%d/obj/%s?max_age=600", CE.oport,
	    name);
}

/* The index of url's owner among the first n nodes of the cluster, or
 * among those whose bit is set in live: the rule the nodes use. */
static int
owner_among(const char *url, unsigned live)
{
	struct place_node v[CLUSTER_MAX];
	int idx[CLUSTER_MAX], n = 0;

	for (int i = 0; i < CL.n; i++) {
		if (!(live >> i & 1))
			continue;
		const char *name = CL.nodes[i].name;
		v[n] = (struct place_node){place_hash(name, strlen(name)), 1.0};
		idx[n++] = i;
	}
	return idx[place_owner(v, (size_t)n, place_hash(url, strlen(url)))];
}

/* GET url through nd: 200, with the body of its own object (the
 * origin's body names it). */
static void
get_ok(const struct node *nd, const char *url)
{
	char name[64];
	const char *at = strstr(url, "/obj/");
	struct resp r;

	cr_assert_not_null(at);
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(at + 5, "?"),
	    at + 5);
	node_get(nd, url, &r);
	cr_assert_eq(r.status, 200, "GET %s through %s: %d", url, nd->name,
	    r.status);
	cr_assert(r.body != NULL && strstr(r.body, name) != NULL,
	    "GET %s through %s: not its body", url, nd->name);
	resp_free(&r);
}

#define NOBJ 12

/* Every node asks for every object: the origin sees each once, its owner
 * keeps it, and the others keep their own copy only from their second
 * request (placement_admit_hits=2). */
static void
one_fetch_per_object(void)
{
	char url[NOBJ][256], name[32], series[128];
	int owned[CLUSTER_MAX] = {0};

	for (int i = 0; i < NOBJ; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		obj_url(url[i], sizeof(url[i]), name);
		owned[owner_among(url[i], 7)]++;
	}
	for (int x = 0; x < CL.n; x++)
		for (int i = 0; i < NOBJ; i++)
			get_ok(&CL.nodes[x], url[i]);
	for (int i = 0; i < NOBJ; i++) {
		snprintf(name, sizeof(name), "/obj/p%d?", i);
		cr_expect_eq(origin_count(&CE, name, NULL), 1,
		    "object %d was fetched %d times", i,
		    origin_count(&CE, name, NULL));
	}
	for (int x = 0; x < CL.n; x++) {
		struct node *nd = &CL.nodes[x];
		cr_expect_eq(node_wait_metric(nd, "sumcache_cache_objects",
		    owned[x], 2000), owned[x], "%s holds its %d objects and no other's",
		    nd->name, owned[x]);
		cr_expect_eq(node_metric(nd, "sumcache_owner_requests_total{"
		    "outcome=\"hit\"}") + node_metric(nd, "sumcache_owner_"
		    "requests_total{outcome=\"miss\"}"), NOBJ - owned[x],
		    "%s asked the owners of the others' objects", nd->name);
		cr_expect_eq(node_metric(nd, "sumcache_owner_copies_total{"
		    "decision=\"passed\"}"), NOBJ - owned[x]);
	}
	/* the first node asked first: its owner requests were misses that
	 * the owners fetched; the last asked when every owner had it */
	struct node *a = &CL.nodes[0], *last = &CL.nodes[CL.n - 1];
	cr_expect_eq(node_metric(a, "sumcache_owner_requests_total{outcome="
	    "\"miss\"}"), NOBJ - owned[0]);
	cr_expect_eq(node_metric(last, "sumcache_owner_requests_total{"
	    "outcome=\"hit\"}"), NOBJ - owned[CL.n - 1]);
	cr_expect_eq(node_metric(last, "sumcache_requests_total{result="
	    "\"remote_hit\"}"), NOBJ - owned[CL.n - 1]);
	int first = 0;
	while (first < NOBJ && owner_among(url[first], 7) == 0)
		first++;
	cr_assert_lt(first, NOBJ, "a owns every object: nothing to ask");
	snprintf(series, sizeof(series), "CARP/%s ",
	    CL.nodes[owner_among(url[first], 7)].name);
	cr_expect(harness_file_has(a->log, "TCP_MISS/200", series, 3000),
	    "a's access log names the owner");

	/* a's second request for each: kept now, then served locally */
	for (int i = 0; i < NOBJ; i++)
		get_ok(a, url[i]);
	cr_expect_eq(node_wait_metric(a, "sumcache_cache_objects", NOBJ,
	    2000), NOBJ);
	cr_expect_eq(node_metric(a, "sumcache_owner_copies_total{decision="
	    "\"kept\"}"), NOBJ - owned[0]);
	double local = node_metric(a, "sumcache_requests_total{result="
	    "\"local_hit\"}");
	for (int i = 0; i < NOBJ; i++)
		get_ok(a, url[i]);
	cr_expect_eq(node_metric(a, "sumcache_requests_total{result="
	    "\"local_hit\"}"), local + NOBJ);
	for (int i = 0; i < NOBJ; i++) {
		snprintf(name, sizeof(name), "/obj/p%d?", i);
		cr_expect_eq(origin_count(&CE, name, NULL), 1);
	}
}

Test(placement, summary_hash_fetches_each_object_once_for_the_cluster)
{
	const char *opts[] = {"placement=hash", "placement_admit_hits=2",
		NULL};

	cluster_start(&CE, &CL, 3, opts, NULL);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			if (i != j)
				node_wait_synced(&CL.nodes[i], &CL.nodes[j]);
	one_fetch_per_object();
}

Test(placement, carp_fetches_each_object_once_with_no_summaries)
{
	const char *opts[] = {"sharing=none", "placement=hash",
		"placement_admit_hits=2", NULL};

	cluster_start(&CE, &CL, 3, opts, NULL);
	one_fetch_per_object();
	for (int x = 0; x < 3; x++)
		for (int y = 0; y < 3; y++)
			if (x != y)
				cr_expect_eq(node_sent(&CL.nodes[x],
				    "summary_full", CL.nodes[y].name) +
				    node_sent(&CL.nodes[x], "summary_delta",
				    CL.nodes[y].name), 0,
				    "no summary between %d and %d", x, y);
}

/* Weights decide owners: a node that gives itself a tiny weight and its
 * peers a large one owns nothing by its own reckoning and asks an owner
 * for every object (each owner, reckoning the same way, fetches it). */
Test(placement, weights_on_peer_lines_decide_the_owners)
{
	const char *opts[] = {"placement=hash", "placement_weight=0.001",
		NULL};
	char url[256], name[32];

	cluster_start(&CE, &CL, 3, opts, "weight=1000");
	struct node *a = &CL.nodes[0];
	node_wait_synced(&CL.nodes[1], a);
	node_wait_synced(&CL.nodes[2], a);
	for (int i = 0; i < NOBJ; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		obj_url(url, sizeof(url), name);
		get_ok(a, url);
	}
	cr_expect_eq(node_metric(a, "sumcache_owner_requests_total{outcome="
	    "\"miss\"}"), NOBJ, "a asked an owner for every object");
	cr_expect_eq(node_metric(a, "sumcache_cache_objects"), 0);
	double held = 0;
	for (int waited = 0; waited < 2000 && held != NOBJ; waited += 20) {
		held = node_metric(&CL.nodes[1], "sumcache_cache_objects") +
		    node_metric(&CL.nodes[2], "sumcache_cache_objects");
		if (held != NOBJ)
			usleep(20 * 1000);
	}
	cr_expect_eq(held, NOBJ);
}

Test(placement, a_dead_owner_is_skipped_for_the_next_highest)
{
	const char *opts[] = {"sharing=none", "placement=hash",
		"peer_connect_timeout=200ms", NULL};
	char url[256], name[32];
	int tried = 0, owned[2] = {0};

	cluster_start(&CE, &CL, 3, opts, NULL);
	struct node *a = &CL.nodes[0];
	harness_stop(CL.nodes[2].pid, SIGKILL, 5000);
	CL.nodes[2].pid = 0;
	/* objects c owned: the first costs a failed connect and goes to its
	 * owner among the two left, b (not to the origin from a); then b or
	 * a, by the rule over the two, fetches each once */
	for (int i = 0; tried < 4 && i < 200; i++) {
		snprintf(name, sizeof(name), "dead%d", i);
		obj_url(url, sizeof(url), name);
		if (owner_among(url, 7) != 2 ||
		    (tried == 0 && owner_among(url, 3) != 1))
			continue;
		tried++;
		owned[owner_among(url, 3)]++;
		get_ok(a, url);
		snprintf(name, sizeof(name), "/obj/dead%d?", i);
		cr_expect_eq(origin_count(&CE, name, NULL), 1);
	}
	cr_assert_eq(tried, 4);
	/* each at its owner among the two left, a's own copy only where a
	 * is the owner (placement_admit_hits: first request) */
	cr_expect_eq(node_wait_metric(a, "sumcache_cache_objects", owned[0],
	    2000), owned[0]);
	cr_expect_eq(node_wait_metric(&CL.nodes[1], "sumcache_cache_objects",
	    owned[1], 2000), owned[1]);
	cr_expect_eq(node_metric(a, "sumcache_owner_requests_total{outcome="
	    "\"failed\"}"), 1, "the dead owner cost one failed connect");
	cr_expect_eq(node_metric(a, "sumcache_peer_up{peer=\"c\"}"), 0);
}

/*
 * An object that may not be stored (no-store) costs its owner a hop only
 * once: the answer marks its URL (pass.h), and the asker's next requests
 * for it go straight to the origin while the mark lasts.
 */
Test(placement, an_answer_that_may_not_be_stored_sends_the_next_to_the_origin)
{
	const char *opts[] = {"sharing=none", "placement=hash", NULL};
	char url[256], name[32];
	int i;

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	for (i = 0; i < 200; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/ns%d?"
		    "nostore=1", CE.oport, i);
		if (owner_among(url, 3) == 1)
			break;
	}
	cr_assert_lt(i, 200, "no URL that b owns");
	snprintf(name, sizeof(name), "/obj/ns%d?", i);
	for (int k = 0; k < 3; k++)
		get_ok(a, url);
	cr_expect_eq(origin_count(&CE, name, NULL), 3, "no-store: each "
	    "request reaches the origin");
	cr_expect_eq(node_metric(a, "sumcache_owner_requests_total{outcome="
	    "\"miss\"}"), 1, "the owner was asked once, not %g times",
	    node_metric(a, "sumcache_owner_requests_total{outcome=\"miss\"}"));
	cr_expect_eq(node_metric(a, "sumcache_passed_total"), 2);
	cr_expect_eq(node_metric(b, "sumcache_peer_requests_served_total{"
	    "result=\"miss\"}"), 1, "b served a's first request only");
	cr_expect(harness_file_has(a->log, name, "HIER_DIRECT/", 3000),
	    "a's access log shows the direct fetches");
}

Test(placement, a_placed_request_goes_to_the_origin_and_drops_the_hop)
{
	const char *opts[] = {"placement=hash", NULL};
	char url[256];
	struct resp r;

	cluster_start(&CE, &CL, 3, opts, NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/headers", CE.oport);
	/* through a node that does not own it, as if its owner-to-be */
	int x = owner_among(url, 7) == 0 ? 1 : 0;
	struct node *nd = &CL.nodes[x];
	const char *extra[] = {"Via: 1.1 peer-z", "Sumcache-Hop: owner",
		NULL};
	http_request_at(nd->host, nd->port, "GET", url, extra, NULL, 0,
	    false, &r);
	cr_assert_eq(r.status, 200);
	cr_expect(strcasestr(r.body, "sumcache-hop") == NULL,
	    "the hop field went on to the origin: %s", r.body);
	resp_free(&r);
	cr_expect(harness_file_has(nd->log, "/headers", "HIER_DIRECT/", 3000),
	    "a placed request is answered from the origin");
	cr_expect_eq(node_metric(nd, "sumcache_owner_requests_total{outcome="
	    "\"miss\"}") + node_metric(nd, "sumcache_owner_requests_total{"
	    "outcome=\"hit\"}"), 0);
	/* the same from a client (no Via): it goes to the owner (another
	 * URL that nd does not own: the first answer, which may not be
	 * stored, sends its URL's next misses to the origin, pass.h) */
	for (int i = 0; i < 100; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/headers?%d",
		    CE.oport, i);
		if (owner_among(url, 7) != x)
			break;
	}
	cr_assert_neq(owner_among(url, 7), x);
	/* a slow start (a TSan daemon) may not have the owner up yet: the
	 * request would go to the origin, rightly, for the wrong reason */
	char up[64];
	snprintf(up, sizeof(up), "sumcache_peer_up{peer=\"%s\"}",
	    CL.nodes[owner_among(url, 7)].name);
	cr_assert_eq(node_wait_metric(nd, up, 1, 5000), 1);
	const char *plain[] = {"Sumcache-Hop: owner", NULL};
	http_request_at(nd->host, nd->port, "GET", url, plain, NULL, 0, false,
	    &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_metric(nd, "sumcache_owner_requests_total{outcome="
	    "\"miss\"}") + node_metric(nd, "sumcache_owner_requests_total{"
	    "outcome=\"hit\"}"), 1, "a client's hop field counts for nothing");
}

/* A node joins: a key it now owns is still held by its old owner. Asked
 * through a third node: with summaries, the old owner's summary claims
 * it and it answers; with carp, the new owner fetches it again. */
static int
join_refetches(bool summaries)
{
	const char *sum_opts[] = {"placement=hash", "placement_admit_hits=0",
		"peer_connect_timeout=200ms", NULL};
	const char *carp_opts[] = {"sharing=none", "placement=hash",
		"placement_admit_hits=0", "peer_connect_timeout=200ms", NULL};
	char url[256], name[64], marker[8];
	int moved = 0, i;

	cluster_init(&CE, &CL, 3, summaries ? sum_opts : carp_opts, NULL);
	node_start(&CE, &CL, 0);
	node_start(&CE, &CL, 1);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1], *c = &CL.nodes[2];
	snprintf(marker, sizeof(marker), "j%d", summaries);
	if (summaries) {
		node_wait_synced(a, b);
		node_wait_synced(b, a);
	} else {
		/* under carp c is up until a request to it fails: b learns
		 * it is down from one object of c's that b owns among the
		 * two left (so b fetches it, and a holds only the four) */
		for (i = 0; i < 400; i++) {
			snprintf(name, sizeof(name), "%s-warm%d", marker, i);
			obj_url(url, sizeof(url), name);
			if (owner_among(url, 7) == 2 && owner_among(url, 3) == 1)
				break;
		}
		cr_assert_lt(i, 400, "no object of c's that b owns next");
		get_ok(b, url);
		cr_assert_eq(node_metric(b, "sumcache_owner_requests_total{"
		    "outcome=\"failed\"}"), 1);
	}
	/* objects owned by a while c is away and by c once it is back,
	 * asked through b (whose copy admission refuses) */
	for (i = 0; moved < 4 && i < 400; i++) {
		snprintf(name, sizeof(name), "%s-%d", marker, i);
		obj_url(url, sizeof(url), name);
		if (owner_among(url, 3) != 0 || owner_among(url, 7) != 2)
			continue;
		moved++;
		get_ok(b, url);
	}
	cr_assert_eq(moved, 4);
	/* (the owner stores a copy when its fetch ends, which can be just
	 * after the asker has the last byte) */
	cr_assert_eq(node_wait_metric(a, "sumcache_cache_objects", 4, 2000),
	    4);
	node_start(&CE, &CL, 2);
	if (summaries) {
		cr_assert_eq(node_wait_metric(b, "sumcache_peer_up{peer=\"c\"}",
		    1, 10000), 1, "c never came up at b");
		node_wait_synced(a, b);
		node_wait_synced(c, b);
	} else {
		/* its backoff (500 ms after one failure) passes: b tries c
		 * again with the next request it owns */
		usleep(1200 * 1000);
	}
	for (int k = 0, seen = 0; seen < 4 && k < i; k++) {
		snprintf(name, sizeof(name), "%s-%d", marker, k);
		obj_url(url, sizeof(url), name);
		if (owner_among(url, 3) != 0 || owner_among(url, 7) != 2)
			continue;
		seen++;
		get_ok(b, url);
	}
	int fetches = 0;
	for (int k = 0; k < i; k++) {
		snprintf(name, sizeof(name), "/obj/%s-%d?", marker, k);
		fetches += origin_count(&CE, name, NULL);
	}
	if (!summaries)
		cr_expect_eq(node_wait_metric(c, "sumcache_cache_objects", 4,
		    2000), 4, "the new owner keeps what it fetched");
	cluster_stop(&CL);
	return fetches - 4;
}

Test(placement, after_a_join_summaries_find_the_old_owner_and_carp_refetches,
    .timeout = 120)
{
	int with_summaries = join_refetches(true);
	int carp = join_refetches(false);

	cr_expect_eq(with_summaries, 0, "summary+hash fetched %d objects again",
	    with_summaries);
	cr_expect_eq(carp, 4, "carp fetched %d of the 4 moved objects again",
	    carp);
}
