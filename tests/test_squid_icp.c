/*
 * ICP with a real Squid 5.7, both ways, proven from Squid's own access
 * log: Squid on 127.0.0.2 (it ignores ICP from its own address), one
 * sumcache node in `sharing icp` on 127.0.0.1, each the other's sibling.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "squid.h"

static struct env env;
static struct cluster cl;
static struct squid sq;

static void
stop_all(void)
{
	cluster_stop(&cl);
	squid_stop(&sq);
	env_stop(&env);
}

TestSuite(squid_icp, .fini = stop_all, .timeout = 120);

/* Squid and a sumcache node, siblings of each other over ICP. */
static struct node *
siblings_up(void)
{
	static char peer[128];
	static const char *opts[] = {peer, NULL};
	char extra[256];

	origin_start(&env);
	cluster_init(&env, &cl, 1, opts, NULL);
	cl.icp = true;
	struct node *a = &cl.nodes[0];
	/* sumcache first: Squid takes a sibling it cannot reach at start-up
	 * for dead and leaves it alone for a while */
	squid_ports(&sq, "127.0.0.2", true);
	snprintf(peer, sizeof(peer), "peer=squid %s:%d icp=%d", sq.host,
	    sq.port, sq.icp_port);
	node_start(&env, &cl, 0);
	snprintf(extra, sizeof(extra), "cache_peer 127.0.0.1 sibling %d %d "
	    "name=sumcache no-digest\n", a->port, a->icp_port);
	squid_start_at(&sq, env.dir, "127.0.0.2", true, extra);
	return a;
}

/* Squid writes its access log through stdio buffers */
static bool
squid_logged(const char *n1, const char *n2)
{
	return harness_file_has(sq.access_log, n1, n2, 8000);
}

static void
squid_get(const char *url, struct resp *r)
{
	http_request_at(sq.host, sq.port, "GET", url, NULL, NULL, 0, false, r);
}

Test(squid_icp, squid_gets_a_sibling_hit_from_sumcache)
{
	struct resp r;
	char url[256], nobody[256];

	struct node *a = siblings_up();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/in-sumcache?"
	    "max_age=600", env.oport);
	snprintf(nobody, sizeof(nobody), "http://127.0.0.1:%d/obj/in-nobody?"
	    "max_age=600", env.oport);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);

	squid_get(url, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "in-sumcache") != NULL);
	resp_free(&r);
	/* nobody has this one: sumcache says MISS and Squid goes direct */
	squid_get(nobody, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);

	cr_expect(squid_logged(url, "SIBLING_HIT/127.0.0.1"), "Squid's "
	    "access.log shows the object came from sumcache; see %s",
	    sq.access_log);
	cr_expect_eq(origin_count(&env, "/obj/in-sumcache", NULL), 1);
	cr_expect(squid_logged(nobody, "HIER_DIRECT/127.0.0.1"), "see %s",
	    sq.access_log);
	cr_expect_eq(node_metric(a, "sumcache_icp_answers_total{result="
	    "\"hit\"}"), 1);
	cr_expect_eq(node_metric(a, "sumcache_icp_answers_total{result="
	    "\"miss\"}"), 1);
	double queries = node_metric(a, "sumcache_interproxy_messages_total{"
	    "direction=\"received\",type=\"icp_query\",peer=\"squid\"}");
	cr_expect_eq(queries, 2, "Squid asked %g times", queries);
}

Test(squid_icp, sumcache_gets_a_remote_hit_from_squid)
{
	struct resp r;
	char url[256];

	struct node *a = siblings_up();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/in-squid?"
	    "max_age=600", env.oport);
	squid_get(url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert(squid_logged(url, "HIER_DIRECT/127.0.0.1"));

	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "in-squid") != NULL);
	resp_free(&r);
	cr_expect_eq(node_metric(a, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);
	cr_expect_eq(origin_count(&env, "/obj/in-squid", NULL), 1);
	/* Squid's side: it answered our query HIT and served us from cache */
	cr_expect(squid_logged("UDP_HIT/000", url), "see %s", sq.access_log);
	cr_expect(squid_logged("127.0.0.1 TCP_MEM_HIT/200", url) ||
	    squid_logged("127.0.0.1 TCP_HIT/200", url), "see %s",
	    sq.access_log);
}
