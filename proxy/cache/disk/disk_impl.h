/*
 * The disk tier's insides, shared by its files: disk.c (the index, the
 * segments, the interface), diskevict.c (eviction and re-admission),
 * diskrw.c (writing and reading a record), diskscan.c (what the disk
 * holds, read back: the start-up scan, the rebuild walk, opening a
 * cache_dir), diskkeys.c (key files) and diskstream.c (a record written
 * as it arrives). disk.c's opening comment gives the model. Nothing
 * outside them includes this.
 */
#ifndef DISK_IMPL_H
#define DISK_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "disk.h"
#include "iopool.h"
#include "ratelog.h"

/* Segments the size is shared among, and the bounds on one's size. */
#define SEG_COUNT 16
#define SEG_MIN (1u << 20)
#define SEG_MAX (1u << 30)
/* What the scan reads at once: records smaller than this are read with
 * their neighbours, larger ones skipped to their commit mark. */
#define SCAN_WINDOW (1u << 20)
#define IO_CHUNK (1u << 20)

enum {
	E_LIVE = 1,      /* in the hash table */
	E_COMMITTED = 2, /* its record is whole on disk */
	E_IN_MEM = 4,    /* the memory tier holds the object too, linked */
	E_KNOWN = 8,     /* the summary counts it (through memory, or the
	                  * disk's own found()) */
	E_VERIFIED = 32, /* its body is known good: checked since start, or
	                  * written by this process */
	E_HIT = 64,      /* read since it was written: re-admitted when its
	                  * segment is evicted (disk.c) */
};

struct ent {
	uint64_t hash;
	uint32_t next;      /* hash chain */
	uint32_t seg_next;  /* the segment's entries, live or not */
	uint32_t seg;
	uint32_t off;
	uint32_t len;       /* the record's */
	uint16_t vhash;
	uint8_t flags;
	uint8_t unused;
};
_Static_assert(sizeof(struct ent) == 32, "an index entry is 32 bytes");

/* A record as a scan or a key file finds it; key is malloc'd. */
struct found {
	uint64_t hash;
	uint64_t expires_ms; /* store_meta_expires_ms; 0 for a tombstone */
	uint32_t off, len;
	uint16_t vhash;
	bool tomb;
	uint32_t key_len;
	char *key;
};

/* What fstat says of a segment file, to see it change (disk_trusted). */
struct seg_stamp {
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
};

struct seg {
	uint32_t id;
	int fd;
	struct seg_stamp stamp; /* as this process last left the file */
	uint32_t bytes;      /* given out so far: the file's length */
	uint32_t ents;       /* first of its entries */
	unsigned refs;       /* jobs using fd */
	unsigned writes;     /* of them, writes */
	bool gone;           /* evicted: close when refs falls to 0 */
	bool sealed;         /* takes no more writes */
	bool keys_written;   /* its key file is written, or never will be */
	bool keys_lost;      /* a key could not be kept: no key file */
	struct found *keys;  /* its records so far, for its key file */
	size_t nkeys, cap_keys;
	struct bodyfd_file *file; /* bodies sent from it, once one is */
};

/* Every field below, the segments' and the entries', is the disk
 * lock's (mutex: disk.c's opening comment), but conf and path, set at
 * disk_open; and a job's run touches only what its job owns. */
struct disk {
	pthread_mutex_t mutex;   /* the disk lock: recursive */
	struct disk_conf conf;
	char *path;
	struct disk_events ev;
	struct iopool *pool;
	int lock_fd;
	uint64_t seg_target;
	/* the segments, oldest first; the last takes the writes */
	struct seg **segs;
	size_t nsegs, cap_segs;
	struct seg *spare;   /* the next head, opened ahead off the loop */
	bool spare_pending;
	uint32_t next_id;
	/* the index */
	struct ent *ents;    /* ents[0] unused: 0 is "none" */
	uint32_t nents, cap_ents, free_ent;
	uint32_t *buckets;
	uint32_t nbuckets;   /* power of two */
	/* the start-up scan */
	uint32_t scan_id;    /* the next segment to scan is the first at or
	                      * after this id */
	uint32_t scan_end;   /* past the last segment found at start */
	uint64_t scan_start_ms;
	bool closing;        /* no new jobs: the pool is draining */
	bool no_nowait;      /* the file system refuses RWF_NOWAIT */
	struct ratelog write_log, read_log, change_log, keys_log;
	struct disk_stats stats;
};

struct job {
	struct iopool_job pj;
	struct disk *d;
	struct seg *g;
	disk_ent e;
	uint32_t off;
	int err;          /* errno of a failure, or 0 */
	uint64_t us;      /* how long the I/O took */
};

struct write_job {
	struct job j;
	struct store_obj *o;   /* NULL for a tombstone */
	char *tomb_key;
	size_t tomb_len;
	uint32_t len;          /* the record's */
};

/* ---- helpers (disk.c) ---- */

/* The whole of len bytes at off, or -1: errno set, or 0 when the file
 * ends first (a record cut short). */
int disk_pread(int fd, void *buf, size_t len, uint64_t off);
/* With preadv2's flags: RWF_NOWAIT fails with EAGAIN where the bytes are
 * not all in the page cache, never waiting for the device. */
int disk_pread_flags(int fd, void *buf, size_t len, uint64_t off, int flags);
int disk_pwrite(int fd, const void *buf, size_t len, uint64_t off);
/* a's bytes then b's at off, in one call when the kernel takes them. */
int disk_pwrite2(int fd, const void *a, size_t alen, const void *b,
    size_t blen, uint64_t off);
