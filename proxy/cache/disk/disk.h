/*
 * The disk tier: responses kept in append-only segment files under
 * cache_dir, found through an index in memory. disk.c's opening comment
 * says why it is shaped so. One lock guards it (disk_lock): every call
 * here but disk_open, disk_close, disk_check and the calls on a stream
 * once begun (which take it themselves) expects the caller to hold it. The I/O
 * runs on an iopool (iopool.h), and each job reports to the loop of the
 * worker that submitted it, through the callbacks in struct disk_events
 * and the ones a call is given, with the lock held.
 */
#ifndef DISK_H
#define DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct event_base;
struct disk;

/* An entry of the index; 0 is none. Valid until the entry is dropped or
 * its segment evicted (disk_events.relinked says when, for objects that
 * memory holds too). */
typedef uint32_t disk_ent;

struct disk_events {
	/* The start-up scan indexed a stored object, or a record only the
	 * disk holds was committed: it joins the cache, fresh until
	 * expires_ms (wall clock; store_meta_expires_ms of its meta). */
	void (*found)(void *arg, const char *key, size_t klen,
	    uint64_t expires_ms);
	/* An object only the disk held is gone (its segment was evicted, or
	 * its record failed a check when read). */
	void (*lost)(void *arg, const char *key, size_t klen);
	/* The disk copy of an object memory holds too moved from entry e
	 * to entry to (re-admitted at an eviction), or is gone (to 0): the
	 * caller's link to e follows. */
	void (*relinked)(void *arg, uint64_t hash, disk_ent e, disk_ent to);
	/* A newer copy of the object memory holds linked to e was written
	 * to the disk: memory drops its copy (which drops e). */
	void (*stale)(void *arg, uint64_t hash, disk_ent e);
	/* Every segment found at start-up has been scanned. */
	void (*scanned)(void *arg);
	void *arg;
};

struct disk_conf {
	const char *path;
	uint64_t size;        /* the segment files' bytes, at most */
	unsigned threads;     /* I/O threads */
};

/* Why records were dropped, as the metrics count them. */
#define DISK_DROP_REASONS(X) \
	X(TORN, "torn")           /* no commit mark: cut short by a crash */ \
	X(CHECKSUM, "checksum")   /* committed but its bytes are wrong */ \
	X(IO, "io_error")         /* the read or write failed */ \
	X(REPLACED, "replaced")   /* a newer copy, or an invalidation */ \
	X(ABORTED, "aborted")     /* written as it arrived, and it never \
	                           * all did */ \
	X(SHORT, "short")         /* its file ends before it: cut */

#define DISK_DROP_ENUM(name, label) DISK_DROP_##name,
enum disk_drop { DISK_DROP_REASONS(DISK_DROP_ENUM) DISK_DROP_N };
#undef DISK_DROP_ENUM

struct disk_stats {
	uint64_t objects;       /* committed entries */
	uint64_t bytes;         /* their records' bytes */
	uint64_t file_bytes;    /* the segment files', live or not */
	uint64_t size;          /* the configured bound */
	uint64_t segments;
	uint64_t segments_evicted;
	uint64_t readmitted;     /* hot records an eviction copied to the
	                          * head (disk.c) */
	uint64_t writes, write_bytes, write_errors, write_us;
	uint64_t write_refused;  /* disk_store said no: no room yet, or too
	                          * large, or out of memory */
	uint64_t streams;        /* of the writes, records written as their
	                          * body arrived (disk_stream_begin) */
	uint64_t reads, read_bytes, read_errors, read_us;
	uint64_t reads_cached;   /* of the reads, made on the loop from the
	                          * page cache (disk_read) */
	uint64_t dropped[DISK_DROP_N];
	uint64_t scan_segments, scan_segments_done;
	uint64_t scan_records;
	uint64_t scan_from_keys; /* segments read from their key file */
	/* key files (diskkeys.c): written; failed to write, or found
	 * not to be trusted at start-up */
	uint64_t keys_written, keys_errors;
	/* segment files found changed by another hand (disk_trusted) */
	uint64_t segments_changed;
	uint64_t scan_us;        /* how long the scan took, once done */
	bool scanning;
	uint64_t index_bytes;    /* the index's memory */
};

