/*
 * Bytes a cache must never mix up, end to end: an origin that sends more
 * than its answer said, bodies that arrive slowly but steadily under a
 * short timeout, crowds on answers of unknown length or bound for the
 * disk. Each test was run against the code before its fix and failed
 * there.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

TestSuite(mixups, .init = env_up, .fini = env_down, .timeout = 120);

/* The body the test origin's /obj/NAME sends: NAME over and over. */
static bool
body_is(const struct resp *r, const char *name, size_t size)
{
	size_t nl = strlen(name);

	if (r->len != size)
		return false;
	for (size_t i = 0; i < size; i++)
		if (r->body[i] != name[i % nl])
			return false;
	return true;
}

/*
 * The origin answers /extra with Content-Length 1000 and then more: a
 * whole second response, or bytes that are none, with the body or a
 * moment later. The next request to that origin must get its own answer
 * (not the extra bytes, and not a 502), on a new connection, and the
 * cache must hold its own body under its URL. The requests share one
 * client connection, so that one worker (and its kept origin connection)
 * answers them at workers N.
 */
static void
next_answer_is_its_own(int after_ms, bool junk, const char *victim)
{
	char path[128], vpath[128];
	struct resp a, b, c;
	struct keepalive *k = keepalive_new();

	snprintf(path, sizeof(path), "/extra?size=1000&after=%d&junk=%d",
	    after_ms, junk);
	keepalive_get(k, &E, env_url(&E, path), &a);
	cr_assert_eq(a.status, 200);
	cr_assert(body_is(&a, "extra", 1000), "the first answer is its own");
	usleep((useconds_t)(after_ms + 300) * 1000);
	snprintf(vpath, sizeof(vpath), "/obj/%s?max_age=60&size=200", victim);
	keepalive_get(k, &E, env_url(&E, vpath), &b);
	cr_assert_eq(b.status, 200, "the next request got %ld", b.status);
	cr_assert(body_is(&b, victim, 200), "the next request got %zu bytes "
	    "not its own: %.*s", b.len, (int)(b.len < 40 ? b.len : 40),
	    b.body);
	cr_assert_eq(origin_count(&E, vpath, NULL), 1,
	    "the origin saw the next request");
	keepalive_get(k, &E, env_url(&E, vpath), &c);
	cr_assert_str_eq(resp_header(&c, "X-Cache"), "HIT from test-node");
	cr_assert(body_is(&c, victim, 200), "the cache holds the URL's own "
	    "body");
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
	keepalive_free(&k);
}

Test(mixups, a_second_response_behind_an_answer_is_never_read_as_the_next)
{
	next_answer_is_its_own(0, false, "at-once");
	next_answer_is_its_own(600, false, "later");
	/* the later one reached the kept connection: counted and logged */
	cr_assert_geq(proxy_metric(&E, "sumcache_upstream_excess_total"), 1);
	char out[300];
	snprintf(out, sizeof(out), "%s/sumcache.out", E.dir);
	cr_assert(harness_file_has(out, "bytes past the end of an answer",
	    "127.0.0.1", 2000), "the closed connection is logged");
}

Test(mixups, an_overlong_body_does_not_turn_the_next_answer_into_an_error)
{
	next_answer_is_its_own(0, true, "junk-at-once");
	next_answer_is_its_own(600, true, "junk-later");
	cr_assert_geq(proxy_metric(&E, "sumcache_upstream_excess_total"), 1);
}

/* ---- timeouts count silence ---- */

/* A body that keeps arriving, 300,000 bytes in ten parts 150 ms apart
 * (1.35 s), under a 500 ms origin_timeout: cacheable (read by the crowd
 * from the shared copy) or not (streamed to its one client), it comes
 * whole, is logged whole, and the cacheable one is a hit next. */
