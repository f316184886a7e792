/*
 * The disk tier's record format and its log of segments, on a real
 * directory with the real I/O threads: what is written is found again
 * after a reopen, a record torn at any stage of its write is never
 * served, eviction keeps the size, reports what left and re-admits what
 * was hit, a tombstone outlives a restart.
 */
#define _GNU_SOURCE /* preadv2 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <event2/event.h>
#include <xxhash.h>

#include "disk.h"
#include "diskrig.h"
#include "record.h"

/* ---- the record format ---- */

/* A whole record for o in a new buffer of record_len bytes. */
static uint8_t *
encode(const struct store_obj *o, struct record_info *r)
{
	record_describe(o, r);
	r->body_sum = record_body_sum(o->body->data, o->body->len);
	uint8_t *p = calloc(1, record_len(r));
	record_write_head(r, o->key, store_obj_head(o), store_obj_varykey(o),
	    p);
	memcpy(p + record_head_len(r), o->body->data, o->body->len);
	record_write_trailer(r, p + record_trailer_off(r));
	return p;
}

/* The three checks a reader makes, all of them. */
static bool
record_whole(const uint8_t *p, size_t avail)
{
	struct record_info r;

	if (avail < RECORD_HEAD || !record_read_fixed(p, &r) ||
	    record_len(&r) > avail || !record_head_ok(p, &r) ||
	    !record_read_trailer(p + record_trailer_off(&r), &r))
		return false;
	return record_body_sum(p + record_head_len(&r), r.body_len) ==
	    r.body_sum;
}

Test(record, round_trip)
{
	struct store_obj *o = obj("http://a.example/x", 1000, 'q');
	struct record_info r, back;
	uint8_t *p = encode(o, &r);

	cr_assert(record_whole(p, record_len(&r)));
	cr_assert(record_read_fixed(p, &back));
	cr_assert_eq(back.body_len, 1000);
	cr_assert_eq(back.key_len, strlen("http://a.example/x"));
	cr_assert_eq(back.meta.lifetime, 600);
	cr_assert_eq(back.meta.initial_age, 3);
	cr_assert(back.meta.must_revalidate && !back.meta.no_cache);
	cr_assert_eq(record_len(&r) % 8, 0);
	cr_assert_eq(memcmp(record_key(p), "http://a.example/x", 18), 0);
	free(p);
	store_obj_unref(&o);
}

/* Every prefix of a record's bytes is what a crash can leave when the
 * writes went down in order; and the page cache may write back in any
 * order after power loss, so a body whole under a head still zeros, and
 * head and body without the mark, are tried too. */
Test(record, torn_at_every_stage_is_never_whole)
{
	struct store_obj *o = obj("http://a.example/torn", 3000, 'z');
	struct record_info r;
	uint8_t *p = encode(o, &r);
	size_t len = record_len(&r);
	uint8_t *q = calloc(1, len);

	for (size_t cut = 0; cut < len; cut++) {
		memset(q, 0, len);
		memcpy(q, p, cut);
		cr_assert(!record_whole(q, len), "whole when cut at %zu", cut);
	}
	/* body written, head not yet */
	memcpy(q, p, len);
	memset(q, 0, record_head_len(&r));
	cr_assert(!record_whole(q, len));
	/* head and body, no mark */
	memcpy(q, p, len);
	memset(q + record_trailer_off(&r), 0, RECORD_TRAILER);
	cr_assert(!record_whole(q, len));
	/* one bit of the body, of the head's strings, of the mark */
	size_t flips[] = {record_head_len(&r) + 1500, RECORD_HEAD + 5,
	    record_trailer_off(&r) + 9};
	for (size_t i = 0; i < 3; i++) {
		memcpy(q, p, len);
		q[flips[i]] ^= 0x10;
		cr_assert(!record_whole(q, len), "whole with byte %zu flipped",
		    flips[i]);
	}
	memcpy(q, p, len);
	cr_assert(record_whole(q, len));
	free(q);
	free(p);
	store_obj_unref(&o);
}