/*
 * Opens (creating it if need be) the cache_dir c->path and starts
 * scanning the segments found there; writes go to a new segment. On
 * failure returns NULL with a sentence in err.
 */
struct disk *disk_open(struct event_base *base, const struct disk_conf *c,
    const struct disk_events *ev, char *err, size_t errlen);
/* Waits for the I/O in flight, then closes. Accepts NULL. */
void disk_close(struct disk **d);
/* The disk lock, recursive: taken by each thread before the store's
 * locks (tiers.c). */
void disk_lock(struct disk *d);
void disk_unlock(struct disk *d);
/* The node is stopping: the jobs still running report to the loop of
 * disk_open's base alone (iopool_home_only). */
void disk_home_only(struct disk *d);

/*
 * Checks a cache_dir for -t: it exists or can be created, is writable,
 * and size fits in its file system's free space with what sumcache
 * already keeps there. Returns 0, or -1 with a sentence in err.
 */
int disk_check(const char *path, uint64_t size, char *err, size_t errlen);

/* Starts the scan of what disk_open found; disk_events.found reports
 * each object, .scanned the end. */
void disk_scan(struct disk *d);

/*
 * Writes o to the disk (the job holds a reference to it) and returns its
 * entry, which disk_lookup finds once the write is committed; 0 when o
 * cannot be written now (too large, no room yet, out of memory). in_mem:
 * the memory tier holds o and the summary counts it; otherwise the disk
 * reports it through found() when the write is committed.
 */
disk_ent disk_store(struct disk *d, struct store_obj *o, bool in_mem);

/*
 * A record written while its body arrives (diskstream.c says how).
 * disk_stream_begin reserves it for o's key, head, varykey and meta, with
 * body_len bytes of body to come (o's own body is not read), and returns
 * NULL when it cannot now (too large, no room yet, out of memory).
 * disk_stream_write copies n bytes of the body (at most a megabyte: a
 * fetch's chunk); -1 when the stream has failed, which the caller then
 * aborts. While disk_stream_full, the caller feeds no more; drained(arg)
 * runs when the stream is down to half. disk_stream_end, once all body_len bytes are written, commits
 * the record when they are on the disk (found() then reports it);
 * disk_stream_abort gives it up. Both clear *ds; the stream is the
 * disk's after them. A stream holds at most DISK_STREAM_MEM bytes.
 */
#define DISK_STREAM_HIGH (4u << 20)
#define DISK_STREAM_MEM (DISK_STREAM_HIGH + (2u << 20))
struct disk_stream;
struct disk_stream *disk_stream_begin(struct disk *d, const struct store_obj *o,
    uint64_t body_len);
int disk_stream_write(struct disk_stream *ds, const void *p, size_t n);
bool disk_stream_full(const struct disk_stream *ds);
void disk_stream_on_drained(struct disk_stream *ds, void (*drained)(void *arg),
    void *arg);
void disk_stream_end(struct disk_stream **ds);
void disk_stream_abort(struct disk_stream **ds);
/*
 * For readers while the stream is written (a collapsed fetch's clients):
 * disk_stream_body is a new body of the record's bytes in the segment
 * file (on_disk, by reference; NULL on ENOMEM), of which the first
 * readable bytes are on the disk. written(arg, readable, failed) runs
 * each time that prefix grows, and once when a write fails, until the
 * stream is aborted or its mark is written; it runs inside the disk's
 * completion, and must neither end nor abort the stream.
 * disk_stream_flush hands the bytes of a partial piece to the disk now,
 * for readers waiting at the end of what arrived (at most a few partial
 * pieces in flight, unless last: the body's end); -1 when the stream has
 * failed.
 */
struct store_body *disk_stream_body(const struct disk_stream *ds);
void disk_stream_on_written(struct disk_stream *ds,
    void (*written)(void *arg, uint64_t readable, bool failed), void *arg);
