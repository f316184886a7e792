/*
 * ICP between real sumcache nodes on loopback (sharing icp): remote hits
 * chosen by ICP, misses to the origin once every peer said no, a dead
 * peer, answers for objects on disk only, and datagrams that are wrong
 * in every way the decoder knows.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "icp.h"

TestSuite(icp_peers, .init = cluster_suite_up, .fini = cluster_suite_down,
    .timeout = 90);

static void
icp_cluster(int n)
{
	cluster_init(&CE, &CL, n, NULL, NULL);
	CL.icp = true;
	for (int i = 0; i < n; i++)
		node_start(&CE, &CL, i);
}

static double
msgs(const struct node *nd, const char *dir, const char *type,
    const char *peer)
{
	char series[200];

	snprintf(series, sizeof(series), "sumcache_interproxy_messages_total"
	    "{direction=\"%s\",type=\"%s\",peer=\"%s\"}", dir, type, peer);
	return node_metric(nd, series);
}

/*
 * Sends one datagram from src_ip to 127.0.0.1:port and waits up to ms
 * for one back. Returns its length, or -1 when nothing came.
 */
static ssize_t
udp_exchange(const char *src_ip, int port, const void *msg, size_t len,
    uint8_t *reply, size_t cap, int ms)
{
	struct sockaddr_in src = {.sin_family = AF_INET};
	struct sockaddr_in dst = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	inet_pton(AF_INET, src_ip, &src.sin_addr);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0);
	cr_assert(sendto(fd, msg, len, 0, (struct sockaddr *)&dst,
	    sizeof(dst)) == (ssize_t)len);
	struct pollfd pfd = {fd, POLLIN, 0};
	ssize_t n = -1;
	if (poll(&pfd, 1, ms) > 0)
		n = recv(fd, reply, cap, 0);
	close(fd);
	return n;
}

Test(icp_peers, first_hit_wins_and_misses_go_to_the_origin)
{
	struct resp r;
	char url[256];

	icp_cluster(3);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1], *c = &CL.nodes[2];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/icp-shared?"
	    "max_age=600", CE.oport);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(msgs(a, "sent", "icp_query", "b") + msgs(a, "sent",
	    "icp_query", "c"), 2, "a asked both before the origin");

	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "icp-shared") != NULL);
	resp_free(&r);
	cr_expect_eq(origin_count(&CE, "/obj/icp-shared", NULL), 1);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);
	cr_expect(harness_file_has(b->log, "TCP_MISS/200", "SIBLING_HIT/a ",
	    3000), "b's access log names the ICP sibling");
	cr_expect_eq(msgs(b, "sent", "icp_query", "a"), 1);
	cr_expect_eq(msgs(b, "sent", "icp_query", "c"), 1);
	cr_expect_eq(msgs(a, "received", "icp_query", "b"), 1);
	cr_expect_eq(msgs(a, "sent", "icp_reply", "b"), 1);
	cr_expect_eq(node_metric(a, "sumcache_icp_answers_total{result=\""
	    "hit\"}"), 1);
	cr_expect_eq(msgs(b, "sent", "peer_request", "a"), 1);
	cr_expect_eq(msgs(b, "sent", "peer_request", "c"), 0);

	/* nobody has it: both say MISS, then the origin */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/icp-nobody?"
	    "max_age=600", CE.oport);
	node_get(c, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(origin_count(&CE, "/obj/icp-nobody", NULL), 1);
	cr_expect(harness_file_has(c->log, "/obj/icp-nobody",
	    "HIER_DIRECT/127.0.0.1 ", 3000));
	cr_expect_eq(msgs(c, "received", "icp_reply", "a") + msgs(c,
	    "received", "icp_reply", "b"), 2);
	cr_expect_eq(msgs(c, "sent", "peer_request", "a") + msgs(c, "sent",
	    "peer_request", "b"), 0);
	/* peers on one address are told apart by their ICP port */
	cr_expect_eq(msgs(a, "received", "icp_query", "b"), 1);
	cr_expect_eq(msgs(a, "received", "icp_query", "c"), 1);
}

