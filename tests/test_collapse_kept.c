/*
 * Collapsed forwarding for every answer that is kept, whatever its
 * framing and wherever it is kept: a crowd on a chunked answer, on a body
 * streamed to the disk as it arrives, and on a chunked body too large for
 * memory (not kept after all: read through a window) costs the origin
 * one request, and every client gets every byte right. (Crowds on bodies
 * of known length in memory are test_collapse.c's.)
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static struct env e;

static void
down(void)
{
	env_stop(&e);
}

TestSuite(collapse_kept, .fini = down, .timeout = 180);

/* One client of a crowd, its answer checked as it arrives (no copy of
 * the body is kept: a crowd on a large one would not fit): its head,
 * then the body, which must be /obj/NAME's (NAME repeated), de-chunked
 * when it comes chunked. */
struct client {
	int fd;
	char head[8192];
	size_t hlen;
	bool head_done, chunked, ok;
	uint64_t body;           /* body bytes checked */
	uint64_t chunk_left;     /* of the chunk being read */
	char line[32];           /* a chunk-size line being read */
	size_t llen;
	bool in_crlf;            /* the CRLF after a chunk's data */
	bool last;               /* the last chunk came */
};

static bool
body_bytes(struct client *c, const char *name, const char *p, size_t n)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < n; i++)
		if (p[i] != name[(c->body + i) % nl])
			return false;
	c->body += n;
	return true;
}

/* Feeds chunked framing; false on a framing error or wrong bytes. */
static bool
chunked_bytes(struct client *c, const char *name, const char *p, size_t n)
{
	while (n > 0 && !c->last) {
		if (c->chunk_left > 0) {
			size_t k = n < c->chunk_left ? n : (size_t)c->chunk_left;
			if (!body_bytes(c, name, p, k))
				return false;
			c->chunk_left -= k;
			p += k;
			n -= k;
			c->in_crlf = c->chunk_left == 0;
			c->llen = 0;
			continue;
		}
		if (c->llen + 1 >= sizeof(c->line))
			return false;
		c->line[c->llen++] = *p++;
		n--;
		if (c->llen < 2 || c->line[c->llen - 1] != '\n')
			continue;
		c->line[c->llen] = '\0';
		if (c->in_crlf) {
			if (strcmp(c->line, "\r\n") != 0)
				return false;
			c->in_crlf = false;
			c->llen = 0;
			continue;
		}
		char *end;
		c->chunk_left = strtoull(c->line, &end, 16);
		if (end == c->line || *end != '\r')
			return false;
		c->llen = 0;
		c->last = c->chunk_left == 0;
	}
	return true;
}

static void
feed(struct client *c, const char *name, const char *p, size_t n)
{
	if (!c->head_done) {
		size_t k = n < sizeof(c->head) - 1 - c->hlen ? n :
		    sizeof(c->head) - 1 - c->hlen;
		memcpy(c->head + c->hlen, p, k);
		c->hlen += k;
		c->head[c->hlen] = '\0';
		char *end = strstr(c->head, "\r\n\r\n");
		if (end == NULL)
			return;
		c->head_done = true;
		c->ok = strncmp(c->head, "HTTP/1.1 200", 12) == 0;
		c->chunked = strstr(c->head, "Transfer-Encoding: chunked") !=
		    NULL;
		size_t used = (size_t)(end + 4 - c->head) - (c->hlen - k);
		p += used;
		n -= used;
	}
	if (c->ok)
		c->ok = c->chunked ? chunked_bytes(c, name, p, n) :
		    body_bytes(c, name, p, n);
}

/*
 * n clients at once GET u (HTTP/1.1; each ver10-th one HTTP/1.0, 0:
 * none), reading at most ms. Returns how many got a 200 whose body is
 * /obj/NAME's size bytes (framed whole: a chunked one's last chunk came,
 * a close-delimited one closed).
 */
