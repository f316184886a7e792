/*
 * Summary Cache between real sumcache processes on loopback: publication,
 * summary-directed forwarding, dead peers and hostile peer messages.
 * Which claims a miss follows, and false hits, are test_peer_claims.c's.
 * One file because its tests share the means of speaking as a peer (a
 * Summary signed with the cluster key, posted from a chosen address, a
 * node whose peer never speaks); the next test of another subject that
 * needs them should take them to a harness file of their own first.
 */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "families.h"
#include "metric.h"
#include "peerstats.h"
#include "psum.h"
#include "publisher.h"
#include "wire.h"
#include "wiretest.h"

TestSuite(peers, .init = cluster_suite_up, .fini = cluster_suite_down,
    .timeout = 90);

static void
obj_url(char *buf, size_t len, const char *name, int max_age)
{
	snprintf(buf, len, "http://127.0.0.1:%d/obj/%s?max_age=%d", CE.oport,
	    name, max_age);
}

Test(peers, remote_hit_through_the_summary_and_no_query_for_misses)
{
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 3, NULL, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1], *c = &CL.nodes[2];
	obj_url(url, sizeof(url), "shared", 600);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	node_wait_synced(a, b);

	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "shared") != NULL);
	resp_free(&r);
	cr_expect_eq(origin_count(&CE, "/obj/shared", NULL), 1,
	    "the origin saw the object once");
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);
	cr_expect_eq(node_sent(b, "peer_request", "a"), 1);
	/* A served B's request: a peer's, not a client's (A's one client
	 * request was its miss) */
	cr_expect_eq(node_metric(a, "sumcache_peer_requests_served_total{"
	    "result=\"hit\"}"), 1);
	cr_expect_eq(node_metric(a, "sumcache_requests_total{result=\""
	    "local_hit\"}"), 0);
	cr_expect_eq(node_metric(a, "sumcache_requests_total{result=\""
	    "miss\"}"), 1);
	cr_expect(harness_file_has(b->log, "TCP_MISS/200", "CD_SIBLING_HIT/a ",
	    3000), "B's access log names A as the source");
	cr_expect_eq(node_sent(b, "peer_request", "c"), 0,
	    "C's summary does not hold it, so C is not asked");
	cr_expect_eq(node_metric(c, "sumcache_requests_total{result=\"miss\"}")
	    + node_metric(c, "sumcache_requests_total{result=\"error\"}"), 0);
	/* B stored the remote hit: a second request is local */
	node_get(b, url, &r);
	resp_free(&r);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "local_hit\"}"), 1);

	/* a miss nobody has: straight to the origin, no peer asked */
	obj_url(url, sizeof(url), "nobody", 600);
	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(origin_count(&CE, "/obj/nobody", NULL), 1);
	cr_expect(harness_file_has(b->log, "/obj/nobody",
	    "HIER_DIRECT/127.0.0.1 ", 3000));
	cr_expect_eq(node_sent(b, "peer_request", "a") +
	    node_sent(b, "peer_request", "c"), 1, "only the one remote hit");
}

/* What the publisher's rule gives: publish when the changes since the
 * last publication reach max(1, threshold * cached objects). */
static int
expected_publications(int inserts, double threshold)
{
	int pubs = 0, changes = 0;

	for (int entries = 1; entries <= inserts; entries++) {
		double t = threshold * entries;
		uint64_t need = t < 1 ? 1 : (uint64_t)t;
		if ((uint64_t)++changes >= need) {
			pubs++;
			changes = 0;
		}
	}
	return pubs;
}

Test(peers, threshold_sets_publications_and_receivers_agree)
{
	const char *opts[] = {"summary_threshold=10%",
	    "summary_max_interval=10m", NULL};
	struct resp r;
	char url[256], series[128];
	const int n = 60;

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	double base = node_metric(a, "sumcache_summary_publications_total"
	    "{kind=\"delta\"}") + node_metric(a,
	    "sumcache_summary_publications_total{kind=\"full\"}");
	double last_seq = node_metric(a, "sumcache_summary_sequence");
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%d", i);
		obj_url(url, sizeof(url), name, 600);
		node_get(a, url, &r);
		resp_free(&r);
		double seq = node_metric(a, "sumcache_summary_sequence");
		if (seq == last_seq)
			continue;
		last_seq = seq;
		/* after each publication B holds exactly A's array */
		node_wait_synced(a, b);
		snprintf(series, sizeof(series),
		    "sumcache_peer_summary_checksum{peer=\"%s\"}", a->name);
		cr_assert_eq(node_metric(b, series),
		    node_metric(a, "sumcache_summary_checksum"),
		    "checksums differ after publication %g", seq);
	}
	node_wait_synced(a, b);  /* the last insert published, if due */
	double pubs = node_metric(a, "sumcache_summary_publications_total"
	    "{kind=\"delta\"}") + node_metric(a,
	    "sumcache_summary_publications_total{kind=\"full\"}") - base;
	cr_expect_eq(pubs, expected_publications(n, 0.10),
	    "%g publications, %d expected", pubs,
	    expected_publications(n, 0.10));
	cr_expect_eq(node_metric(a, "sumcache_summary_entries"), n);
}