Test(mixups, origin_timeout_never_cuts_a_body_that_keeps_arriving)
{
	const char *opts[] = {"origin_timeout=500ms", NULL};
	const char *urls[] = {"/steady?size=300000&step=150&max_age=60",
	    "/steady?size=300000&step=150&n=nostore"};
	struct resp r;

	proxy_restart(&E, opts, SIGTERM);
	for (int i = 0; i < 2; i++) {
		proxy_get(&E, env_url(&E, urls[i]), NULL, &r);
		cr_assert_eq(r.status, 200);
		cr_assert(body_is(&r, "steady", 300000), "%s: %zu bytes of "
		    "300000", urls[i], r.len);
		resp_free(&r);
		cr_assert(harness_file_has(E.log, "TCP_MISS/200", urls[i],
		    2000), "%s logged whole", urls[i]);
	}
	proxy_get(&E, env_url(&E, urls[0]), NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert(body_is(&r, "steady", 300000));
	resp_free(&r);
	cr_assert_eq(proxy_metric(&E, "sumcache_origin_errors_total{cause="
	    "\"timeout\"}"), 0);
	cr_assert_eq(proxy_metric(&E, "sumcache_client_aborts_total"), 0);
}

/* The same body stopping after three parts is cut 500 ms into the
 * silence: the client gets a short answer and a close, the line says it
 * timed out (Squid's _TIMEDOUT), and it is counted as a timeout, not as a
 * client that left. */
Test(mixups, a_body_cut_by_its_timeout_is_logged_as_timed_out)
{
	const char *opts[] = {"origin_timeout=500ms", NULL};
	const char *urls[] = {"/steady?size=300000&step=100&stall=3&max_age=60",
	    "/steady?size=300000&step=100&stall=3"};

	proxy_restart(&E, opts, SIGTERM);
	for (int i = 0; i < 2; i++) {
		char req[256];
		bool closed;
		int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: "
		    "x\r\n\r\n", env_url(&E, urls[i]));
		char *got = raw_exchange(E.pport, req, (size_t)n, 3000,
		    &closed);
		cr_assert(closed, "%s: the cut answer ends in a close",
		    urls[i]);
		cr_assert(strstr(got, "Content-Length: 300000") != NULL);
		cr_assert_lt(strlen(got), 300000);
		free(got);
		cr_assert(harness_file_has(E.log, "TCP_MISS_TIMEDOUT/200",
		    urls[i], 2000), "%s logged as timed out", urls[i]);
	}
	cr_assert_eq(proxy_metric(&E, "sumcache_origin_errors_total{cause="
	    "\"timeout\"}"), 2);
	cr_assert_eq(proxy_metric(&E, "sumcache_client_aborts_total"), 0);
}

/* ---- a peer's body, under peer_timeout ---- */

static pid_t fake;

static void
peer_down(void)
{
	if (fake > 0)
		harness_stop(fake, SIGTERM, 5000);
	fake = 0;
	cluster_suite_down();
}

TestSuite(mixups_peer, .init = cluster_suite_up, .fini = peer_down,
    .timeout = 60);

/* Peer z claims every URL and sends 300,000 bytes in ten parts 150 ms
 * apart: twice in a row, under a 500 ms peer_timeout, the remote hit
 * arrives whole (today's node cut it at the timeout both times). */
Test(mixups_peer, peer_timeout_never_cuts_a_remote_hit_that_keeps_arriving)
{
	const char *opts[] = {"peer_timeout=500ms", NULL};
	struct node *a = node_with_fakepeer("slow", 150, 300000, opts, &fake);

	cr_assert_eq(node_wait_metric(a, "sumcache_peer_up{peer=\"z\"}", 1,
	    5000), 1);
	for (int i = 0; i < 2; i++) {
		struct resp r;
		char path[64];
		snprintf(path, sizeof(path), "/obj/remote%d?max_age=60", i);
		node_get(a, env_url(&CE, path), &r);
		cr_assert_eq(r.status, 200);
		cr_assert(body_is(&r, "slowpeer", 300000), "remote hit %d: "
		    "%zu bytes of 300000", i, r.len);
		resp_free(&r);
		cr_assert(harness_file_has(a->log, "TCP_MISS/200", path,
		    2000));
	}
	cr_assert_eq(node_sent(a, "peer_request", "z"), 2);
}

/* ---- bodies kept in files ---- */

/* A body of 300 KB is kept in a memfd and sent from it by reference: the
 * memfd is sealed, so another process with the node's rights (through
 * /proc) can neither cut nor change it, and the next hit is whole. */
Test(mixups, a_memory_body_cannot_be_cut_by_another_hand)
{
	const char *u = env_url(&E, "/obj/sealed?max_age=600&size=300000");
	char dir[64], link[512], path[600];
	struct resp r;
	int tried = 0;

	proxy_get(&E, u, NULL, &r);
	resp_free(&r);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)E.proxy);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	for (struct dirent *de; (de = readdir(d)) != NULL;) {
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "/memfd:sumcache-body", 20) != 0)
			continue;
		int fd = open(path, O_RDWR);
		cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
		cr_assert_eq(ftruncate(fd, 1000), -1, "the memfd was cut");
		cr_assert_eq(errno, EPERM);
		cr_assert_eq(pwrite(fd, "x", 1, 10), -1, "the memfd was "
		    "written");
		close(fd);
		tried++;
	}
	closedir(d);
	cr_assert_eq(tried, 1, "%d memfds", tried);
	proxy_get(&E, u, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert(body_is(&r, "sealed", 300000));
	resp_free(&r);
}

/* ---- what the log says ---- */