Test(icp_peers, an_object_fresh_for_under_30s_is_a_miss)
{
	struct resp r;
	char url[256];

	icp_cluster(2);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/icp-brief?"
	    "max_age=20", CE.oport);
	node_get(a, url, &r);
	resp_free(&r);
	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_metric(a, "sumcache_icp_answers_total{result=\""
	    "miss\"}"), 1, "a holds it, fresh for 20 s only: MISS");
	cr_expect_eq(origin_count(&CE, "/obj/icp-brief", NULL), 2);
}

Test(icp_peers, dead_peer_costs_timeouts_then_is_down)
{
	struct resp r;
	char url[256];

	icp_cluster(2);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	node_stop(b);
	for (int i = 0; i < 4; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/icp-dead-%d"
		    "?max_age=600", CE.oport, i);
		node_get(a, url, &r);
		cr_assert_eq(r.status, 200, "a dead peer never fails a client");
		resp_free(&r);
	}
	cr_expect_eq(node_metric(a, "sumcache_peer_up{peer=\"b\"}"), 0);
	cr_expect_eq(node_metric(a, "sumcache_icp_timeouts_total"), 3,
	    "three silent queries, then b is not waited for");
	/* back: its answer to the next probe query brings it up */
	node_start(&CE, &CL, 1);
	sleep(11);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/icp-back?"
	    "max_age=600", CE.oport);
	node_get(a, url, &r);
	resp_free(&r);
	cr_expect(node_wait_metric(a, "sumcache_peer_up{peer=\"b\"}", 1,
	    3000) == 1, "b answered the probe and is up");
}

Test(icp_peers, malformed_datagrams_dropped_strangers_denied)
{
	uint8_t q[ICP_MAX], reply[ICP_MAX];
	const char *url = "http://127.0.0.1:1/x";

	icp_cluster(2);
	struct node *a = &CL.nodes[0];
	size_t n = icp_encode(q, ICP_OP_QUERY, 4242, url, strlen(url));
	ssize_t got = udp_exchange("127.0.0.1", a->icp_port, q, n, reply,
	    sizeof(reply), 2000);
	cr_assert_eq(got, (ssize_t)(20 + strlen(url) + 1), "a peer's "
	    "address gets an answer");
	struct icp_msg m;
	cr_assert_eq(icp_decode(reply, (size_t)got, &m), ICP_OK);
	cr_expect_eq(m.op, ICP_OP_MISS);
	cr_expect_eq(m.reqnum, 4242);
	cr_expect_eq(m.url_len, strlen(url));

	/* not a URL we could cache: ERR */
	n = icp_encode(q, ICP_OP_QUERY, 7, "ftp://x/", 8);
	got = udp_exchange("127.0.0.1", a->icp_port, q, n, reply,
	    sizeof(reply), 2000);
	cr_assert_gt(got, 0);
	cr_assert_eq(icp_decode(reply, (size_t)got, &m), ICP_OK);
	cr_expect_eq(m.op, ICP_OP_ERR);

	/* from an address that is no peer: DENIED */
	n = icp_encode(q, ICP_OP_QUERY, 8, url, strlen(url));
	got = udp_exchange("127.0.0.9", a->icp_port, q, n, reply,
	    sizeof(reply), 2000);
	cr_assert_gt(got, 0);
	cr_assert_eq(icp_decode(reply, (size_t)got, &m), ICP_OK);
	cr_expect_eq(m.op, ICP_OP_DENIED);
	cr_expect_eq(node_metric(a, "sumcache_icp_answers_total{result=\""
	    "denied\"}"), 1);

	/* each broken one: no answer, one count */
	/* keep: bytes sent (0: all, -1: all but the last) */
	static const struct { const char *reason; int keep, at, value; } bad[] = {
		{"short", 10, -1, 0},
		{"length", -1, -1, 0},          /* one byte less than declared */
		{"version", 0, 1, 3},
		{"opcode", 0, 0, 99},
		{"url", 0, -2, 'x'},            /* the NUL overwritten */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t b[ICP_MAX];
		n = icp_encode(b, ICP_OP_QUERY, 9, url, strlen(url));
		if (bad[i].at == -2)
			b[n - 1] = (uint8_t)bad[i].value;
		else if (bad[i].at >= 0)
			b[bad[i].at] = (uint8_t)bad[i].value;
		size_t len = bad[i].keep > 0 ? (size_t)bad[i].keep :
		    bad[i].keep < 0 ? n - 1 : n;
		got = udp_exchange("127.0.0.1", a->icp_port, b, len, reply,
		    sizeof(reply), 300);
		cr_expect_eq(got, -1, "%s: answered", bad[i].reason);
		char series[96];
		snprintf(series, sizeof(series), "sumcache_icp_dropped_total{"
		    "reason=\"%s\"}", bad[i].reason);
		cr_expect_eq(node_metric(a, series), 1, "%s", bad[i].reason);
	}
	/* and it still serves */
	struct resp r;
	char ourl[256];
	snprintf(ourl, sizeof(ourl), "http://127.0.0.1:%d/obj/after", CE.oport);
	node_get(a, ourl, &r);
	cr_expect_eq(r.status, 200);
	resp_free(&r);
}