/* A's publications so far, deltas and fulls */
static double
publications(struct node *a)
{
	return node_metric(a, "sumcache_summary_publications_total"
	    "{kind=\"delta\"}") + node_metric(a,
	    "sumcache_summary_publications_total{kind=\"full\"}");
}

/* A fetches objects NAME0 .. NAME(n-1) */
static void
fetch_all(struct node *a, const char *name, int from, int n)
{
	struct resp r;
	char url[256], obj[32];

	for (int i = from; i < from + n; i++) {
		snprintf(obj, sizeof(obj), "%s%d", name, i);
		obj_url(url, sizeof(url), obj, 600);
		node_get(a, url, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
}

Test(peers, auto_threshold_waits_while_no_peer_asks_and_not_once_they_do)
{
	const char *opts[] = {"summary_max_interval=10m", NULL};
	const int n = 200;

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	double base = publications(a);
	/* nobody asks A for anything: its changes cost the peers nothing
	 * yet, so it publishes at the ceiling (10 % of its keys) alone: at
	 * most as often as that (fewer when inserts on several workers
	 * meet in one of home's loop turns, as at workers 4) */
	fetch_all(a, "w", 0, n);
	/* and then to its next publication, so that few changes wait */
	int more = n;
	for (double at = publications(a); publications(a) == at &&
	    more < 2 * n; more++)
		fetch_all(a, "w", more, 1);
	node_wait_synced(a, b);
	double pubs = publications(a) - base;
	cr_assert(pubs >= 1 && pubs <= expected_publications(more,
	    PUB_AUTO_CEILING), "%g publications, %d at the ceiling (1 %%: "
	    "%d)", pubs, expected_publications(more, PUB_AUTO_CEILING),
	    expected_publications(more, 0.01));
	double before = publications(a);
	fetch_all(a, "x", 0, 5);
	usleep(300 * 1000);
	cr_assert_eq(publications(a), before, "5 changes, nobody asks: "
	    "they wait");
	/* B's clients want what A holds: remote hits from A */
	double hits = node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}");
	fetch_all(b, "w", 0, 50);
	cr_assert_geq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}") - hits, 40, "B found A's copies");
	/* now A's next change is worth telling at once */
	const char *deltas = "sumcache_summary_publications_total"
	    "{kind=\"delta\"}";
	double sent = node_metric(a, deltas);
	fetch_all(a, "x", 5, 1);
	cr_assert_geq(node_wait_metric(a, deltas, sent + 1, 5000), sent + 1,
	    "A did not publish after its peer asked");
	node_wait_synced(a, b);
}

/* Auto weighs what pending changes lose the peers against the requests
 * the node's own clients send it (publisher.h, the bound): the node
 * counts them in its workers' counters and the exchange reads them. A
 * node whose clients are busy and whose peer asked once holds a few
 * changes back; one whose count never reached the publisher would take
 * its clients for idle and publish them at once. */