/*
 * A stale copy that stale-if-error allows answers when the origin resets
 * the revalidation: the log line says the client got the stale copy (it
 * said "answered 502" while every client got a stale 200). A fault of
 * another kind in the same second (a transfer coding the node cannot
 * decode) has its line too: one limit for all hid it.
 */
Test(mixups, a_stale_answer_after_a_reset_is_logged_as_what_the_client_got)
{
	const char *u = env_url(&E, "/obj/sie?cc=max-age=1,stale-if-error=60");
	struct resp r;
	char out[300];

	proxy_get(&E, u, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	usleep(1300 * 1000);
	http_request(0, "GET", env_url(&E, "/__drop?how=reset"), NULL, NULL,
	    0, false, &r);
	resp_free(&r);
	proxy_get(&E, env_url(&E, "/obj/sie?cc=max-age=1,stale-if-error=60"),
	    NULL, &r);
	cr_assert_eq(r.status, 200, "the stale copy answers");
	cr_assert(body_is(&r, "sie", 100));
	resp_free(&r);
	proxy_get(&E, env_url(&E, "/te?coding=foo"), NULL, &r);
	cr_assert_eq(r.status, 502);
	resp_free(&r);
	snprintf(out, sizeof(out), "%s/sumcache.out", E.dir);
	cr_assert(harness_file_has(out, "/obj/sie", "answered with the stale "
	    "copy (stale-if-error)", 2000), "the line does not say what the "
	    "client got");
	cr_assert(!harness_file_has(out, "/obj/sie", "answered 502", 0));
	cr_assert(harness_file_has(out, "cannot decode", "answered 502",
	    2000), "the second fault of the second was not logged");
}

/* The node restarted with opts (a cache_dir among them) and u's body on
 * its disk alone: fetched, the node restarted again. */
static void
only_on_disk(const char *const *opts, const char *u)
{
	struct resp r;

	proxy_restart(&E, opts, SIGTERM);
	proxy_get(&E, u, NULL, &r);
	resp_free(&r);
	cr_assert_geq(proxy_wait_metric(&E, "sumcache_disk_objects", 1, 5000),
	    1);
	proxy_restart(&E, opts, SIGTERM);
	cr_assert_geq(proxy_wait_metric(&E, "sumcache_disk_objects", 1, 10000),
	    1);
}

/* A client with a 4 KB receive buffer that asked for u and read its
 * first bytes, and reads no more: its socket. */
static int
slow_reader(const char *u)
{
	char req[300], buf[16384];
	int fd = harness_connect(E.pport), rcv = 4096;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
	    u);
	cr_assert_eq(send(fd, req, (size_t)n, 0), n);
	cr_assert_gt(recv(fd, buf, sizeof(buf), 0), 0);
	return fd;
}

/*
 * A body of 256 KB read back from disk waits, for its last bytes, until
 * the rest has left the host; its client resets the connection
 * meanwhile. The wait ends with the connection (it once woke again and
 * again on the dead socket, above the socket's own events, and the node
 * spun, serving nobody).
 */
Test(mixups, a_client_gone_while_its_disk_body_waits_costs_nothing)
{
	char dir[400];
	const char *opts[] = {"cache_mem=4MB", "max_memory_object_size=1MB",
	    dir, NULL};
	const char *u = env_url(&E, "/obj/waiter?max_age=600&size=262144");
	struct resp r;

	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 64MB", E.dir);
	only_on_disk(opts, u);
	for (int i = 0; i < 4; i++) {
		int fd = slow_reader(u);
		struct linger l = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(fd);   /* a reset */
	}
	usleep(300 * 1000);
	double cpu0 = harness_cpu_seconds(E.proxy);
	usleep(1000 * 1000);
	double spent = harness_cpu_seconds(E.proxy) - cpu0;
	fprintf(stderr, "figure: 4 clients gone while their disk bodies "
	    "waited: the node spent %.2f s of CPU in the next second\n", spent);
	cr_assert_lt(spent, 0.2, "the node spun");
	proxy_get(&E, u, NULL, &r);
	cr_assert(body_is(&r, "waiter", 262144));
	resp_free(&r);
}

/* The same body to a client that stops reading (its socket open): the
 * wait is bounded by idle_timeout, and counted as the client's abort. */
Test(mixups, a_client_that_stops_reading_a_disk_body_is_cut_at_idle_timeout)
{
	char dir[400];
	const char *opts[] = {"cache_mem=4MB", "max_memory_object_size=1MB",
	    "idle_timeout=1s", dir, NULL};
	const char *u = env_url(&E, "/obj/stopper?max_age=600&size=262144");

	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 64MB", E.dir);
	only_on_disk(opts, u);
	int fd = slow_reader(u);
	cr_assert_eq(proxy_wait_metric(&E, "sumcache_client_aborts_total", 1,
	    4000), 1, "the client that stopped reading was held");
	close(fd);
}