static int
crowd(const char *u, int n, int ver10, const char *name, uint64_t size,
    int ms)
{
	struct client *c = calloc((size_t)n, sizeof(*c));
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	char buf[65536], req[512];
	int open = n, good = 0;

	for (int i = 0; i < n; i++) {
		c[i].fd = harness_connect(e.pport);
		int k = snprintf(req, sizeof(req), "GET %s HTTP/1.%d\r\nHost: "
		    "x\r\nConnection: close\r\n\r\n", u, ver10 > 0 &&
		    i % ver10 == ver10 - 1 ? 0 : 1);
		cr_assert_eq(send(c[i].fd, req, (size_t)k, MSG_NOSIGNAL), k);
	}
	long deadline = harness_now_ms() + ms;
	while (open > 0 && harness_now_ms() < deadline) {
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){c[i].fd, c[i].fd >= 0 ? POLLIN :
			    0, 0};
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (c[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP |
			    POLLERR)))
				continue;
			ssize_t r = recv(c[i].fd, buf, sizeof(buf), 0);
			if (r > 0) {
				feed(&c[i], name, buf, (size_t)r);
				continue;
			}
			close(c[i].fd);
			c[i].fd = -1;
			open--;
		}
	}
	for (int i = 0; i < n; i++) {
		if (c[i].fd >= 0)
			close(c[i].fd);
		good += c[i].ok && c[i].body == size && (!c[i].chunked ||
		    c[i].last);
	}
	free(c);
	free(p);
	return good;
}

static double
served(void)
{
	return proxy_metric(&e, "sumcache_collapsed_total{outcome="
	    "\"served\"}");
}

/* 1,000 clients on one cacheable chunked URL (every tenth speaking
 * HTTP/1.0, which reads to the close): one origin request, every body
 * right, and the object kept (the next request is a hit). */
