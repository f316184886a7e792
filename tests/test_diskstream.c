/*
 * Records written while their body arrives (diskstream.c), on a real
 * directory with the real I/O threads: committed only once ended with
 * every byte, and read back whole; the stream holds the feeder back
 * rather than grow; one given up is never served, and a scan after a
 * crash steps over it to the records behind it; a newer copy of a
 * variant supersedes the older ones, whichever way each was written;
 * its readers hear of the bytes on the disk without a gap, and one write
 * that stalls while later ones finish holds the feeder back.
 *
 * A stalled write is a real one made to wait: this binary's pwrite
 * passes every call to the C library's, except, once armed, the next
 * one (an I/O thread's), which waits for its release first.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "clock.h"
#include "diskrig.h"

static ssize_t (*libc_pwrite)(int, const void *, size_t, off_t);
static atomic_bool stall_armed, stalled, stall_released;

__attribute__((constructor)) static void
find_libc_pwrite(void)
{
	libc_pwrite = (ssize_t (*)(int, const void *, size_t, off_t))dlsym(
	    RTLD_NEXT, "pwrite");
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
	bool armed = true;

	if (atomic_compare_exchange_strong(&stall_armed, &armed, false)) {
		atomic_store(&stalled, true);
		while (!atomic_load(&stall_released))
			usleep(1000);
	}
	return libc_pwrite(fd, buf, n, off);
}

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

struct heard {
	int times;
	uint64_t readable;
	bool failed, went_back;
};

static void
on_written(void *arg, uint64_t readable, bool failed)
{
	struct heard *h = arg;

	h->times++;
	h->went_back = h->went_back || readable < h->readable;
	h->readable = readable;
	h->failed = h->failed || failed;
}

/* Writes 64 KB of the pattern from at and hands the partial piece over
 * at once, as a shared fetch does while its readers wait. */
static void
write_and_flush(struct disk_stream *ds, uint64_t at, uint64_t len)
{
	uint8_t buf[64 * 1024];
	size_t k = len - at < sizeof(buf) ? (size_t)(len - at) : sizeof(buf);

	for (size_t i = 0; i < k; i++)
		buf[i] = byte_at(at + i);
	cr_assert_eq(disk_stream_write(ds, buf, k), 0);
	cr_assert_eq(disk_stream_flush(ds, false), 0);
}

/*
 * The record's head is written by an I/O thread that stalls; the other
 * threads write the body's pieces behind it meanwhile. Nothing is
 * readable (the head is the gap), and the feeder is held back after a
 * few pieces, however fast the later ones finish: it was fed on while
 * the pieces out of order piled up past their table (the node
 * aborted). Released, the stream goes on: every byte readable in
 * order, the record committed and read back whole.
 */
Test(diskstream, a_stalled_write_holds_the_feeder_back_while_later_ones_end)
{
	struct rig g;
	const char *key = "http://origin.example/stalled.iso";
	const uint64_t len = 24u << 20;
	struct heard h = {0};
	int drained = 0;
	uint64_t at = 0;

	rig_start(&g, 128 << 20);
	RUN_UNTIL(&g, g.ev.scanned == 1);
	atomic_store(&stall_armed, true);
	struct disk_stream *ds = begin(&g, key, len);
	RUN_UNTIL(&g, atomic_load(&stalled));
	disk_stream_on_written(ds, on_written, &h);
	disk_stream_on_drained(ds, on_drained, &drained);
	/* fed while not full, the loop turning between writes; full for a
	 * second on end is held back */
	for (long full_since = 0; at < len;) {
		struct timeval tv = {0, 1000};
		event_base_loopexit(g.base, &tv);
		event_base_dispatch(g.base);
		if (!disk_stream_full(ds)) {
			full_since = 0;
			write_and_flush(ds, at, len);
			at += 64 * 1024 < len - at ? 64 * 1024 : len - at;
		} else if (full_since == 0) {
			full_since = (long)mono_ms();
		} else if ((long)mono_ms() - full_since > 1000) {
			break;
		}
	}
	fprintf(stderr, "figure: a stalled head write: the feeder held back "
	    "after %llu KB\n", (unsigned long long)(at >> 10));
	cr_assert_lt(at, 16u << 20, "the feeder was never held back");
	cr_assert_eq(h.readable, 0, "bytes after the gap were readable");
	atomic_store(&stall_released, true);
	while (at < len) {
		RUN_UNTIL(&g, !disk_stream_full(ds));
		write_and_flush(ds, at, len);
		at += 64 * 1024 < len - at ? 64 * 1024 : len - at;
	}
	cr_assert_gt(drained, 0);
	disk_stream_end(&ds);
	RUN_UNTIL(&g, g.ev.found == 1);
	cr_assert_eq(h.readable, len);
	cr_assert(!h.failed);
	cr_assert(!h.went_back, "the readable prefix went back");
	struct store_obj *o = read_back(&g, key);
	check_pattern(o, len);
	store_obj_unref(&o);
	rig_stop(&g);
}
