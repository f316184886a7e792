/*
 * A cache_dir damaged while the node runs, end to end: bytes of a record
 * already served are changed on disk, or its segment file is cut short
 * under it. The node must never send the damaged bytes: it finds the
 * damage before the body goes out, drops the record (counted by why),
 * and answers from the origin, whole. (Damage to a stopped cache_dir is
 * the disk unit suite's.)
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

static struct env D;

static void
down(void)
{
	env_stop(&D);
}

TestSuite(damage, .fini = down, .timeout = 120);

static char dir_opt[320], mem_opt[64];
static const char *opts[] = {mem_opt, "max_memory_object_size=1MB",
    dir_opt, NULL};

/* A node with cache_mem MB of memory and a cache_dir of dir_mb MB over a
 * fresh origin. */
static void
start_sized(int cache_mem, int dir_mb)
{
	origin_start(&D);
	snprintf(mem_opt, sizeof(mem_opt), "cache_mem=%dMB", cache_mem);
	snprintf(dir_opt, sizeof(dir_opt), "cache_dir=%s/cache %dMB", D.dir,
	    dir_mb);
	proxy_start(&D, opts);
}

static void
start(int cache_mem)
{
	start_sized(cache_mem, 64);
}

static char *
url_of(const char *name, int size)
{
	static char url[4][200];
	static int i;

	i = (i + 1) % 4;
	snprintf(url[i], sizeof(url[i]), "http://127.0.0.1:%d/obj/%s?size=%d&"
	    "max_age=600", D.oport, name, size);
	return url[i];
}

/* GETs name; true when the answer is a 200 of size bytes, name repeated
 * (what the test origin sends for it). */
static bool
get_whole(const char *name, int size, const char *want_cache)
{
	struct resp r;
	size_t nl = strlen(name);
	bool ok;

	proxy_get(&D, url_of(name, size), NULL, &r);
	ok = r.status == 200 && r.len == (size_t)size;
	for (size_t i = 0; ok && i < r.len; i++)
		ok = r.body[i] == name[i % nl];
	if (want_cache != NULL)
		cr_expect(resp_header(&r, "X-Cache") != NULL && strncmp(
		    resp_header(&r, "X-Cache"), want_cache, strlen(want_cache))
		    == 0, "%s: X-Cache %s", name, resp_header(&r, "X-Cache"));
	resp_free(&r);
	return ok;
}

/* Asks for n objects of 16 KB named prefix0.., each times times: every
 * one whole. */
static void
others(const char *prefix, int n, int times)
{
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		for (int k = 0; k < times; k++)
			cr_assert(get_whole(name, 16 * 1024, NULL));
	}
}

/* The segment file holding name's body, and the body's offset there. */
static bool
find_body(const char *name, char *path, size_t plen, off_t *at)
{
	char cache[300];

	snprintf(cache, sizeof(cache), "%s/cache", D.dir);
	return harness_find_in_segments(cache, name, path, plen, at);
}

static void
flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	char c;

	cr_assert(fd >= 0);
	cr_assert_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x20;
	cr_assert_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

/* The object is on the disk only, then read back from it once (checked
 * then): memory holds it as the disk's bytes, or as a copy. */
static void
served_from_disk(const char *name, int size)
{
	cr_assert(get_whole(name, size, "MISS"));
	cr_assert_geq(proxy_wait_metric(&D, "sumcache_disk_objects", 1, 5000),
	    1);
	proxy_restart(&D, opts, SIGTERM);
	cr_assert_geq(proxy_wait_metric(&D, "sumcache_disk_objects", 1,
	    10000), 1);
	cr_assert(get_whole(name, size, "HIT"), "read back from the disk");
	cr_assert(get_whole(name, size, "HIT"), "and again");
}

static double
dropped(const char *reason)
{
	char series[96];

	snprintf(series, sizeof(series), "sumcache_disk_dropped_total{reason="
	    "\"%s\"}", reason);
	return proxy_metric(&D, series);
}

/* A body of 256 KB is sent from its segment file (sendfile) at every hit:
 * a byte changed there after it was served is found before the next
 * answer, which comes whole from the origin. */
Test(damage, a_byte_changed_under_a_served_record_is_never_sent)
{
	char path[600];
	off_t at;

	start(4);
	served_from_disk("flipped", 256 * 1024);
	cr_assert(find_body("flipped", path, sizeof(path), &at));
	flip_byte(path, at + 100000);
	int asked = origin_count(&D, "/obj/flipped", NULL);
	for (int i = 0; i < 5; i++)
		cr_expect(get_whole("flipped", 256 * 1024, NULL), "answer %d "
		    "was not the object", i);
	cr_expect_eq(origin_count(&D, "/obj/flipped", NULL), asked + 1,
	    "the damaged record was not replaced once");
	cr_expect_eq(dropped("checksum"), 1);
	cr_expect_geq(proxy_metric(&D, "sumcache_disk_segments_changed_total"),
	    1);
	cr_expect(harness_file_has(D.log, "TCP_MISS/200", "/obj/flipped", 0));
}