Test(collapse_kept, a_crowd_on_a_chunked_answer_costs_one_request)
{
	const char *path = "/obj/chunky?max_age=60&size=20000&chunked=1&"
	    "delay=1500";
	struct resp r;

	harness_raise_nofile();
	env_start(&e, NULL);
	long t0 = harness_now_ms();
	int good = crowd(env_url(&e, path), 1000, 10, "chunky", 20000, 30000);
	fprintf(stderr, "figure: 1,000 simultaneous misses of one chunked "
	    "URL: %d origin request(s), %d right answers, %.0f collapsed, "
	    "%ld ms\n", origin_count(&e, "chunky", NULL), good, served(),
	    harness_now_ms() - t0);
	cr_assert_eq(good, 1000);
	cr_assert_eq(origin_count(&e, "chunky", NULL), 1);
	cr_assert_eq(served(), 999);
	proxy_get(&e, env_url(&e, path), NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	cr_assert_eq(r.len, 20000);
	resp_free(&r);
	cr_assert_eq(origin_count(&e, "chunky", NULL), 1);
}

/* 50 clients on one 16 MB object that goes to the disk as it arrives
 * (memory keeps objects of 1 MB at most): one origin request, every
 * body right, and the object kept on the disk (the next request is a
 * hit read from it). */
Test(collapse_kept, a_crowd_on_a_body_streamed_to_disk_costs_one_request)
{
	char dir[400];
	const char *opts[] = {"max_memory_object_size=1MB", dir, NULL};
	const char *path = "/obj/ondisk?max_age=60&size=16000000&delay=1000";
	struct resp r;

	harness_raise_nofile();
	origin_start(&e);
	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 256MB", e.dir);
	proxy_start(&e, opts);
	long t0 = harness_now_ms();
	int good = crowd(env_url(&e, path), 50, 10, "ondisk", 16000000,
	    60000);
	fprintf(stderr, "figure: 50 simultaneous misses of a 16 MB object "
	    "streamed to disk: %d origin request(s), %d right answers, "
	    "%ld ms\n", origin_count(&e, "ondisk", NULL), good,
	    harness_now_ms() - t0);
	cr_assert_eq(good, 50);
	cr_assert_eq(origin_count(&e, "ondisk", NULL), 1);
	cr_assert_eq(served(), 49);
	cr_assert_geq(proxy_wait_metric(&e, "sumcache_disk_objects", 1, 5000),
	    1);
	proxy_get(&e, env_url(&e, path), NULL, &r);
	cr_assert_eq(r.len, 16000000);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	cr_assert_eq(origin_count(&e, "ondisk", NULL), 1);
}

/* A chunked body of 3 MB where memory keeps 1 MB at most: it cannot be
 * kept, but the crowd of 20 that waited for it shares one request,
 * through a window the slowest paces; every body right. Not kept: the
 * next request goes to the origin. */
Test(collapse_kept, a_chunked_body_too_large_to_keep_is_shared_through_a_window)
{
	const char *opts[] = {"max_memory_object_size=1MB", NULL};
	const char *path = "/obj/teed?max_age=60&size=3000000&chunked=1&"
	    "delay=1000";
	struct resp r;

	env_start(&e, opts);
	int good = crowd(env_url(&e, path), 20, 5, "teed", 3000000, 30000);
	cr_assert_eq(good, 20);
	cr_assert_eq(origin_count(&e, "teed", NULL), 1);
	cr_assert_eq(served(), 19);
	cr_assert_eq(proxy_metric(&e, "sumcache_collapsed_tees_total"), 1);
	proxy_get(&e, env_url(&e, path), NULL, &r);
	cr_assert_eq(r.len, 3000000);
	resp_free(&r);
	cr_assert_eq(origin_count(&e, "teed", NULL), 2, "it was kept");
}

/* The crowd reads the disk's copy each at its own pace: a leader that
 * never reads its 16 MB holds nobody back, and bytes of a slow origin
 * reach a reader as they come (a piece is handed to the disk when a
 * reader waits for it), not a megabyte at a time. */
Test(collapse_kept, readers_of_the_disk_copy_go_at_their_own_pace)
{
	char dir[400], buf[65536];
	const char *opts[] = {"max_memory_object_size=1MB", dir, NULL};
	const char *stall = "/obj/stalled?max_age=60&size=16000000&delay=300";
	const char *slow = "/steady?size=2000000&parts=20&step=150&max_age=60";
	struct resp r;

	origin_start(&e);
	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 256MB", e.dir);
	proxy_start(&e, opts);
	int lead = harness_connect(e.pport);
	char req[300];
	int k = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
	    env_url(&e, stall));
	cr_assert_eq(send(lead, req, (size_t)k, 0), k);
	usleep(100 * 1000);
	long t0 = harness_now_ms();
	proxy_get(&e, env_url(&e, stall), NULL, &r);
	long took = harness_now_ms() - t0;
	cr_assert_eq(r.len, 16000000);
	resp_free(&r);
	fprintf(stderr, "figure: a 16 MB object streamed to disk, its leader "
	    "not reading: a second client had it in %ld ms\n", took);
	cr_assert_lt(took, 10000);
	close(lead);
	cr_assert_eq(origin_count(&e, "stalled", NULL), 1);

	/* 2,000,000 bytes in 20 parts, 150 ms apart; a reader joins at
	 * 300 ms and must have bytes within 400 ms more, long before the
	 * first megabyte is in (1,050 ms) */
	lead = harness_connect(e.pport);
	k = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n",
	    env_url(&e, slow));
	cr_assert_eq(send(lead, req, (size_t)k, 0), k);
	usleep(300 * 1000);
	int fd = harness_connect(e.pport);
	cr_assert_eq(send(fd, req, (size_t)k, 0), k);
	size_t got = 0;
	t0 = harness_now_ms();
	while (harness_now_ms() - t0 < 400) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	fprintf(stderr, "figure: a slow origin's body streamed to disk: a "
	    "reader joining at 300 ms had %zu bytes 400 ms later\n", got);
	cr_assert_gt(got, 200000);
	cr_assert_lt(got, 1000000);
	close(fd);
	close(lead);
	cr_assert_eq(origin_count(&e, "/steady", NULL), 1);
}

/* Sends a GET of u on a new connection to the node; the socket. */
static int
ask(const char *u)
{
	char req[512];
	int fd = harness_connect(e.pport);
	int k = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", u);

	cr_assert_eq(send(fd, req, (size_t)k, MSG_NOSIGNAL), k);
	return fd;
}

/* Reads the nfd sockets at once until each has given n bytes (head and
 * framing included), at most ms; the fewest one gave. */
static uint64_t
read_at_least(const int *fd, int nfd, uint64_t n, int ms)
{
	char buf[65536];
	uint64_t got[4] = {0}, least = 0;
	long deadline = harness_now_ms() + ms;

	cr_assert_leq(nfd, 4);
	while (least < n && harness_now_ms() < deadline) {
		struct pollfd p[4];
		for (int i = 0; i < nfd; i++)
			p[i] = (struct pollfd){fd[i], got[i] < n ? POLLIN : 0,
			    0};
		if (poll(p, (nfds_t)nfd, 100) <= 0)
			continue;
		least = UINT64_MAX;
		for (int i = 0; i < nfd; i++) {
			ssize_t r = p[i].revents != 0 ? recv(fd[i], buf,
			    sizeof(buf), 0) : 0;
			if (r < 0 || (r == 0 && p[i].revents != 0))
				return 0;   /* closed before n */
			got[i] += (uint64_t)r;
			if (got[i] < least)
				least = got[i];
		}
	}
	return least;
}

