/*
 * The disk tier end to end, with the real binary and the test origin:
 * objects survive clean and killed restarts, byte for byte; what memory
 * evicts is served from disk; a hot object outlives its segment; a full
 * disk keeps the node serving; a peer learns a restarted node's restored
 * contents and remote-hits them.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "harness.h"

#define OBJECTS 300

static struct env T;

/* Object i: 4 KB to 32 KB, fresh for 10 minutes. */
static void
url_of(const struct env *e, int i, char *buf, size_t len)
{
	snprintf(buf, len, "http://127.0.0.1:%d/obj/kept%d?size=%d&max_age=600",
	    e->oport, i, 4096 + (i * 7919) % 28673);
}

/* Fetches every object; sums[i] gets its body's hash, or is compared
 * with it. Returns how many came back with the right bytes. */
static int
fetch_all(const struct env *e, uint64_t *sums, bool first)
{
	char url[160];
	int good = 0;

	for (int i = 0; i < OBJECTS; i++) {
		struct resp r;
		url_of(e, i, url, sizeof(url));
		proxy_get(e, url, NULL, &r);
		cr_assert_eq(r.status, 200, "object %d: %ld", i, r.status);
		uint64_t h = XXH3_64bits(r.body, r.len);
		if (first)
			sums[i] = h;
		good += h == sums[i];
		resp_free(&r);
	}
	return good;
}

static void
cache_opts(const struct env *e, char *dir, size_t len, const char **opts)
{
	snprintf(dir, len, "cache_dir=%s/cache 64MB", e->dir);
	opts[0] = "cache_mem=4MB";
	opts[1] = "max_memory_object_size=1MB";
	opts[2] = dir;
	opts[3] = NULL;
}

/* Waits until the node has scanned what it kept and holds n objects. */
static void
wait_restored(const struct env *e, double n)
{
	double got = proxy_wait_metric(e, "sumcache_disk_objects", n, 20000);
	cr_assert_geq(got, n, "the node restored %g of %g objects", got, n);
}

Test(tiers, objects_survive_clean_and_killed_restarts, .timeout = 180)
{
	char dir[320];
	const char *opts[4];
	uint64_t sums[OBJECTS];

	origin_start(&T);
	cache_opts(&T, dir, sizeof(dir), opts);
	proxy_start(&T, opts);
	cr_assert_eq(fetch_all(&T, sums, true), OBJECTS);
	int from_origin = origin_count(&T, "/obj/kept", NULL);
	cr_assert_eq(from_origin, OBJECTS);
	wait_restored(&T, OBJECTS);
	/* 4 MB of memory for 5 MB of objects: some come from disk */
	cr_assert_eq(fetch_all(&T, sums, false), OBJECTS);
	double disk_hits = proxy_metric(&T,
	    "sumcache_hits_total{tier=\"disk\"}");
	cr_assert_gt(disk_hits, 0);
	/* just written, the records are in the page cache: the loop reads
	 * them itself, no thread asked */
	cr_assert_geq(proxy_metric(&T, "sumcache_disk_reads_cached_total"),
	    disk_hits);
	cr_assert(harness_file_has(T.log, " TCP_HIT/200 ", "/obj/kept",
	    5000), "no disk hit was logged as TCP_HIT");

	const int sigs[] = {SIGTERM, SIGKILL};
	for (int k = 0; k < 2; k++) {
		proxy_restart(&T, opts, sigs[k]);
		wait_restored(&T, OBJECTS);
		double found = proxy_metric(&T,
		    "sumcache_disk_scan_segments{state=\"found\"}");
		double keyed = proxy_metric(&T,
		    "sumcache_disk_scan_segments{state=\"from_key_file\"}");
		fprintf(stderr, "figure: after %s: %g of %g segments read from "
		    "their key files\n", sigs[k] == SIGTERM ? "SIGTERM" :
		    "SIGKILL", keyed, found);
		/* a clean stop leaves every segment its key file */
		if (sigs[k] == SIGTERM)
			cr_assert_eq(keyed, found);
		int good = fetch_all(&T, sums, false);
		int asked = origin_count(&T, "/obj/kept", NULL) - from_origin;
		fprintf(stderr, "figure: after %s: %d of %d objects served "
		    "with the right bytes, %d asked of the origin\n",
		    sigs[k] == SIGTERM ? "SIGTERM" : "SIGKILL", good, OBJECTS,
		    asked);
		cr_assert_eq(good, OBJECTS);
		/* at least 99 % without the origin */
		cr_assert_leq(asked, OBJECTS / 100, "%d went to the origin",
		    asked);
		from_origin += asked;
	}
	env_stop(&T);
}