Test(peers, auto_weighs_a_peers_ask_against_the_nodes_own_requests)
{
	const char *opts[] = {"summary_max_interval=10m", NULL};
	const int n = 400, changes = 5;
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	fetch_all(a, "c", 0, n);
	/* to A's next publication, so that nothing waits */
	int more = n;
	for (double at = publications(a); publications(a) == at &&
	    more < 2 * n; more++)
		fetch_all(a, "c", more, 1);
	node_wait_synced(a, b);
	/* B asks A once: a remote hit */
	obj_url(url, sizeof(url), "c0", 600);
	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(node_sent(b, "peer_request", a->name), 1,
	    "B asked A for c0");
	/* A's clients add a few changes, over the floor (0.5 % of A's
	 * keys). Over the run, one ask among ~400 keys: by the bound the 5
	 * changes lose the peers 5 / 400 of that ask's pace, where 0.35 %
	 * of A's own 400-odd requests is 1.4 (100x more); by the price they
	 * are worth 1 x 5 x 128 / (2 x 400) = 0.8 of a message even had the
	 * whole run passed since the last publication. Had A's own
	 * requests not reached the publisher, the bound would see no
	 * clients at all and publish at once. */
	double before = publications(a);
	fetch_all(a, "d", 0, changes);
	usleep(500 * 1000);
	cr_assert_geq(node_metric(a, "sumcache_summary_pending_changes"),
	    changes);
	cr_assert_eq(publications(a), before, "A published %d changes after "
	    "one ask, as if its own clients were idle", changes);
}

Test(peers, dead_peer_is_skipped_then_pulled_when_back)
{
	const char *opts[] = {"peer_connect_timeout=200ms", NULL};
	struct resp r;
	char url[256], series[128];

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	obj_url(url, sizeof(url), "onb", 600);
	node_get(b, url, &r);
	resp_free(&r);
	node_wait_synced(b, a);
	snprintf(series, sizeof(series), "sumcache_peer_up{peer=\"%s\"}",
	    b->name);
	cr_assert_eq(node_metric(a, series), 1);
	/* and A's own summary, pushed when B came up, has reached it: a
	 * push cut by the kill would mark B down before it is asked */
	cr_assert_geq(node_wait_metric(a, "sumcache_interproxy_messages_total"
	    "{direction=\"sent\",type=\"summary_full\",peer=\"b\"}", 1,
	    5000), 1);

	/* B dies with the object still in A's copy of its summary */
	harness_stop(b->pid, SIGKILL, 5000);
	b->pid = 0;
	for (int i = 0; i < 5; i++) {
		node_get(a, url, &r);
		cr_assert_eq(r.status, 200, "request %d failed", i);
		resp_free(&r);
	}
	cr_expect_eq(node_metric(a, series), 0, "B is marked down");
	cr_expect_eq(node_sent(a, "peer_request", "b"), 1,
	    "a down peer is not asked again");

	/* back on the same port with an empty cache: A pulls it again */
	node_start(&CE, &CL, 1);
	cr_assert_eq(node_wait_metric(a, series, 1, 10000), 1,
	    "B never came back up at A");
	/* the restarted B pulled A's summary: counted at both ends, the
	 * summary's bytes as sent by A */
	cr_expect_geq(node_sent(b, "summary_pull", "a"), 1);
	cr_expect_geq(node_metric(a, "sumcache_interproxy_messages_total{"
	    "direction=\"received\",type=\"summary_pull\",peer=\"b\"}"), 2,
	    "a pull before the kill and one after");
	cr_expect_gt(node_metric(a, "sumcache_interproxy_bytes_total{"
	    "direction=\"sent\",type=\"summary_pull\",peer=\"b\"}"), 0);
	obj_url(url, sizeof(url), "onb2", 600);
	node_get(b, url, &r);
	resp_free(&r);
	node_wait_synced(b, a);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_metric(a, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1, "B is used again");
}

/* POSTs body to port from source address src; returns the status. */
static int
post_summary_paced(const char *src, int port, const void *body, size_t len,
    long declared, int gap_ms)
{
	struct sockaddr_in me = {.sin_family = AF_INET};
	struct sockaddr_in to = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port)};
	char head[256], buf[4096];
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t got = 0;

	inet_pton(AF_INET, src, &me.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	cr_assert(bind(fd, (struct sockaddr *)&me, sizeof(me)) == 0);
	cr_assert(connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0);
	int hl = snprintf(head, sizeof(head), "POST /sumcache/v1/summary "
	    "HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
	    "Content-Length: %ld\r\n\r\n", declared < 0 ? (long)len :
	    declared);
	cr_assert(send(fd, head, (size_t)hl, MSG_NOSIGNAL) == hl);
	if (gap_ms > 0)
		usleep((useconds_t)gap_ms * 1000);
	if (len > 0)
		send(fd, body, len, MSG_NOSIGNAL);
	struct pollfd pfd = {fd, POLLIN, 0};
	while (got < sizeof(buf) - 1 && poll(&pfd, 1, 5000) > 0) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memmem(buf, got, "\r\n\r\n", 4))
			break;
	}
	close(fd);
	buf[got] = '\0';
	int status = 0;
	sscanf(buf, "HTTP/1.1 %d", &status);
	return status;
}