/* A body of up to 8 KB (tiers.c's DISK_COPY_MAX) is read into memory at
 * each read from the disk: one changed on disk while memory held it is
 * caught at its next read, once memory has let it go. */
Test(damage, a_byte_changed_under_a_small_record_is_caught_at_its_next_read)
{
	char path[600];
	off_t at;

	start(1);
	served_from_disk("small", 8 * 1024);
	cr_assert(find_body("small", path, sizeof(path), &at));
	flip_byte(path, at + 5000);
	/* 1.6 MB of others, each asked twice so that SIEVE's hand comes
	 * round: memory (1 MB) lets it go */
	others("churn", 100, 2);
	int asked = origin_count(&D, "/obj/small", NULL);
	cr_expect(get_whole("small", 8 * 1024, "MISS"), "the damaged bytes "
	    "were sent");
	cr_expect_eq(origin_count(&D, "/obj/small", NULL), asked + 1);
	cr_expect_eq(dropped("checksum"), 1);
}

/*
 * A body of 16 KB read back from disk stays in its segment file, memory
 * holding its head. A byte changed there while the file still takes our
 * writes, and then writes of ours (whose stamps, renewed after each,
 * would take the change for theirs): the change is found when the first
 * of them begins, and the next answer comes whole from the origin.
 */
Test(damage, a_change_before_writes_of_ours_is_not_taken_for_theirs)
{
	char path[600];
	off_t at;

	start(1);
	cr_assert(get_whole("held", 16 * 1024, "MISS"));
	/* 1.6 MB of others, each asked twice: memory (1 MB) lets it go */
	others("churn", 100, 2);
	cr_assert_geq(proxy_wait_metric(&D, "sumcache_disk_objects", 101,
	    5000), 101);
	double from_disk = proxy_metric(&D, "sumcache_hits_total{tier=\"disk\"}");
	cr_assert(get_whole("held", 16 * 1024, "HIT"), "read back");
	cr_assert_eq(proxy_metric(&D, "sumcache_hits_total{tier=\"disk\"}"),
	    from_disk + 1, "not read back from the disk");
	cr_assert(find_body("held", path, sizeof(path), &at));
	flip_byte(path, at + 5000);
	others("after", 20, 1);
	cr_assert_geq(proxy_wait_metric(&D, "sumcache_disk_objects", 121,
	    5000), 121);
	int asked = origin_count(&D, "/obj/held", NULL);
	cr_expect(get_whole("held", 16 * 1024, "MISS"), "the damaged bytes "
	    "were sent");
	cr_expect_eq(origin_count(&D, "/obj/held", NULL), asked + 1);
	cr_expect_eq(dropped("checksum"), 1);
	cr_expect_geq(proxy_metric(&D, "sumcache_disk_segments_changed_total"),
	    1);
}

/* The segment file is cut in the middle of a served record: no answer is
 * cut with it; the next one is whole, from the origin; an only-if-cached
 * request is a 504, not half a body; the node goes on. */
Test(damage, a_segment_cut_under_a_served_record_drops_it)
{
	char path[600];
	off_t at;
	struct resp r;

	start(4);
	served_from_disk("cut", 256 * 1024);
	cr_assert(find_body("cut", path, sizeof(path), &at));
	cr_assert_eq(truncate(path, at + 128 * 1024), 0);
	const char *oic[] = {"Cache-Control: only-if-cached", NULL};
	proxy_get(&D, url_of("cut", 256 * 1024), oic, &r);
	cr_expect_eq(r.status, 504, "only-if-cached: %ld, %zu bytes", r.status,
	    r.len);
	resp_free(&r);
	cr_expect_eq(dropped("short"), 1);
	int asked = origin_count(&D, "/obj/cut", NULL);
	for (int i = 0; i < 3; i++)
		cr_expect(get_whole("cut", 256 * 1024, NULL), "answer %d was "
		    "not the object", i);
	cr_expect_eq(origin_count(&D, "/obj/cut", NULL), asked + 1);
	cr_expect_eq(proxy_metric(&D, "sumcache_cache_objects"), 1);
	char out[320];
	/* the node's output since served_from_disk's restart */
	snprintf(out, sizeof(out), "%s/sumcache-1.out", D.dir);
	cr_expect(harness_file_has(out, "changed outside sumcache", NULL, 0),
	    "the change is not logged");
}

/* A body of 3 MB goes out a window at a time, each read ahead off the
 * loop: the file cut under it is found before its head is sent. */
Test(damage, a_segment_cut_under_a_large_record_drops_it)
{
	char path[600];
	off_t at;

	start(4);
	served_from_disk("large", 3 << 20);
	cr_assert(find_body("large", path, sizeof(path), &at));
	cr_assert_eq(truncate(path, at + (1 << 20)), 0);
	int asked = origin_count(&D, "/obj/large", NULL);
	cr_expect(get_whole("large", 3 << 20, NULL));
	cr_expect_eq(origin_count(&D, "/obj/large", NULL), asked + 1);
	cr_expect_eq(dropped("short"), 1);
}