/* A record is replaced by a newer copy and an invalidation outlives a
 * restart (its tombstone): neither comes back. */
Test(tiers, replaced_and_invalidated_objects_stay_gone, .timeout = 120)
{
	char dir[320], url[160];
	const char *opts[4];
	struct resp r;

	origin_start(&T);
	cache_opts(&T, dir, sizeof(dir), opts);
	proxy_start(&T, opts);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/gone?size=5000&"
	    "max_age=600", T.oport);
	proxy_get(&T, url, NULL, &r);
	resp_free(&r);
	wait_restored(&T, 1);
	/* a POST to the URL invalidates it (RFC 9111 4.4) */
	proxy_request(&T, "POST", url, NULL, "x", 1, false, &r);
	resp_free(&r);
	cr_assert_eq(proxy_metric(&T, "sumcache_disk_objects"), 0);
	/* one object, in both tiers, counted once */
	cr_assert_eq(proxy_metric(&T, "sumcache_invalidations_total"), 1);
	proxy_restart(&T, opts, SIGKILL);
	cr_assert_geq(proxy_wait_metric(&T,
	    "sumcache_disk_scan_segments{state=\"scanned\"}", 1, 10000), 1);
	cr_assert_eq(proxy_metric(&T, "sumcache_disk_objects"), 0,
	    "the invalidated object came back");
	int before = origin_count(&T, "/obj/gone", NULL);
	proxy_get(&T, url, NULL, &r);
	resp_free(&r);
	cr_assert_eq(origin_count(&T, "/obj/gone", NULL), before + 1);
	env_stop(&T);
}

/* Fetches n objects of 16,000 bytes named NAMEi through the node. */
static void
fetch_named(const char *name, int from, int n)
{
	char url[160];
	struct resp r;

	for (int i = from; i < from + n; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/%s%d?"
		    "size=16000&max_age=600", T.oport, name, i);
		proxy_get(&T, url, NULL, &r);
		cr_assert_eq(r.status, 200, "%s%d: %ld", name, i, r.status);
		cr_assert_eq(r.len, 16000);
		resp_free(&r);
	}
}

/* An object read from the disk since it was written outlives its
 * segment: the eviction copies it to the newest one, and it is still a
 * hit once the cache_dir has turned over; a cold object written beside
 * it goes back to the origin. */
Test(tiers, a_hot_object_outlives_its_segment, .timeout = 120)
{
	char dir[320];
	const char *opts[] = {"cache_mem=1MB", "max_memory_object_size=64KB",
	    dir, NULL};

	origin_start(&T);
	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 16MB", T.dir);
	proxy_start(&T, opts);
	fetch_named("hot", 0, 5);
	fetch_named("cold", 0, 5);
	/* 3.2 MB after them: memory lets them go, the disk has them */
	fetch_named("churn", 0, 200);
	fetch_named("hot", 0, 5);
	cr_assert_eq(origin_count(&T, "/obj/hot", NULL), 5);
	cr_assert_geq(proxy_metric(&T, "sumcache_hits_total{tier=\"disk\"}"),
	    5);
	/* 19 MB more: the 16 MB cache_dir turns over */
	fetch_named("churn", 200, 1200);
	cr_assert_gt(proxy_metric(&T, "sumcache_disk_segments_evicted_total"),
	    2);
	double moved = proxy_metric(&T, "sumcache_disk_readmitted_total");
	fprintf(stderr, "figure: %g records re-admitted\n", moved);
	cr_assert_geq(moved, 5);
	fetch_named("hot", 0, 5);
	fetch_named("cold", 0, 5);
	cr_assert_eq(origin_count(&T, "/obj/hot", NULL), 5,
	    "a hot object was evicted with its segment");
	cr_assert_eq(origin_count(&T, "/obj/cold", NULL), 10,
	    "a cold object outlived its segment");
	env_stop(&T);
}