/* ---- the log ---- */

Test(disk, written_objects_are_found_again_after_a_reopen)
{
	struct rig g;

	rig_start(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 200, 5000);
	RUN_UNTIL(&g, g.ev.found == 200);
	cr_assert_eq(g.ev.expires_wrong, 0, "committed without its expiry");
	for (int i = 0; i < 200; i += 37)
		check_read_back(&g, i, 5000);
	cr_assert_null(read_back(&g, "http://origin.example/never"));
	disk_close(&g.d);
	rig_open(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	cr_assert_eq(g.ev.found, 200, "the scan found %d", g.ev.found);
	cr_assert_eq(disk_stats(g.d)->objects, 200);
	cr_assert_eq(g.ev.expires_wrong, 0, "found without their expiry");
	for (int i = 0; i < 200; i++)
		check_read_back(&g, i, 5000);
	rig_stop(&g);
}

/* A crash mid-write leaves the last record short, or without its mark;
 * a bit gone wrong in a committed body shows when it is read. None is
 * served; the others are. */
Test(disk, torn_or_rotten_records_are_never_served)
{
	struct rig g;
	char key[64], seg[256];
	off_t size;

	rig_start(&g, 64 << 20);
	store_n(&g, 0, 10, 4000);
	RUN_UNTIL(&g, g.ev.found == 10);
	disk_close(&g.d);
	newest_segment(&g, seg, sizeof(seg), &size);
	uint64_t rec = (uint64_t)size / 10;
	cr_assert_eq(rec * 10, (uint64_t)size, "ten records of one size");
	/* record 9 cut short; record 8's mark broken; record 3's body */
	cr_assert(truncate(seg, size - 100) == 0);
	poke(seg, (off_t)(rec * 9 - 12), 0xff); /* its head checksum */
	poke(seg, (off_t)(rec * 3 + 400), 0x01);
	rig_open(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	cr_assert_eq(g.ev.found, 8, "found %d of the 10", g.ev.found);
	cr_assert_eq(disk_stats(g.d)->dropped[DISK_DROP_TORN], 2);
	for (int i = 0; i < 10; i++) {
		key_of(key, sizeof(key), i);
		struct store_obj *o = read_back(&g, key);
		if (i == 3 || i == 8 || i == 9) {
			cr_assert_null(o, "record %d was served", i);
			continue;
		}
		check_body(o, 4000, i);
		store_obj_unref(&o);
	}
	cr_assert_eq(disk_stats(g.d)->dropped[DISK_DROP_CHECKSUM], 1);
	cr_assert_eq(g.ev.lost, 1, "the rotten one leaves the summary");
	key_of(key, sizeof(key), 3);
	cr_assert_str_eq(g.ev.last_lost, key);
	rig_stop(&g);
}

/* Far more than fits: the segments stay within the size, the oldest
 * objects go, each reported lost by its key, the newest stay. */
Test(disk, the_size_holds_under_churn)
{
	struct rig g;
	char key[64];
	const uint64_t size = 8 << 20;

	rig_start(&g, size);
	for (int round = 0; round < 40; round++) {
		store_n(&g, round * 50, 50, 16000);
		RUN_UNTIL(&g, g.ev.found == (round + 1) * 50);
		cr_assert_leq(disk_stats(g.d)->file_bytes, size);
	}
	RUN_UNTIL(&g, g.ev.found - g.ev.lost == (int)disk_stats(g.d)->objects);
	cr_assert_gt(g.ev.lost, 1000, "only %d evicted", g.ev.lost);
	cr_assert_gt(disk_stats(g.d)->segments_evicted, 0);
	key_of(key, sizeof(key), 0);
	cr_assert_null(read_back(&g, key));
	key_of(key, sizeof(key), 1999);
	struct store_obj *o = read_back(&g, key);
	check_body(o, 16000, 1999);
	store_obj_unref(&o);
	/* what the files hold is what the index says is there */
	uint64_t kept = disk_stats(g.d)->objects;
	disk_close(&g.d);
	rig_open(&g, size);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	cr_assert_eq((uint64_t)g.ev.found, kept, "found %d of %llu",
	    g.ev.found, (unsigned long long)kept);
	cr_assert_leq(disk_stats(g.d)->file_bytes, size);
	rig_stop(&g);
}

/* Whether the disk's index has key, without reading it (a read is a hit). */
static bool
indexed(struct rig *g, int i)
{
	char key[64];
	disk_ent e[4];

	key_of(key, sizeof(key), i);
	return disk_lookup(g->d, XXH3_64bits(key, strlen(key)), e, 4) > 0;
}

/* Records read since they were written outlive their segment: the
 * eviction copies them to the head, where they stay whole and found,
 * across a restart too; a copy not read again goes with the next round.
 * The summary hears of none of it: a move is not a change. */
Test(disk, hot_records_are_readmitted_at_eviction)
{
	struct rig g;
	const uint64_t size = 8 << 20;

	rig_start(&g, size);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 50, 16000); /* the first segment's, with others */
	RUN_UNTIL(&g, g.ev.found == 50);
	for (int i = 0; i < 10; i++)
		check_read_back(&g, i, 16000);
	/* 9.6 MB more: the first segment goes, the copies stay */
	store_n(&g, 50, 600, 16000);
	RUN_UNTIL(&g, disk_stats(g.d)->readmitted == 10);
	for (int i = 0; i < 50; i++)
		cr_assert_eq(indexed(&g, i), i < 10, "object %d", i);
	/* every object counted once: no copy was reported lost */
	RUN_UNTIL(&g, g.ev.found == 650 &&
	    g.ev.found - g.ev.lost == (int)disk_stats(g.d)->objects);
	/* half of them read again; 9.6 MB more */
	for (int i = 0; i < 5; i++)
		check_read_back(&g, i, 16000);
	store_n(&g, 650, 600, 16000);
	RUN_UNTIL(&g, disk_stats(g.d)->readmitted == 15);
	RUN_UNTIL(&g, g.ev.found == 1250 &&
	    g.ev.found - g.ev.lost == (int)disk_stats(g.d)->objects);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(indexed(&g, i), i < 5, "object %d", i);
	cr_assert_leq(disk_stats(g.d)->file_bytes, size);
	/* the copies' segment lists them in its key file */
	uint64_t kept = disk_stats(g.d)->objects;
	disk_close(&g.d);
	rig_open(&g, size);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	cr_assert_eq((uint64_t)g.ev.found, kept);
	cr_assert_eq(disk_stats(g.d)->scan_from_keys,
	    disk_stats(g.d)->scan_segments);
	for (int i = 0; i < 5; i++)
		check_read_back(&g, i, 16000);
	rig_stop(&g);
}

/* A hot record whose bytes went bad is not copied: the copy checks it
 * whole, drops it, counts it and reports it lost. */
Test(disk, a_rotten_hot_record_is_dropped_not_readmitted)
{
	struct rig g;
	char path[sizeof(g.dir) + 32];

	rig_start(&g, 8 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 50, 16000);
	RUN_UNTIL(&g, g.ev.found == 50);
	check_read_back(&g, 0, 16000);
	check_read_back(&g, 1, 16000);
	/* object 0 is the first segment's first record: a byte of its body */
	snprintf(path, sizeof(path), "%s/seg-0000000000", g.dir);
	poke(path, 8000, 0x20);
	store_n(&g, 50, 600, 16000);
	RUN_UNTIL(&g, disk_stats(g.d)->readmitted == 1 &&
	    disk_stats(g.d)->dropped[DISK_DROP_CHECKSUM] == 1);
	cr_assert_not(indexed(&g, 0));
	cr_assert(indexed(&g, 1));
	RUN_UNTIL(&g, g.ev.found == 650 &&
	    g.ev.found - g.ev.lost == (int)disk_stats(g.d)->objects);
	rig_stop(&g);
}

/* A segment of hot records still frees three quarters of itself: at most
 * a quarter is copied. Objects memory holds count as hot, and memory's
 * link follows the copy (moved) or is cleared (unlinked). */
Test(disk, readmission_takes_at_most_a_quarter_of_a_segment)
{
	struct rig g;
	char key[64];
	const size_t rec = 16000 + 200; /* a record of these, at least */

	rig_start(&g, 8 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	for (int i = 0; i < 50; i++) {
		key_of(key, sizeof(key), i);
		struct store_obj *o = obj(key, 16000, (char)('a' + i % 26));
		bool stored = false;
		RUN_UNTIL(&g, stored || (stored = disk_store(g.d, o, true)));
		store_obj_unref(&o);
	}
	for (int i = 50; disk_stats(g.d)->segments_evicted == 0; i++)
		store_n(&g, i, 1, 16000);
	cr_assert_eq(disk_stats(g.d)->segments_evicted, 1);
	RUN_UNTIL(&g, disk_stats(g.d)->readmitted == (uint64_t)g.ev.moved);
	fprintf(stderr, "figure: re-admitted %d of 50 hot records\n",
	    g.ev.moved);
	cr_assert_geq(g.ev.moved, 10);
	cr_assert_leq((size_t)g.ev.moved * rec, (1u << 20) / 4);
	cr_assert_eq(g.ev.moved + g.ev.unlinked, 50);
	int still = 0;
	for (int i = 0; i < 50; i++)
		still += indexed(&g, i);
	cr_assert_eq(still, g.ev.moved);
	rig_stop(&g);
}

Test(disk, an_invalidation_outlives_a_restart)
{
	struct rig g;
	char key[64];

	rig_start(&g, 64 << 20);
	store_n(&g, 0, 3, 1000);
	RUN_UNTIL(&g, g.ev.found == 3);
	key_of(key, sizeof(key), 1);
	cr_assert_eq(disk_forget(g.d, key, strlen(key)), 1);
	cr_assert_eq(g.ev.lost, 1);
	cr_assert_null(read_back(&g, key));
	disk_close(&g.d);
	rig_open(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	/* the scan meets the object, then its tombstone */
	cr_assert_eq(g.ev.found - g.ev.lost, 2);
	cr_assert_eq(disk_stats(g.d)->objects, 2);
	cr_assert_null(read_back(&g, key));
	rig_stop(&g);
}

/*
 * A clean stop leaves every segment a key file, and a start reads those
 * instead of the records: the same objects, readable. A key file that
 * does not hold (a bit flipped) is passed over for a scan of its segment,
 * which writes it anew.
 */
Test(disk, a_start_reads_key_files_and_scans_past_a_bad_one)
{
	struct rig g;
	char key[64], path[512];

	rig_start(&g, 32 << 20); /* segments of 2 MB */
	store_n(&g, 0, 600, 9000);
	RUN_UNTIL(&g, g.ev.found == 600);
	/* one invalidated: the key file must carry its tombstone */
	key_of(key, sizeof(key), 7);
	cr_assert_eq(disk_forget(g.d, key, strlen(key)), 1);
	uint64_t segs = disk_stats(g.d)->segments;
	cr_assert_geq(segs, 3);
	disk_close(&g.d);

	rig_open(&g, 32 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	const struct disk_stats *st = disk_stats(g.d);
	cr_assert_eq(st->scan_segments, segs);
	cr_assert_eq(st->scan_from_keys, segs, "%llu of %llu from key files",
	    (unsigned long long)st->scan_from_keys, (unsigned long long)segs);
	cr_assert_eq(g.ev.found - g.ev.lost, 599);
	cr_assert_eq(st->objects, 599);
	cr_assert_eq(g.ev.expires_wrong, 0, "key files lost the expiry");
	cr_assert_null(read_back(&g, key));
	for (int i = 0; i < 600; i += 61) {
		if (i != 7)
			check_read_back(&g, i, 9000);
	}
	disk_close(&g.d);

	/* the first segment's key file goes bad: that segment is scanned */
	uint32_t first = UINT32_MAX;
	DIR *dp = opendir(g.dir);
	struct dirent *de;
	while ((de = readdir(dp)) != NULL) {
		unsigned id;
		if (sscanf(de->d_name, "seg-%10u.keys", &id) == 1 && id < first)
			first = id;
	}
	closedir(dp);
	keys_file(&g, first, path, sizeof(path));
	poke(path, 40, 0x10);
	rig_open(&g, 32 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	st = disk_stats(g.d);
	cr_assert_eq(st->scan_from_keys, st->scan_segments - 1);
	cr_assert_eq(st->keys_errors, 1, "the bad key file is not counted");
	cr_assert_eq(st->objects, 599);
	cr_assert_eq(g.ev.expires_wrong, 0, "the scan lost the expiry");
	key_of(key, sizeof(key), 0);
	struct store_obj *o = read_back(&g, key);
	check_body(o, 9000, 0);
	store_obj_unref(&o);
	disk_close(&g.d);

	/* the scan wrote it anew */
	rig_open(&g, 32 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	st = disk_stats(g.d);
	cr_assert_eq(st->scan_from_keys, st->scan_segments);
	cr_assert_eq(st->objects, 599);
	rig_stop(&g);
}

Test(disk, a_second_process_cannot_share_the_directory)
{
	struct rig g;
	struct disk_conf c = {.path = NULL, .size = 64 << 20, .threads = 1};
	struct disk_events ev = rig_events(NULL);
	char err[256];

	rig_start(&g, 64 << 20);
	c.path = g.dir;
	/* flock is per open file description: a second open conflicts */
	cr_assert_null(disk_open(g.base, &c, &ev, err, sizeof(err)));
	cr_assert(strstr(err, "in use") != NULL, "%s", err);
	rig_stop(&g);
}

/* The index's memory per object stays within what proxy/README.md states
 * (52 bytes: a 32-byte entry, its growth slack, its bucket). */
Test(disk, the_index_costs_at_most_52_bytes_an_object)
{
	struct rig g;

	rig_start(&g, 64 << 20);
	store_n(&g, 0, 20000, 100);
	RUN_UNTIL(&g, g.ev.found == 20000);
	const struct disk_stats *st = disk_stats(g.d);
	double per = (double)st->index_bytes / (double)st->objects;
	fprintf(stderr, "figure: disk index %.1f bytes an object (%llu "
	    "objects)\n", per, (unsigned long long)st->objects);
	cr_assert_leq(per, 52.0);
	rig_stop(&g);
}

/* Pages of fd in the page cache, counted through a map never touched
 * (which, unlike a read, starts no read-ahead). */
static size_t
resident_pages(int fd)
{
	struct stat st;
	size_t n = 0;

	cr_assert_eq(fstat(fd, &st), 0);
	if (st.st_size == 0)
		return 0;
	size_t pages = ((size_t)st.st_size + 4095) / 4096;
	unsigned char *vec = malloc(pages);
	void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd,
	    0);
	cr_assert(vec != NULL && map != MAP_FAILED);
	cr_assert_eq(mincore(map, (size_t)st.st_size, vec), 0);
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(map, (size_t)st.st_size);
	free(vec);
	return n;
}

/* The segment files' pages leave the page cache, and stay out: a
 * read-ahead still in flight may bring some back after a first drop. */
static void
drop_page_cache(const struct rig *g)
{
	for (int tries = 0; tries < 100; tries++) {
		DIR *dp = opendir(g->dir);
		struct dirent *de;
		size_t left = 0;
		cr_assert_not_null(dp);
		while ((de = readdir(dp)) != NULL) {
			char p[512];
			snprintf(p, sizeof(p), "%s/%s", g->dir, de->d_name);
			int fd = strncmp(de->d_name, "seg-", 4) == 0 ?
			    open(p, O_RDONLY) : -1;
			if (fd < 0)
				continue;
			cr_assert_eq(fdatasync(fd), 0);
			cr_assert_eq(posix_fadvise(fd, 0, 0,
			    POSIX_FADV_DONTNEED), 0);
			left += resident_pages(fd);
			close(fd);
		}
		closedir(dp);
		if (left == 0)
			return;
		usleep(10000);
	}
	cr_assert_fail("the segments' pages would not leave the page cache");
}

/*
 * Whether this machine's kernel and disk refuse an RWF_NOWAIT read of
 * pages just dropped from the page cache, three times out of three, on a
 * scratch file in dir. They need not: RWF_NOWAIT starts the kernel's read
 * before it gives up, and a fast device (a VM's disk backed by the host's
 * cache) may finish it in time; CI saw 50 reads of 50 succeed so.
 */
static bool
nowait_refuses_dropped_pages(const char *dir)
{
	char path[512], buf[16384];
	int refused = 0;

	snprintf(path, sizeof(path), "%s/probe", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	for (int i = 0; i < 64; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		cr_assert_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	}
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(fdatasync(fd), 0);
		cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		struct iovec v = {buf, sizeof(buf)};
		errno = 0;
		refused += preadv2(fd, &v, 1, (off_t)k * 300000, RWF_NOWAIT) <
		    0 && errno == EAGAIN;
	}
	close(fd);
	unlink(path);
	return refused == 3;
}

/*
 * What the page cache holds is read on the loop, at once; what it lost
 * goes to a thread; the bytes are right both ways. The second half holds
 * only where the kernel refuses such reads (nowait_refuses_dropped_pages),
 * and even there a read may race one: each dropped object is tried up to
 * five times, and one of the ten must reach the thread. A build that
 * never hands a read to a thread fails it.
 */
Test(disk, cached_records_are_read_at_once_others_by_a_thread)
{
	struct rig g;
	char key[64];
	bool now;
	struct statfs fs;

	rig_start(&g, 64 << 20);
	cr_assert_eq(statfs(g.dir, &fs), 0);
	if (fs.f_type == TMPFS_MAGIC) {
		rig_stop(&g);
		cr_skip_test("%s is a tmpfs: its pages never leave", g.dir);
	}
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 20, 16384);
	RUN_UNTIL(&g, g.ev.found == 20);
	for (int i = 0; i < 10; i++) {
		key_of(key, sizeof(key), i);
		struct store_obj *o = read_back_as(&g, key, 1 << 20, &now);
		cr_assert(now, "object %d, just written, was not read at once",
		    i);
		check_body(o, 16384, i);
		store_obj_unref(&o);
	}
	cr_assert_eq(disk_stats(g.d)->reads_cached, 10);
	bool refuses = nowait_refuses_dropped_pages(g.dir);
	int again = 0, threaded = 0;
	for (int i = 10; i < 20; i++) {
		for (int tries = 0; tries < 5; tries++) {
			drop_page_cache(&g);
			key_of(key, sizeof(key), i);
			struct store_obj *o = read_back_as(&g, key, 1 << 20,
			    &now);
			check_body(o, 16384, i);
			store_obj_unref(&o);
			if (!now) {
				threaded++;
				break;
			}
			again++;
		}
	}
	fprintf(stderr, "figure: %d of 10 objects dropped from the page "
	    "cache read by a thread, %d tries read on the loop\n", threaded,
	    again);
	if (refuses)
		cr_assert_gt(threaded, 0, "every read of a dropped object was "
		    "done on the loop");
	else
		fprintf(stderr, "figure: this machine's disk serves RWF_NOWAIT "
		    "reads of dropped pages: which side reads is not "
		    "asserted\n");
	cr_assert_eq(disk_stats(g.d)->reads_cached, 10 + again);
	cr_assert_eq(disk_stats(g.d)->reads, threaded + 10 + again);
	rig_stop(&g);
}

static int
open_fds(void)
{
	DIR *dp = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(dp);
	while (readdir(dp) != NULL)
		n++;
	closedir(dp);
	return n;
}

/* Bodies left in their segment file share one descriptor a segment: a
 * memory tier holding many of them does not run the process out of
 * them (one each, before). */
Test(disk, bodies_in_a_file_share_one_descriptor)
{
	struct rig g;
	char key[64];
	struct store_obj *held[200];

	rig_start(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 200, 70000);
	RUN_UNTIL(&g, g.ev.found == 200);
	int before = open_fds();
	for (int i = 0; i < 200; i++) {
		key_of(key, sizeof(key), i);
		held[i] = read_back_as(&g, key, 0, NULL);
		cr_assert_not_null(held[i]);
		cr_assert(held[i]->body->ext != NULL && held[i]->body->ext->on_disk);
	}
	int during = open_fds();
	uint64_t segs = disk_stats(g.d)->segments;
	cr_assert_leq(during - before, (int)segs, "%d descriptors more for "
	    "200 bodies in %llu segments", during - before,
	    (unsigned long long)segs);
	/* the bytes are the file's, from where each body starts */
	for (int i = 0; i < 200; i += 41) {
		char buf[70000];
		const struct store_ext *x = held[i]->body->ext;
		cr_assert_eq(pread(x->fd, buf, sizeof(buf), x->off),
		    (ssize_t)sizeof(buf));
		for (size_t k = 0; k < sizeof(buf); k++)
			cr_assert_eq(buf[k], 'a' + i % 26, "object %d byte %zu", i, k);
	}
	for (int i = 0; i < 200; i++)
		store_obj_unref(&held[i]);
	rig_stop(&g);
}

/* A good record that cannot be held (here: no descriptor left for its
 * segment's file) is a miss that is counted, not a crash or a silence;
 * the record stays, and is served once descriptors are back. */
Test(disk, a_record_that_cannot_be_held_is_counted)
{
	struct rig g;
	char key[64];
	struct rlimit was, now;

	rig_start(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 1, 70000);
	RUN_UNTIL(&g, g.ev.found == 1);
	key_of(key, sizeof(key), 0);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
	int lowest = dup(0);
	cr_assert_geq(lowest, 0);
	close(lowest);
	now = was;
	now.rlim_cur = (rlim_t)lowest;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &now), 0);
	struct store_obj *o = read_back_as(&g, key, 0, NULL);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &was), 0);
	cr_assert_null(o);
	cr_assert_eq(disk_stats(g.d)->read_errors, 1);
	cr_assert_eq(disk_stats(g.d)->objects, 1, "the record stays");
	o = read_back_as(&g, key, 0, NULL);
	cr_assert_not_null(o);
	store_obj_unref(&o);
	rig_stop(&g);
}

/* A check (-t) of a directory a node is using changes nothing: the
 * node's new, still empty segment stays. And a file named as a segment
 * that is not one (here a directory) is left alone, not fatal. */
Test(disk, a_check_leaves_a_running_node_alone)
{
	struct rig g;
	char err[256], path[sizeof(g.dir) + 32];
	struct stat st;

	rig_start(&g, 64 << 20);
	snprintf(path, sizeof(path), "%s/seg-0000000000", g.dir);
	cr_assert(stat(path, &st) == 0 && st.st_size == 0, "no empty head");
	cr_assert_eq(disk_check(g.dir, 64 << 20, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert(stat(path, &st) == 0, "the check removed the node's head");
	disk_close(&g.d);
	snprintf(path, sizeof(path), "%s/seg-0000000007", g.dir);
	cr_assert(mkdir(path, 0755) == 0);
	rig_open(&g, 64 << 20);
	store_n(&g, 0, 3, 1000);
	RUN_UNTIL(&g, g.ev.found == 3);
	cr_assert(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
	/* the new segments are numbered past it */
	snprintf(path, sizeof(path), "%s/seg-0000000008", g.dir);
	cr_assert(stat(path, &st) == 0 && st.st_size > 0);
	rig_stop(&g);
}
