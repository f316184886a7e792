/*
 * Records written while their body arrives (diskstream.c), on a real
 * directory with the real I/O threads: committed only once ended with
 * every byte, and read back whole; the stream holds the feeder back
 * rather than grow; one given up is never served, and a scan after a
 * crash steps over it to the records behind it; a newer copy of a
 * variant supersedes the older ones, whichever way each was written.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "diskrig.h"

static uint8_t
byte_at(uint64_t k)
{
	return (uint8_t)(k * 7 + k / 4093);
}

static void
on_drained(void *arg)
{
	(*(int *)arg)++;
}

/* Feeds bytes [from, from + n) of the pattern as a fetch does: 64 KB at
 * a time, and while the stream is full the loop turns instead. */
static void
feed(struct rig *g, struct disk_stream *ds, uint64_t from, uint64_t n)
{
	uint8_t buf[64 * 1024];

	for (uint64_t at = from; at < from + n;) {
		size_t k = from + n - at < sizeof(buf) ? (size_t)(from + n -
		    at) : sizeof(buf);
		RUN_UNTIL(g, !disk_stream_full(ds));
		for (size_t i = 0; i < k; i++)
			buf[i] = byte_at(at + i);
		cr_assert_eq(disk_stream_write(ds, buf, k), 0);
		at += k;
	}
}

/* The body of o is the pattern, len bytes, every one checked. */
static void
check_pattern(const struct store_obj *o, uint64_t len)
{
	static uint8_t buf[1 << 20];

	cr_assert_not_null(o);
	cr_assert_eq(o->body->len, len);
	cr_assert_not_null(o->body->ext, "a large body stays in the file");
	for (uint64_t at = 0; at < len;) {
		size_t k = len - at < sizeof(buf) ? (size_t)(len - at) :
		    sizeof(buf);
		cr_assert_eq(pread(o->body->ext->fd, buf, k, o->body->ext->off +
		    (off_t)at), (ssize_t)k);
		for (size_t i = 0; i < k; i++)
			cr_assert_eq(buf[i], byte_at(at + i), "byte %llu",
			    (unsigned long long)(at + i));
		at += k;
	}
}

static struct disk_stream *
begin(struct rig *g, const char *key, uint64_t len)
{
	struct store_obj *shell = obj(key, 0, 0);
	struct disk_stream *ds = disk_stream_begin(g->d, shell, len);

	store_obj_unref(&shell);
	cr_assert_not_null(ds);
	return ds;
}

Test(diskstream, a_stream_is_committed_whole_and_read_back)
{
	struct rig g;
	const char *key = "http://origin.example/big.iso";
	const uint64_t len = (10u << 20) + 123;
	int drained = 0;

	rig_start(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	struct disk_stream *ds = begin(&g, key, len);
	disk_stream_on_drained(ds, on_drained, &drained);
	feed(&g, ds, 0, len);
	cr_assert_gt(drained, 0, "the stream never held the feeder back");
	/* not an object until ended */
	cr_assert_eq(g.ev.found, 0);
	cr_assert_null(read_back(&g, key));
	disk_stream_end(&ds);
	cr_assert_null(ds);
	RUN_UNTIL(&g, g.ev.found == 1);
	cr_assert_eq(disk_stats(g.d)->streams, 1);
	struct store_obj *o = read_back(&g, key);
	check_pattern(o, len);
	store_obj_unref(&o);
	/* and after a restart, its checksum checked on the first read */
	disk_close(&g.d);
	rig_open(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	cr_assert_eq(g.ev.found, 1);
	o = read_back(&g, key);
	check_pattern(o, len);
	store_obj_unref(&o);
	rig_stop(&g);
}

/*
 * A stream given up halfway (its fetch failed) is never served. Records
 * written after it in the same segment are found by a scan after a crash
 * (here: its key file removed), which steps over the torn one.
 */
Test(diskstream, a_stream_given_up_is_never_served_nor_blocks_a_scan)
{
	struct rig g;
	char kf[256];
	const char *key = "http://origin.example/cut.iso";

	rig_start(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	struct disk_stream *ds = begin(&g, key, 3u << 20);
	feed(&g, ds, 0, (3u << 20) / 2);
	store_n(&g, 0, 5, 3000);
	disk_stream_abort(&ds);
	cr_assert_null(ds);
	RUN_UNTIL(&g, g.ev.found == 5 &&
	    disk_stats(g.d)->dropped[DISK_DROP_ABORTED] == 1);
	cr_assert_null(read_back(&g, key));
	disk_close(&g.d);
	keys_file(&g, 0, kf, sizeof(kf));
	cr_assert_eq(unlink(kf), 0);
	rig_open(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	cr_assert_eq(g.ev.found, 5, "found %d of the 5 behind the torn one",
	    g.ev.found);
	cr_assert_eq(disk_stats(g.d)->dropped[DISK_DROP_TORN], 1);
	cr_assert_null(read_back(&g, key));
	for (int i = 0; i < 5; i++)
		check_read_back(&g, i, 3000);
	rig_stop(&g);
}

/* One copy of a variant at a time: a newer one, streamed or written
 * whole, drops the older and reports it lost; the summary's count of
 * the key goes up once and down once. */
Test(diskstream, a_newer_copy_supersedes_the_older)
{
	struct rig g;
	char key[64];
	disk_ent e[4];
	const uint64_t len = 2u << 20;

	rig_start(&g, 64 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	store_n(&g, 0, 1, 5000);
	RUN_UNTIL(&g, g.ev.found == 1);
	key_of(key, sizeof(key), 0);
	uint64_t hash = XXH3_64bits(key, strlen(key));
	struct disk_stream *ds = begin(&g, key, len);
	feed(&g, ds, 0, len);
	disk_stream_end(&ds);
	RUN_UNTIL(&g, g.ev.found == 2 && g.ev.lost == 1);
	cr_assert_eq(disk_lookup(g.d, hash, e, 4), 1);
	struct store_obj *o = read_back(&g, key);
	check_pattern(o, len);
	store_obj_unref(&o);
	/* and the other way: a whole write after the stream */
	store_n(&g, 0, 1, 700);
	RUN_UNTIL(&g, g.ev.found == 3 && g.ev.lost == 2);
	cr_assert_eq(disk_lookup(g.d, hash, e, 4), 1);
	o = read_back(&g, key);
	check_body(o, 700, 0);
	store_obj_unref(&o);
	cr_assert_eq(disk_stats(g.d)->dropped[DISK_DROP_REPLACED], 2);
	rig_stop(&g);
}