/* The cache_dir's file system fills up under the node: writes fail,
 * are counted and logged, and every request is still answered whole,
 * from memory or the origin. Needs a tmpfs, so root. */
/* the tmpfs goes whatever the test's outcome */
static char small_mnt[300];

static void
unmount_small(void)
{
	if (small_mnt[0] != '\0')
		umount2(small_mnt, MNT_DETACH);
}

Test(tiers, a_full_disk_keeps_the_node_serving, .timeout = 120,
    .fini = unmount_small)
{
	char *mnt = small_mnt, dir[340], fill[400], url[160];
	const char *opts[4] = {"cache_mem=64MB", dir, NULL};

	origin_start(&T);
	snprintf(mnt, sizeof(small_mnt), "%s/small", T.dir);
	cr_assert(mkdir(mnt, 0755) == 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=16m") < 0) {
		mnt[0] = '\0';
		cr_skip_test("cannot mount a tmpfs (not root?)");
		return;
	}
	snprintf(dir, sizeof(dir), "cache_dir=%s/cache 8MB", mnt);
	proxy_start(&T, opts);
	/* fill the file system: dd ends with ENOSPC */
	snprintf(fill, sizeof(fill), "dd if=/dev/zero of=%s/junk bs=1M "
	    "count=32 2>/dev/null", mnt);
	cr_assert_neq(system(fill), 0, "dd should end with ENOSPC");
	for (int i = 0; i < 200; i++) {
		struct resp r;
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/full%d?"
		    "size=20000&max_age=600", T.oport, i);
		proxy_get(&T, url, NULL, &r);
		cr_assert_eq(r.status, 200);
		cr_assert_eq(r.len, 20000);
		resp_free(&r);
	}
	double errors = proxy_wait_metric(&T,
	    "sumcache_disk_errors_total{op=\"write\"}", 1, 5000);
	cr_assert_geq(errors, 1, "no write failed on a full disk?");
	/* and what memory kept is still a hit */
	struct resp r;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/full199?"
	    "size=20000&max_age=600", T.oport);
	int before = origin_count(&T, "/obj/full199", NULL);
	proxy_get(&T, url, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(origin_count(&T, "/obj/full199", NULL), before);
	fprintf(stderr, "figure: cache_dir full: %g failed writes, all 200 "
	    "requests answered\n", errors);
	env_stop(&T);
}

/* Node a restarts with what it had on disk: b learns it from a's new
 * full summary and remote-hits it, with no request to the origin. */