/* The origin's connections open now, the query's own excluded. */
static int
origin_open(void)
{
	const char *q = "GET /__open HTTP/1.1\r\nHost: o\r\nConnection: "
	    "close\r\n\r\n";
	bool closed;
	char *out = raw_exchange(e.oport, q, strlen(q), 3000, &closed);
	char *body = out != NULL ? strstr(out, "\r\n\r\n") : NULL;

	cr_assert_not_null(body);
	int n = atoi(body + 4) - 1;
	free(out);
	return n;
}

/* A chunked body that outgrew memory is read through a window: once its
 * first bytes have left it, a request for the URL cannot read them
 * there. It fetches alone, and gets every byte right. */
Test(collapse_kept, a_request_after_a_window_moved_on_fetches_alone)
{
	const char *opts[] = {"max_memory_object_size=1MB", NULL};
	env_start(&e, opts);
	const char *u = env_url(&e, "/obj/late?max_age=60&size=5000000&"
	    "chunked=1");
	int first = ask(u);
	cr_assert_geq(read_at_least(&first, 1, 3000000, 10000), 3000000);
	cr_assert_eq(proxy_metric(&e, "sumcache_collapsed_tees_total"), 1);
	cr_assert_eq(crowd(u, 1, 0, "late", 5000000, 20000), 1,
	    "the late request was not answered whole and right");
	cr_assert_eq(origin_count(&e, "late", NULL), 2, "the late request "
	    "read a window that had let its first bytes go");
	close(first);
}

/* The slowest reader of a window holds the others back only while it
 * stays: cut at idle_timeout for not reading, it lets them on. */
Test(collapse_kept, the_slowest_reader_of_a_window_leaving_lets_the_others_on)
{
	const char *opts[] = {"max_memory_object_size=1MB", "idle_timeout=2s",
	    NULL};
	env_start(&e, opts);
	const char *u = env_url(&e, "/obj/paced?max_age=60&size=40000000&"
	    "chunked=1&delay=500");
	int lag = ask(u);
	usleep(100 * 1000);
	long t0 = harness_now_ms();
	int good = crowd(u, 2, 0, "paced", 40000000, 30000);
	fprintf(stderr, "figure: two readers of a 40 MB window behind one "
	    "that stopped reading (idle_timeout 2 s): %d whole in %ld ms\n",
	    good, harness_now_ms() - t0);
	cr_assert_eq(good, 2, "the readers were held by one that had gone");
	cr_assert_eq(origin_count(&e, "paced", NULL), 1);
	cr_assert_eq(proxy_metric(&e, "sumcache_collapsed_tees_total"), 1);
	cr_assert_geq(proxy_metric(&e, "sumcache_client_aborts_total"), 1);
	close(lag);
}

/* A window nobody reads any more stops its transfer: the body is not
 * kept, and reading on would fetch it for no one (here a body of a
 * terabyte). */
Test(collapse_kept, a_window_nobody_reads_stops_its_transfer)
{
	const char *opts[] = {"max_memory_object_size=1MB", NULL};
	env_start(&e, opts);
	const char *u = env_url(&e, "/big?size=1000000000000&chunked=1&"
	    "max_age=60&delay=500");
	int fd[2] = {ask(u), ask(u)};
	cr_assert_geq(read_at_least(fd, 2, 3000000, 10000), 3000000);
	cr_assert_eq(proxy_metric(&e, "sumcache_collapsed_tees_total"), 1);
	cr_assert_eq(origin_count(&e, "/big", NULL), 1);
	cr_assert_eq(origin_open(), 1, "one transfer for both");
	close(fd[0]);
	close(fd[1]);
	int open = 1;
	for (long t0 = harness_now_ms(); open > 0 && harness_now_ms() - t0 <
	    3000; usleep(50 * 1000))
		open = origin_open();
	cr_assert_eq(open, 0, "the origin still sends a body nobody reads");
}