/* The ICP answer for url from a, asked from a peer's address. */
static enum icp_op
ask(const struct node *a, const char *url, uint32_t reqnum)
{
	uint8_t q[ICP_MAX], reply[ICP_MAX];
	size_t n = icp_encode(q, ICP_OP_QUERY, reqnum, url, strlen(url));
	ssize_t got = udp_exchange("127.0.0.1", a->icp_port, q, n, reply,
	    sizeof(reply), 2000);
	struct icp_msg m;

	cr_assert_gt(got, 0, "no answer for %s", url);
	cr_assert_eq(icp_decode(reply, (size_t)got, &m), ICP_OK);
	cr_assert_eq(m.reqnum, reqnum);
	return m.op;
}

/* After a restart, what a holds is on its disk only: ICP answers from
 * the disk's index, and judges freshness by the record's head. */
Test(icp_peers, objects_on_disk_only_are_answered_from_the_disk)
{
	char fresh[256], brief[256], never[256];

	cluster_init(&CE, &CL, 2, NULL, NULL);
	CL.icp = true;
	CL.cache_dir_size = "32MB";
	for (int i = 0; i < 2; i++)
		node_start(&CE, &CL, i);
	struct node *a = &CL.nodes[0];
	snprintf(fresh, sizeof(fresh), "http://127.0.0.1:%d/obj/icp-disk?"
	    "max_age=600", CE.oport);
	snprintf(brief, sizeof(brief), "http://127.0.0.1:%d/obj/icp-disk-brief?"
	    "max_age=20", CE.oport);
	snprintf(never, sizeof(never), "http://127.0.0.1:%d/obj/icp-never",
	    CE.oport);
	struct resp r;
	node_get(a, fresh, &r);
	resp_free(&r);
	node_get(a, brief, &r);
	resp_free(&r);
	cr_assert_geq(node_wait_metric(a, "sumcache_disk_objects", 2, 10000),
	    2);
	node_stop(a);
	node_start(&CE, &CL, 0);
	cr_assert_geq(node_wait_metric(a, "sumcache_disk_objects", 2, 10000),
	    2);
	cr_assert_eq(node_metric(a, "sumcache_cache_objects"), 0,
	    "memory is empty after a restart");
	cr_expect_eq(ask(a, fresh, 11), ICP_OP_HIT);
	cr_expect_eq(ask(a, brief, 12), ICP_OP_MISS, "fresh for 20 s only");
	cr_expect_eq(ask(a, never, 13), ICP_OP_MISS);
}