/* The segment file holding name's body of size bytes is cut at half
 * while the body is on its way to a client that reads slowly: that
 * answer ends short (it cannot be whole), the record is checked again at
 * once and dropped, and the next answer is whole. */
static void
cut_during_send(const char *name, int size, int cut)
{
	char path[600], req[256];
	off_t at;

	served_from_disk(name, size);
	cr_assert(find_body(name, path, sizeof(path), &at));
	/* a client with a small window that reads its first bytes only */
	int rcv = 4096, fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)D.pport)};
	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	cr_assert(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", url_of(name, size));
	cr_assert_eq(send(fd, req, (size_t)n, 0), n);
	char buf[65536];
	size_t got = 0;
	while (got < 65536) {
		ssize_t r = recv(fd, buf, sizeof(buf) - got, 0);
		cr_assert_gt(r, 0);
		got += (size_t)r;
	}
	usleep(200 * 1000);
	/* cut well past what the node can have queued */
	cr_assert_eq(truncate(path, at + cut), 0);
	for (ssize_t r; (r = recv(fd, buf, sizeof(buf), 0)) > 0;)
		got += (size_t)r;
	close(fd);
	fprintf(stderr, "figure: file cut at %d of a %d KB send: the client "
	    "got %zu bytes before the close\n", cut >> 10, size >> 10, got);
	cr_expect_lt(got, (size_t)size, "the client was sent %zu bytes", got);
	cr_expect_eq(proxy_wait_metric(&D, "sumcache_disk_dropped_total{reason="
	    "\"short\"}", 1, 5000), 1, "the record was not dropped");
	int asked = origin_count(&D, name, NULL);
	cr_expect(get_whole(name, size, "MISS"));
	cr_expect_eq(origin_count(&D, name, NULL), asked + 1);
}

/*
 * 256 KB: sent whole from the segment file (sendfile), and the kernel
 * takes all of it while the client has read 64 KB. Its pages are the
 * file's, not copies, until the client reads them: the cut zeroes the
 * part of the page holding the new end in place (30 KB here), and the
 * client once read them as the object's at its full length. The last
 * 4 KB go only once the rest has left the host and the file is checked:
 * the answer ends short.
 */
Test(damage, a_segment_cut_under_a_body_sent_whole_ends_that_answer_short)
{
	start(4);
	cut_during_send("whole", 256 * 1024, 100000);
}

/* 48 MB: sent by windows, each read ahead off the loop, which fails. */
Test(damage, a_segment_cut_during_a_send_ends_that_answer_and_drops_it)
{
	start_sized(4, 256);
	cut_during_send("windows", 48 << 20, 24 << 20);
}

/* Cut inside a window already read ahead and queued: its sendfile meets
 * the end of the file (the connection's write error is the news). */
Test(damage, a_segment_cut_under_a_queued_window_ends_the_answer_there)
{
	start_sized(4, 256);
	cut_during_send("queued", 48 << 20, 5 << 20);
}

/* Key files that cannot be written (here: a directory stands where each
 * is written aside) fail at every sealed segment: each is counted, and
 * logged a line a second, not one each. */
Test(damage, key_files_that_cannot_be_written_are_logged_a_line_a_second)
{
	char path[600], out[320], line[1024];

	origin_start(&D);
	snprintf(mem_opt, sizeof(mem_opt), "cache_mem=64MB");
	snprintf(dir_opt, sizeof(dir_opt), "cache_dir=%s/cache 8MB", D.dir);
	snprintf(path, sizeof(path), "%s/cache", D.dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	for (int i = 0; i < 128; i++) {
		snprintf(path, sizeof(path), "%s/cache/seg-%010d.keys.tmp",
		    D.dir, i);
		cr_assert_eq(mkdir(path, 0755), 0);
	}
	proxy_start(&D, opts);
	long t0 = harness_now_ms();
	/* 25 MB through an 8 MB cache_dir of 1 MB segments */
	for (int i = 0; i < 100; i++) {
		char name[32];
		snprintf(name, sizeof(name), "seal%d", i);
		cr_assert(get_whole(name, 256 * 1024, NULL));
	}
	double errors = proxy_wait_metric(&D, "sumcache_disk_errors_total{op="
	    "\"key_file\"}", 10, 5000);
	long secs = (harness_now_ms() - t0) / 1000 + 1;
	int lines = 0;
	snprintf(out, sizeof(out), "%s/sumcache.out", D.dir);
	FILE *f = fopen(out, "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		lines += strstr(line, ".keys") != NULL;
	if (f != NULL)
		fclose(f);
	fprintf(stderr, "figure: %g key files failed in %ld s, %d log lines\n",
	    errors, secs, lines);
	cr_assert_geq(errors, 10, "%g key files failed", errors);
	cr_expect_geq(lines, 1, "not logged");
	cr_expect_leq(lines, secs, "%d lines in %ld s", lines, secs);
}