/* POSTs body to /sumcache/v1/summary from address src; declared >= 0 lies
 * about its length. Returns the response's status. */
static int
post_summary(const char *src, int port, const void *body, size_t len,
    long declared)
{
	return post_summary_paced(src, port, body, len, declared, 0);
}

#define ALL_BITS UINT64_MAX

/* A full summary from "sender" with one bit set at position bit, or every
 * bit (ALL_BITS: a summary that claims every URL). */
static void
make_full(const char *sender, uint64_t epoch, uint64_t seq, uint64_t bit,
    const char *key, struct sum_buf *out)
{
	const uint64_t m = 4096;
	uint64_t bits[4096 / 64] = {0};
	struct sum_buf payload = {0};

	if (bit == ALL_BITS)
		memset(bits, 0xff, sizeof(bits));
	else
		bits[bit / 64] |= 1ull << (bit % 64);
	cr_assert_eq(sum_encode_full(bits, m, &payload), 0);
	struct wire_summary w = {
		.epoch = epoch, .seq = seq, .scheme = SUM_XXH3, .m = m, .k = 4,
		.full = true, .payload = payload.p,
		.payload_len = payload.len, .checksum = sum_checksum(bits, m),
		.entries = 1,
	};
	snprintf(w.sender, sizeof(w.sender), "%s", sender);
	cr_assert_eq(wire_encode(&w, (const uint8_t *)key, strlen(key), out),
	    0);
	free(payload.p);
}

/* The cluster key as the nodes read it (without the newline). */
static void
read_key(char *key, size_t len)
{
	FILE *f = fopen(CL.key_file, "r");

	cr_assert_not_null(f);
	cr_assert(fgets(key, (int)len, f) != NULL);
	fclose(f);
	key[strcspn(key, "\n")] = '\0';
}

static double
rejected(const struct node *nd, const char *reason)
{
	char series[128];

	snprintf(series, sizeof(series),
	    "sumcache_summary_rejected_total{reason=\"%s\"}", reason);
	return node_metric(nd, series);
}

/* A listening socket that never accepts: connects succeed (the kernel
 * completes them), requests are never answered. */