Test(tiers, a_peer_remote_hits_what_a_restart_restored, .timeout = 120)
{
	struct cluster cl;
	char url[160];
	struct resp r;

	origin_start(&T);
	cluster_init(&T, &cl, 2, NULL, NULL);
	cl.cache_dir_size = "32MB";
	for (int i = 0; i < 2; i++)
		node_start(&T, &cl, i);
	for (int i = 0; i < 20; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/shared%d?"
		    "size=3000&max_age=600", T.oport, i);
		node_get(&cl.nodes[0], url, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
		/* and 10 copies that will have expired by the restart */
		if (i % 2 == 1)
			continue;
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/brief%d?"
		    "size=3000&max_age=1", T.oport, i);
		node_get(&cl.nodes[0], url, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	cr_assert_geq(node_wait_metric(&cl.nodes[0], "sumcache_disk_objects",
	    30, 10000), 30);
	const char *epoch_of_a = "sumcache_peer_summary_epoch{peer=\"a\"}";
	double old_epoch = node_metric(&cl.nodes[1], epoch_of_a);
	node_stop(&cl.nodes[0]);
	sleep(2);
	node_start(&T, &cl, 0);
	cr_assert_geq(node_wait_metric(&cl.nodes[0], "sumcache_summary_keys",
	    30, 10000), 30);
	/* the disk kept the expiry with each copy: the summary claims the
	 * 20 fresh ones, not the 10 that went stale while it was down */
	cr_assert_eq(node_metric(&cl.nodes[0], "sumcache_summary_entries"),
	    20);
	/* a's announcement, a new epoch, reaches b: its view of a holds
	 * the 20 */
	cr_assert_gt(node_wait_metric(&cl.nodes[1], epoch_of_a, old_epoch + 1,
	    10000), old_epoch, "b never took a's new epoch");
	cr_assert_eq(node_metric(&cl.nodes[1],
	    "sumcache_peer_summary_entries{peer=\"a\"}"), 20);
	int before = origin_count(&T, "/obj/shared", NULL);
	for (int i = 0; i < 20; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/shared%d?"
		    "size=3000&max_age=600", T.oport, i);
		node_get(&cl.nodes[1], url, &r);
		cr_assert_eq(r.status, 200);
		cr_assert_eq(r.len, 3000);
		resp_free(&r);
	}
	cr_assert_eq(origin_count(&T, "/obj/shared", NULL), before,
	    "b went to the origin for what a restored");
	cr_assert_geq(node_metric(&cl.nodes[1],
	    "sumcache_requests_total{result=\"remote_hit\"}"), 20);
	cluster_stop(&cl);
	harness_stop(T.origin, SIGTERM, 5000);
}

/* The summary outgrows its filter while most objects are on disk only:
 * the rebuild walks memory, then reads the disk's keys back, and the new
 * filter counts every object once; a peer remote-hits one that only a's
 * disk holds. */
Test(tiers, a_rebuild_walks_the_disk_too, .timeout = 180)
{
	/* a filter for 1,024 + 1,024 objects (memory's floor, 16 MB of
	 * disk at 16 KB), which 2,600 outgrow; 1 MB of memory keeps a
	 * few hundred of them */
	const char *opts[] = {"cache_mem=1MB", "max_memory_object_size=64KB",
	    "summary_threshold=5%", "summary_max_interval=1s", NULL};
	struct cluster cl;
	char url[160];
	struct resp r;
	const int n = 2600;

	origin_start(&T);
	cluster_init(&T, &cl, 2, opts, NULL);
	cl.cache_dir_size = "16MB";
	for (int i = 0; i < 2; i++)
		node_start(&T, &cl, i);
	struct node *a = &cl.nodes[0], *b = &cl.nodes[1];
	double epoch = node_metric(a, "sumcache_summary_epoch");
	for (int i = 0; i < n; i++) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/walk%d?"
		    "size=2000&max_age=600", T.oport, i);
		node_get(a, url, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	cr_assert_geq(node_wait_metric(a, "sumcache_summary_rebuilds_total",
	    1, 10000), 1);
	cr_assert_gt(node_metric(a, "sumcache_summary_epoch"), epoch);
	double disk_only = node_metric(a, "sumcache_disk_objects") -
	    node_metric(a, "sumcache_cache_objects");
	fprintf(stderr, "figure: rebuild with %g of %d objects on disk only\n",
	    disk_only, n);
	cr_assert_gt(disk_only, n / 2, "most objects should be on disk only");
	for (int waited = 0; waited < 10000 && node_metric(a,
	    "sumcache_summary_entries") != n; waited += 50)
		usleep(50000);
	cr_assert_eq(node_metric(a, "sumcache_summary_entries"), n,
	    "every object counted once in the new filter");
	cr_assert_eq(node_metric(a, "sumcache_summary_bad_removes_total"), 0);
	/* the first objects are on a's disk only: b finds them in a's
	 * summary once a's view reaches it */
	node_wait_metric(b, "sumcache_peer_summary_entries{peer=\"a\"}", n,
	    10000);
	int before = origin_count(&T, "/obj/walk", NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/obj/walk0?size=2000&"
	    "max_age=600", T.oport);
	node_get(b, url, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_eq(origin_count(&T, "/obj/walk", NULL), before);
	cr_assert_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);
	cluster_stop(&cl);
	harness_stop(T.origin, SIGTERM, 5000);
}