void disk_seg_name(const struct disk *d, uint32_t id, char *buf, size_t len);
uint16_t disk_vary_hash(const char *vary, size_t len);

/* ---- segments ---- */

struct seg *disk_seg_find(const struct disk *d, uint32_t id);
/* The file the segment's bodies are sent from (a descriptor of its own,
 * which outlives g while a body or a send holds it); NULL on failure. */
struct bodyfd_file *disk_seg_file(struct seg *g);
/* g's file as it is now is as this process left it (after a write of
 * ours, and at its opening). */
void disk_seg_stamp(struct seg *g);
/*
 * A write of ours to g begins. With none in flight, g's file is first
 * compared with its stamp: a change behind our back since our last
 * write would otherwise be taken for ours when the stamp is renewed
 * after this one (a change while ours are in flight still is).
 */
void disk_seg_write_begins(struct disk *d, struct seg *g);
/* Closes g's descriptors (what a body holds stays open) and frees g. */
void disk_seg_free(struct seg *g);
/* The segment that takes the writes. */
struct seg *disk_head_seg(const struct disk *d);
int disk_seg_append(struct disk *d, struct seg *g);
struct seg *disk_seg_new(uint32_t id, int fd);
/* A job is done with g: an evicted segment closes with its last job. */
void disk_seg_release(struct seg *g);
/* Evicts the oldest segment (diskevict.c); false when it cannot go yet. */
bool disk_evict_oldest(struct disk *d);
/* Room for len bytes at the head; NULL when there is none now. */
struct seg *disk_make_room(struct disk *d, uint64_t len);

/* ---- the index ---- */

uint32_t *disk_bucket(struct disk *d, uint64_t hash);
int disk_index_grow(struct disk *d);
void disk_index_bytes(struct disk *d);
disk_ent disk_ent_new(struct disk *d, struct seg *g, uint64_t hash,
    uint16_t vhash, uint32_t off, uint32_t len);
void disk_unhash(struct disk *d, disk_ent e);
void disk_ent_drop(struct disk *d, disk_ent e, enum disk_drop why);
/* Drops e and tells the cache what it lost (disk.c says how). */
void disk_ent_forget(struct disk *d, disk_ent e, enum disk_drop why,
    const char *key, size_t klen);
/* e's record is committed: older copies of its variant are not the
 * object any more. Memory drops its copy (disk_events.stale), the disk
 * its entries; what only the disk held is reported lost. */
void disk_supersede(struct disk *d, disk_ent e, const char *key,
    size_t klen);
/* e is still the entry of the record at seg, off. */
bool disk_ent_is(const struct disk *d, disk_ent e, uint32_t seg,
    uint32_t off);

/* ---- jobs ---- */

void disk_job_submit(struct disk *d, struct job *j, struct seg *g,
    iopool_run_f *run, iopool_run_f *done);
void disk_job_end(struct job *j);
/*
 * A record's write ended (diskrw.c): counted; with err 0 the record is
 * whole and marked, joins g's key file (f, key), and its entry e, if it
 * is still e, is committed: it joins the cache and supersedes older
 * copies of its variant; with an error e is dropped. e is 0 for a
 * tombstone. Then disk_write_over.
 */
void disk_write_ended(struct disk *d, struct seg *g, disk_ent e,
    const struct found *f, const char *key, int err);
/* One write of g's is over: the last one of a sealed segment writes its
 * key file. */
void disk_write_over(struct disk *d, struct seg *g);
/* A write job's two halves (diskrw.c). */
void disk_run_write(struct iopool_job *pj);
void disk_done_write(struct iopool_job *pj);
/*
 * A re-admission's two halves, off the loop (diskrw.c): the whole record
 * of len bytes at off of fd, checked (head, mark and body checksum), in a
 * new buffer, with its key (malloc'd), hash, variant and lengths in f; or
 * NULL with *why set: TORN or CHECKSUM for a record that is not whole, IO
 * (errno) when the read failed or there is no memory; f->key is set
 * whenever the head was good, for the caller to free. Then rec written at
 * off of fd: all but its mark, then the mark.
 */
uint8_t *disk_read_record(int fd, uint64_t off, uint32_t len, struct found *f,
    enum disk_drop *why);
int disk_write_record(int fd, const uint8_t *rec, uint32_t len, uint64_t off);
/* The keys of the records at offs[0..n) of fd, off the loop; one that
 * cannot be read is left NULL (diskscan.c). */
void disk_read_keys(int fd, const uint32_t *offs, size_t n, char **keys,
    uint32_t *key_lens);

/* ---- key files (diskkeys.c) ---- */

void disk_keys_path(const struct disk *d, uint32_t id, char *buf, size_t len);
/* Appends a copy of f, with key copied, to v; -1 when out of memory. */
int disk_found_push(struct found **v, size_t *n, size_t *cap,
    const struct found *f, const char *key);
void disk_found_free(struct found *f, size_t n);
/* A record of g's was written: its key file will list it. */
void disk_keys_add(struct seg *g, const struct found *f, const char *key);
/* g takes no more writes: once its last one is done, its key file is
 * written off the loop (at a stop, at once). */
void disk_keys_seal(struct disk *d, struct seg *g);
/* Writes g's key file from f[0..n), which it takes. */
void disk_keys_write(struct disk *d, struct seg *g, struct found *f, size_t n);
void disk_keys_drop(struct seg *g);
/* Reads the key file at path of segment id, seg_len bytes long; -1 with
 * errno ENOENT when there is none, EINVAL when it is not to be trusted. */
int disk_keys_load(const char *path, uint32_t id, uint64_t seg_len,
    struct found **out, size_t *n);

#endif