static int
black_hole(int *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	cr_assert(listen(fd, 64) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* One node whose peer z never speaks (*hole: its socket), so that every
 * refusal a test counts is one of its own, none from start-up traffic;
 * key: the cluster key, to sign in z's name. */
static struct node *
node_with_silent_peer(char *key, size_t keylen, int *hole)
{
	/* the cluster keeps its options: they outlive this call */
	static char zpeer[64];
	static const char *opts[] = {zpeer, NULL};
	int zport;

	*hole = black_hole(&zport);
	snprintf(zpeer, sizeof(zpeer), "peer=z 127.0.0.1:%d", zport);
	cluster_start(&CE, &CL, 1, opts, NULL);
	read_key(key, keylen);
	return &CL.nodes[0];
}

Test(peers, hostile_messages_are_refused_and_change_nothing)
{
	char key[128], series[128];
	int hole;
	struct node *b = node_with_silent_peer(key, sizeof(key), &hole);
	const char *reasons[] = {"old", "duplicate", "bad_mac", "not_peer",
	    "too_big", "malformed"};
	double before[6];
	for (int i = 0; i < 6; i++)
		before[i] = rejected(b, reasons[i]);
#define REJECTED(i) (rejected(b, reasons[i]) - before[i])
	const uint64_t ep = 1000;

	/* a genuine message in z's name (the test knows the cluster key) */
	struct sum_buf good = {0};
	make_full("z", ep, 1000, 77, key, &good);
	cr_assert_eq(post_summary("127.0.0.1", b->port, good.p, good.len, -1),
	    204);
	snprintf(series, sizeof(series),
	    "sumcache_peer_summary_checksum{peer=\"z\"}");
	double held = node_metric(b, series);
	cr_assert_gt(held, 0);

	/* replayed */
	cr_expect_eq(post_summary("127.0.0.1", b->port, good.p, good.len, -1),
	    409);
	struct sum_buf older = {0};
	make_full("z", ep, 999, 78, key, &older);
	cr_expect_eq(post_summary("127.0.0.1", b->port, older.p, older.len,
	    -1), 409);
	cr_expect_eq(REJECTED(0), 1);
	cr_expect_eq(REJECTED(1), 1);

	/* wrong key */
	struct sum_buf forged = {0};
	make_full("z", ep, 2000, 79,
	    "not-the-cluster-key-at-all-0000", &forged);
	cr_expect_eq(post_summary("127.0.0.1", b->port, forged.p, forged.len,
	    -1), 403);
	cr_expect_eq(REJECTED(2), 1);

	/* an unknown sender, correctly signed */
	struct sum_buf stranger = {0};
	make_full("zed", ep, 2000, 79, key, &stranger);
	cr_expect_eq(post_summary("127.0.0.1", b->port, stranger.p,
	    stranger.len, -1), 403);
	cr_expect_eq(REJECTED(3), 1);

	/* from an address that is no peer's */
	cr_expect_eq(post_summary("127.0.0.2", b->port, good.p, good.len, -1),
	    403);
	cr_expect_eq(REJECTED(3), 2);

	/* every truncation, and a flipped byte anywhere */
	struct sum_buf next = {0};
	make_full("z", ep, 3000, 80, key, &next);
	int refused = 0;
	for (size_t cut = 1; cut < next.len; cut += 7) {
		int st = post_summary("127.0.0.1", b->port, next.p, cut, -1);
		refused += st == 400 || st == 403;
	}
	cr_expect_eq(refused, (int)((next.len - 2) / 7 + 1));
	for (size_t i = 0; i < next.len; i += 5) {
		next.p[i] ^= 0x20;
		int st = post_summary("127.0.0.1", b->port, next.p, next.len,
		    -1);
		cr_expect(st == 400 || st == 403, "byte %zu flipped: %d", i,
		    st);
		next.p[i] ^= 0x20;
	}

	/* oversized: refused on its declared length, before any body */
	cr_expect_eq(post_summary("127.0.0.1", b->port, NULL, 0,
	    (long)WIRE_MAX_BYTES + 1), 413);
	cr_expect_eq(REJECTED(4), 1);
	cr_expect_gt(REJECTED(5) + REJECTED(2), 10, "truncations and "
	    "corruptions are counted");

	cr_expect_eq(node_metric(b, series), held, "the held summary of A "
	    "changed");
	/* and B still serves */
	struct resp r;
	char url[256];
	obj_url(url, sizeof(url), "after", 600);
	node_get(b, url, &r);
	cr_expect_eq(r.status, 200);
	resp_free(&r);
	free(good.p);
	free(older.p);
	free(forged.p);
	free(stranger.p);
	free(next.p);
	close(hole);
}

/* A peer of version 2 (timed cells) or 1 (no deadlines) sends a payload
 * that means something else to us: refused with 426 before it is read,
 * counted, and the log says which version and what to do; what is held
 * of the peer stays. */
Test(peers, a_peer_of_an_older_version_is_refused_and_told_why)
{
	char key[128];
	int hole;
	struct node *b = node_with_silent_peer(key, sizeof(key), &hole);
	double before = rejected(b, "version");
	struct sum_buf good = {0};
	make_full("z", 1000, 1000, 77, key, &good);
	cr_assert_eq(post_summary("127.0.0.1", b->port, good.p, good.len, -1),
	    204);
	double held = node_metric(b, "sumcache_peer_summary_checksum"
	    "{peer=\"z\"}");

	struct sum_buf v2 = wiretest_versioned(2,
	    SUMCACHE__V1__KIND__KIND_TIMED_FULL, 4, "z", key, strlen(key));
	cr_expect_eq(post_summary("127.0.0.1", b->port, v2.p, v2.len, -1),
	    426);
	struct sum_buf v1 = wiretest_versioned(0, SUMCACHE__V1__KIND__KIND_FULL,
	    4, "z", key, strlen(key));
	cr_expect_eq(post_summary("127.0.0.1", b->port, v1.p, v1.len, -1),
	    426);
	cr_expect_eq(rejected(b, "version") - before, 2);
	cr_expect(harness_file_has(b->out, "z sends summaries of version 2",
	    "reads version 3", 3000), "the log names the versions");
	cr_expect_eq(node_metric(b, "sumcache_peer_summary_checksum"
	    "{peer=\"z\"}"), held, "what is held of z stays");
	free(good.p);
	free(v2.p);
	free(v1.p);
	close(hole);
}

Test(peers, outgrown_filter_is_rebuilt_larger_in_a_new_epoch, .timeout = 120)
{
	/* 2 MB of cache_mem: a filter sized for 1,024 objects (its
	 * floor), which 1,300 small ones outgrow */
	const char *opts[] = {"summary_threshold=5%", "cache_mem=2MB",
	    "max_object_size=64KB",
	    "summary_max_interval=1s", NULL};
	struct resp r;
	char url[256], series[128];
	const int n = 1300;

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	double bits = node_metric(a, "sumcache_summary_bits");
	double epoch = node_metric(a, "sumcache_summary_epoch");
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "g%d", i);
		obj_url(url, sizeof(url), name, 600);
		node_get(a, url, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	cr_expect_eq(node_wait_metric(a, "sumcache_summary_rebuilds_total", 1,
	    5000), 1);
	/* sized for twice the keys: twice the slots, or more */
	cr_expect_geq(node_metric(a, "sumcache_summary_bits"), 2 * bits);
	cr_expect_gt(node_metric(a, "sumcache_summary_epoch"), epoch);
	cr_expect_eq(node_metric(a, "sumcache_summary_entries"), n,
	    "every object counted once in the new filter");
	cr_expect_eq(node_metric(a, "sumcache_summary_bad_removes_total"), 0);
	/* the last changes go out within summary_max_interval */
	for (int waited = 0; waited < 5000 && node_metric(a,
	    "sumcache_summary_pending_changes") > 0; waited += 50)
		usleep(50000);
	cr_assert_eq(node_metric(a, "sumcache_summary_pending_changes"), 0);
	/* B follows into the new epoch and agrees bit for bit */
	node_wait_synced(a, b);
	snprintf(series, sizeof(series),
	    "sumcache_peer_summary_checksum{peer=\"%s\"}", a->name);
	cr_expect_eq(node_metric(b, series),
	    node_metric(a, "sumcache_summary_checksum"));
	/* what each holds: B, A's table packed at 15 bytes a bucket of 4
	 * slots (and a header); A, its slots twice (as they are and as
	 * published), 4 bytes each, and a bit a slot for those changed */
	double slots = node_metric(a, "sumcache_summary_bits");
	snprintf(series, sizeof(series),
	    "sumcache_peer_summary_memory_bytes{peer=\"%s\"}", a->name);
	double held = node_metric(b, series);
	cr_expect_geq(held, slots / 4 * 15);
	cr_expect_leq(held, slots / 4 * 15 + 256, "%.0f bytes for %.0f "
	    "slots", held, slots);
	double own = node_metric(a, "sumcache_summary_memory_bytes");
	cr_expect_geq(own, slots * 8);
	cr_expect_leq(own, slots * 8 + slots / 8 + 8 * 1024 + 256);
	/* objects from before and after the rebuild are remote hits */
	obj_url(url, sizeof(url), "g0", 600);
	node_get(b, url, &r);
	resp_free(&r);
	obj_url(url, sizeof(url), "g1299", 600);
	node_get(b, url, &r);
	resp_free(&r);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 2);
}

Test(peers, proxy_only_peer_hits_are_not_stored)
{
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 2, NULL, "proxy_only");
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	obj_url(url, sizeof(url), "po", 600);
	node_get(a, url, &r);
	resp_free(&r);
	node_wait_synced(a, b);
	for (int i = 0; i < 2; i++) {
		node_get(b, url, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 2, "both answered by A");
	cr_expect_eq(node_metric(b, "sumcache_cache_objects"), 0);
	cr_expect_eq(origin_count(&CE, "/obj/po", NULL), 1);
}

Test(peers, squid_md5_summaries_between_peers)
{
	const char *opts[] = {"summary_hash=squid-md5", NULL};
	struct resp r;
	char url[256];

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	obj_url(url, sizeof(url), "md5", 600);
	node_get(a, url, &r);
	resp_free(&r);
	node_wait_synced(a, b);
	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);
	cr_expect_eq(origin_count(&CE, "/obj/md5", NULL), 1);
}