int disk_stream_flush(struct disk_stream *ds, bool last);

/* Up to max committed entries under key hash (store.c's XXH3-64 of the
 * key), newest first. */
unsigned disk_lookup(struct disk *d, uint64_t hash, disk_ent *out,
    unsigned max);

/*
 * Reads e's record, which should be key's. done(arg, o) runs on the
 * caller's loop with a new object (one reference, the caller's; o->disk
 * is e), or NULL when the record is another key's, is gone, or fails a
 * check (then it is dropped and counted). Bodies up to mem_max bytes are read into
 * memory; longer ones are sent from the segment file (sharing one
 * descriptor). A body's checksum is verified once, at its first read
 * since start-up. A record whose bytes are all in the page cache is read
 * at once, on the loop: done has run when this returns true. Otherwise
 * the read goes to a thread.
 */
typedef void disk_read_f(void *arg, struct store_obj *o);
bool disk_read(struct disk *d, disk_ent e, size_t mem_max, const char *key,
    size_t klen, disk_read_f *done, void *arg);
/*
 * Whether the disk holds key (its newest copy), without waiting for the
 * device: 1 with the copy's meta in *m when its head is in the page
 * cache, 0 when it may hold it (the head is not), -1 when it does not.
 */
int disk_peek(struct disk *d, const char *key, size_t klen,
    struct store_meta *m);

/*
 * Reads len bytes at off of fd off the loop, so that they are in the
 * page cache when the loop sends them (disksend.c); done(arg, off, err)
 * runs on the caller's loop after: err is 0, or the read's errno (EIO,
 * or ENODATA when the file ended first). fd must stay open until then.
 * false, with nothing started, when it cannot now (closing, out of
 * memory): the loop's send then reads the disk itself.
 */
bool disk_warm(struct disk *d, int fd, uint64_t off, size_t len,
    void (*done)(void *arg, uint64_t off, int err), void *arg);

/*
 * Whether the bytes of e's record may be sent as they are, unread: its
 * body was checked since start-up (or written by this process) and its
 * segment file is as this process left it. One fstat. A segment file
 * changed by another hand (a write, a truncation, a write through a
 * mapping: its size, mtime or ctime moved) has every record of it checked
 * again at its next read, so false here means: read e again (disk_read
 * checks its body, and drops it when it fails). A change made while a
 * write of ours to the same file is in flight is taken for ours: the
 * segment that takes the writes is covered between writes only.
 */
bool disk_trusted(struct disk *d, disk_ent e);

/* Where e's record is, to tell it from a later record of the same entry
 * (disk_distrust). */
uint64_t disk_ent_where(const struct disk *d, disk_ent e);
/* disk_trusted, for e's record at where; true when that record is gone
 * (its segment evicted, or the entry replaced: what a sender holds open
 * is no file of the index any more). */
bool disk_trusted_at(struct disk *d, disk_ent e, uint64_t where);
/*
 * Sending e's body from its file failed (an I/O error, or the file ended
 * first): if e is still the record at where, it is read and checked
 * again at its next read (as after a change, disk_trusted). false when
 * it has gone meanwhile.
 */
bool disk_distrust(struct disk *d, disk_ent e, uint64_t where);

/* The object under e is replaced or invalidated: e is dropped. */
void disk_drop(struct disk *d, disk_ent e);
/*
 * Every variant of key leaves the disk, and a tombstone is written so a
 * scan after a crash does not bring them back. The ones only the disk
 * held are reported through lost, and counted in what it returns; the
 * others are memory's to count.
 */
unsigned disk_forget(struct disk *d, const char *key, size_t klen);

/* Memory holds e's object too (promoted), or no longer (demoted). */
void disk_set_in_mem(struct disk *d, disk_ent e, bool in_mem);
bool disk_in_mem(const struct disk *d, disk_ent e);

const struct disk_stats *disk_stats(struct disk *d);
/* The label of a drop reason, for metrics. */
const char *disk_drop_label(enum disk_drop r);

#endif