/* The body of a summary POST arriving in a read of its own (after the
 * head) is answered from the read handler, which then must not touch the
 * finished transaction (ASan caught it doing so). */
Test(peers, summary_body_arriving_after_its_head)
{
	int zport, hole = black_hole(&zport);
	char zpeer[64], key[128];
	snprintf(zpeer, sizeof(zpeer), "peer=z 127.0.0.1:%d", zport);
	const char *opts[] = {zpeer, NULL};

	cluster_start(&CE, &CL, 1, opts, NULL);
	struct node *a = &CL.nodes[0];
	read_key(key, sizeof(key));
	struct sum_buf all = {0};
	make_full("z", 1, 1, 7, key, &all);
	cr_expect_eq(post_summary_paced("127.0.0.1", a->port, all.p, all.len,
	    -1, 200), 204);
	free(all.p);
	cr_expect_eq(node_metric(a, "sumcache_peer_summary_entries{peer="
	    "\"z\"}"), 1, "the summary was taken");
	cr_expect_eq(node_metric(a, "sumcache_peer_up{peer=\"z\"}"), 1);
	close(hole);
}

Test(peers, silent_peer_costs_one_timeout_and_is_marked_down)
{
	int zport, hole = black_hole(&zport);
	char zpeer[64], key[128], url[256];
	snprintf(zpeer, sizeof(zpeer), "peer=z 127.0.0.1:%d", zport);
	const char *opts[] = {zpeer, "peer_timeout=1s", NULL};
	struct resp r;

	/* one node whose only peer is the black hole */
	cluster_start(&CE, &CL, 1, opts, NULL);
	struct node *a = &CL.nodes[0];
	read_key(key, sizeof(key));
	/* z "claims" every URL: a summary in its name (the test knows the
	 * key) brings it up at A */
	struct sum_buf all = {0};
	make_full("z", 1, 1, ALL_BITS, key, &all);
	cr_assert_eq(post_summary("127.0.0.1", a->port, all.p, all.len, -1),
	    204);
	free(all.p);
	cr_assert_eq(node_metric(a, "sumcache_peer_up{peer=\"z\"}"), 1);

	obj_url(url, sizeof(url), "hole", 600);
	node_get(a, url, &r);
	cr_assert_eq(r.status, 200, "a silent peer never fails a request");
	cr_assert(strstr(r.body, "hole") != NULL);
	resp_free(&r);
	cr_expect_eq(node_sent(a, "peer_request", "z"), 1);
	cr_expect_eq(node_metric(a, "sumcache_peer_up{peer=\"z\"}"), 0);
	cr_expect_eq(node_metric(a, "sumcache_peer_downs_total{peer=\"z\"}"),
	    1);
	/* down: the next miss goes straight to the origin */
	obj_url(url, sizeof(url), "hole2", 600);
	node_get(a, url, &r);
	cr_expect_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_sent(a, "peer_request", "z"), 1);
	close(hole);
}

/* Every family a node exports is declared in PROXY_FAMILIES or
 * PEER_FAMILIES (so in proxy/README.md's list), and has HELP and TYPE
 * lines before its samples. */
static void
check_metrics_declared(const struct node *nd)
{
	struct resp r;
	char url[128];

	snprintf(url, sizeof(url), "http://%s:%d/metrics", nd->host, nd->port);
	http_request(0, "GET", url, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	char *text = strdup(r.body);
	int families = 0, samples = 0;
	char help[128] = "", type[128] = "";
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "# HELP ", 7) == 0) {
			sscanf(line + 7, "%127s", help);
			families++;
			bool known = false;
			for (int f = 0; f < MF_COUNT; f++)
				known |= strcmp(proxy_families[f].name, help) == 0;
			for (int f = 0; f < PF_COUNT; f++)
				known |= strcmp(peer_families[f].name, help) == 0;
			cr_assert(known, "%s is in neither PROXY_FAMILIES nor "
			    "PEER_FAMILIES", help);
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			sscanf(line + 7, "%127s", type);
			cr_assert_str_eq(type, help, "TYPE without its HELP");
			continue;
		}
		size_t n = strcspn(line, "{ ");
		cr_assert(strlen(help) == n && strncmp(line, help, n) == 0,
		    "%s: not under its own HELP (%s)", line, help);
		samples++;
	}
	cr_assert(families > 40 && samples > families, "%d families, %d "
	    "samples", families, samples);
	free(text);
	resp_free(&r);
}

Test(peers, every_exported_family_is_declared_with_help)
{
	char url[256];
	struct resp r;

	cluster_start(&CE, &CL, 2, NULL, NULL);
	obj_url(url, sizeof(url), "declared", 600);
	node_get(&CL.nodes[0], url, &r);
	resp_free(&r);
	node_wait_synced(&CL.nodes[0], &CL.nodes[1]);
	check_metrics_declared(&CL.nodes[0]);
	check_metrics_declared(&CL.nodes[1]);
}
