/*
 * The disk tier.
 *
 * Data model: a log. Records (record.h) are appended to segment files,
 * PATH/seg-NNNNNNNNNN, numbered in the order they were begun; about
 * SEG_COUNT of them share the configured size, so the newest one takes
 * the writes and the oldest one is evicted whole when room is needed:
 * its file is unlinked, which costs the file system one operation
 * whatever it held. An index in memory maps a key's XXH3-64 (store.c's
 * hash) to entries of 32 bytes: where the record is, how long, a 16-bit
 * hash of its variant, and flags; with the arrays' growth slack and the
 * buckets, 34 to 52 bytes an object. The index holds no key: what needs one
 * (a start-up scan, an eviction telling the summary what left) reads it
 * from the record, off the loop.
 *
 * Why a log: every write is an append, so a crash can tear only records
 * in flight, and a scan after it finds everything else; the file system
 * does no allocation work per object; and eviction is FIFO by segment,
 * which an object's freshness mostly follows anyway. The cost: an object
 * replaced or invalidated still takes its space until its segment goes,
 * and a hot old object is evicted with its segment (the memory tier
 * above keeps what is hot, and a hit brings it back from the origin).
 *
 * Ownership: the loop owns the index and the segment table; jobs on the
 * iopool own their buffers and read or write only the byte ranges the
 * loop gave them, through a descriptor whose segment they hold a
 * reference to (seg.refs): an evicted segment's file is unlinked at once
 * and closed when its last job is done. Space is given out on the loop,
 * so jobs never race for offsets. A write's entry is committed (found by
 * lookups) when its job reports success; a segment with writes in flight
 * is not evicted.
 *
 * Crash safety: a record counts only when its head checksum, its commit
 * mark and, when it is read, its body checksum hold (record.h). No fsync:
 * after power loss a record whose mark reached the disk before its body
 * fails the body checksum when it is read, and is dropped then.
 */
#define _GNU_SOURCE
#include "disk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "bodyfd.h"
#include "clock.h"
#include "iopool.h"
#include "ratelog.h"
#include "record.h"
#include "sc_assert.h"

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
	E_MARK = 16,     /* the summary's mark, while memory does not hold it */
	E_VERIFIED = 32, /* its body is known good: checked since start, or
	                  * written by this process */
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

struct seg {
	uint32_t id;
	int fd;
	uint32_t bytes;      /* given out so far: the file's length */
	uint32_t ents;       /* first of its entries */
	unsigned refs;       /* jobs using fd */
	unsigned writes;     /* of them, writes */
	bool gone;           /* evicted: close when refs falls to 0 */
};

struct disk {
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
	struct ratelog write_log, read_log, evict_log;
	struct disk_stats stats;
};

/* ---- helpers ---- */

static void
seg_name(const struct disk *d, uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/seg-%010u", d->path, id);
}

static uint16_t
vary_hash(const char *vary, size_t len)
{
	return (uint16_t)XXH3_64bits(vary, len);
}

static int
pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
		    (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = 0; /* short: the record is not all there */
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

static int
pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	for (size_t put = 0; put < len;) {
		ssize_t n = pwrite(fd, (const char *)buf + put, len - put,
		    (off_t)(off + put));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		put += (size_t)n;
	}
	return 0;
}

/* ---- segments ---- */

static struct seg *
seg_find(const struct disk *d, uint32_t id)
{
	size_t lo = 0, hi = d->nsegs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->segs[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nsegs && d->segs[lo]->id == id ? d->segs[lo] : NULL;
}

static struct seg *
head_seg(const struct disk *d)
{
	return d->nsegs ? d->segs[d->nsegs - 1] : NULL;
}

static int
seg_append(struct disk *d, struct seg *g)
{
	if (d->nsegs == d->cap_segs) {
		size_t cap = d->cap_segs ? d->cap_segs * 2 : 32;
		struct seg **n = realloc(d->segs, cap * sizeof(*n));
		if (n == NULL)
			return -1;
		d->segs = n;
		d->cap_segs = cap;
	}
	d->segs[d->nsegs++] = g;
	d->stats.segments = d->nsegs;
	return 0;
}

static void
seg_release(struct seg *g)
{
	SC_ASSERT(g->refs > 0);
	if (--g->refs == 0 && g->gone) {
		close(g->fd);
		free(g);
	}
}

/* ---- the index ---- */

static uint32_t *
bucket(struct disk *d, uint64_t hash)
{
	return &d->buckets[hash & (d->nbuckets - 1)];
}

static int
index_grow(struct disk *d)
{
	uint32_t n = d->nbuckets ? d->nbuckets * 2 : 1024;
	uint32_t *nb = calloc(n, sizeof(*nb));

	if (nb == NULL)
		return -1;
	for (uint32_t b = 0; b < d->nbuckets; b++) {
		for (uint32_t e = d->buckets[b]; e != 0;) {
			uint32_t next = d->ents[e].next;
			uint32_t *h = &nb[d->ents[e].hash & (n - 1)];
			d->ents[e].next = *h;
			*h = e;
			e = next;
		}
	}
	free(d->buckets);
	d->buckets = nb;
	d->nbuckets = n;
	return 0;
}

static void
update_index_bytes(struct disk *d)
{
	d->stats.index_bytes = (uint64_t)d->cap_ents * sizeof(struct ent) +
	    (uint64_t)d->nbuckets * sizeof(uint32_t);
}

/* A new live entry at the head of seg g's list and of its hash chain. */
static disk_ent
ent_new(struct disk *d, struct seg *g, uint64_t hash, uint16_t vhash,
    uint32_t off, uint32_t len)
{
	uint32_t e = d->free_ent;

	if (e != 0) {
		d->free_ent = d->ents[e].next;
	} else {
		if (d->nents + 1 >= d->cap_ents) {
			/* by halves: the slack stays under 16 bytes an entry */
			uint32_t cap = d->cap_ents ? d->cap_ents + d->cap_ents / 2 :
			    1024;
			struct ent *n = realloc(d->ents, cap * sizeof(*n));
			if (n == NULL)
				return 0;
			d->ents = n;
			d->cap_ents = cap;
		}
		if (d->nents == 0)
			d->nents = 1; /* 0 is "none" */
		e = d->nents++;
	}
	/* chains of two on average: 2 to 4 bytes of buckets an entry */
	if (d->stats.objects + 1 > 2ull * d->nbuckets && index_grow(d) < 0) {
		d->ents[e].next = d->free_ent;
		d->free_ent = e;
		return 0;
	}
	struct ent *x = &d->ents[e];
	*x = (struct ent){.hash = hash, .seg = g->id, .off = off, .len = len,
	    .vhash = vhash, .flags = E_LIVE, .seg_next = g->ents};
	g->ents = e;
	uint32_t *b = bucket(d, hash);
	x->next = *b;
	*b = e;
	update_index_bytes(d);
	return e;
}

static void
unhash(struct disk *d, disk_ent e)
{
	struct ent *x = &d->ents[e];
	uint32_t *p = bucket(d, x->hash);

	while (*p != e) {
		SC_ASSERT(*p != 0);
		p = &d->ents[*p].next;
	}
	*p = x->next;
	x->next = 0;
	if (x->flags & E_COMMITTED) {
		d->stats.objects--;
		d->stats.bytes -= x->len;
	}
	x->flags &= (uint8_t)~(E_LIVE | E_COMMITTED);
}

/* Drops a live entry; its slot is reused when its segment goes. */
static void
drop(struct disk *d, disk_ent e, enum disk_drop why)
{
	SC_ASSERT(d->ents[e].flags & E_LIVE);
	unhash(d, e);
	d->stats.dropped[why]++;
}

/*
 * Drops e and tells the cache what it lost: memory's copy loses its link,
 * or, when only the disk held the object, the object is gone. key is the
 * entry's, which the caller has at hand.
 */
static void
forget_ent(struct disk *d, disk_ent e, enum disk_drop why, const char *key,
    size_t klen)
{
	struct ent *x = &d->ents[e];
	uint8_t flags = x->flags;

	drop(d, e, why);
	if (flags & E_IN_MEM)
		d->ev.unlinked(d->ev.arg, x->hash, e);
	else if (flags & E_KNOWN)
		d->ev.lost(d->ev.arg, key, klen, (flags & E_MARK) != 0);
}

static bool
ent_is(const struct disk *d, disk_ent e, uint32_t seg, uint32_t off)
{
	const struct ent *x = &d->ents[e];

	return (x->flags & E_LIVE) && x->seg == seg && x->off == off;
}

/* ---- jobs ---- */

struct job {
	struct iopool_job pj;
	struct disk *d;
	struct seg *g;
	disk_ent e;
	uint32_t off;
	int err;          /* errno of a failure, or 0 */
	uint64_t us;      /* how long the I/O took */
};

static void
job_submit(struct disk *d, struct job *j, struct seg *g, iopool_run_f *run,
    iopool_run_f *done)
{
	j->pj.run = run;
	j->pj.done = done;
	j->d = d;
	j->g = g;
	if (g != NULL)
		g->refs++;
	iopool_submit(d->pool, &j->pj);
}

static void
job_end(struct job *j)
{
	if (j->g != NULL)
		seg_release(j->g);
	free(j);
}

/* ---- writing ---- */

struct write_job {
	struct job j;
	struct store_obj *o;   /* NULL for a tombstone */
	char *tomb_key;
	size_t tomb_len;
};

/* Appends the body of o, wherever it lives, at off; its checksum out. */
static int
write_body(int fd, const struct store_body *b, uint64_t off, uint64_t *sum)
{
	if (b->ext == NULL) {
		*sum = record_body_sum(b->data, b->len);
		return pwrite_all(fd, b->data, b->len, off);
	}
	struct record_sum *rs = record_sum_new();
	char *buf = malloc(IO_CHUNK);
	int rc = rs != NULL && buf != NULL ? 0 : -1;
	for (size_t done = 0; rc == 0 && done < b->len;) {
		size_t n = b->len - done < IO_CHUNK ? b->len - done : IO_CHUNK;
		rc = pread_all(b->ext->fd, buf, n, (uint64_t)b->ext->off + done);
		if (rc == 0)
			rc = pwrite_all(fd, buf, n, off + done);
		if (rc == 0)
			record_sum_add(rs, buf, n);
		done += n;
	}
	free(buf);
	if (rs != NULL)
		*sum = record_sum_end(rs);
	if (rc < 0 && errno == 0)
		errno = EIO;
	return rc;
}

static void
run_write(struct iopool_job *pj)
{
	struct write_job *w = (struct write_job *)pj;
	struct job *j = &w->j;
	uint64_t t0 = mono_us();
	struct record_info r;
	const char *key, *head = NULL, *vary = NULL;

	if (w->o != NULL) {
		record_describe(w->o, &r);
		key = w->o->key;
		head = store_obj_head(w->o);
		vary = store_obj_varykey(w->o);
	} else {
		r = (struct record_info){.flags = RECORD_TOMBSTONE,
		    .key_len = (uint32_t)w->tomb_len};
		key = w->tomb_key;
	}
	uint64_t hlen = record_head_len(&r);
	uint8_t *buf = malloc(hlen);
	uint8_t trailer[RECORD_TRAILER];
	int rc = buf != NULL ? 0 : -1;

	/* the body, then the head with its checksum, then the mark */
	if (rc == 0 && w->o != NULL)
		rc = write_body(j->g->fd, w->o->body, j->off + hlen,
		    &r.body_sum);
	if (rc == 0) {
		record_write_head(&r, key, head, vary, buf);
		rc = pwrite_all(j->g->fd, buf, hlen, j->off);
	}
	if (rc == 0) {
		record_write_trailer(&r, trailer);
		rc = pwrite_all(j->g->fd, trailer, RECORD_TRAILER,
		    j->off + record_trailer_off(&r));
	}
	j->err = rc == 0 ? 0 : errno ? errno : EIO;
	free(buf);
	j->us = mono_us() - t0;
}

static void
done_write(struct iopool_job *pj)
{
	struct write_job *w = (struct write_job *)pj;
	struct job *j = &w->j;
	struct disk *d = j->d;

	j->g->writes--;
	d->stats.writes++;
	d->stats.write_us += j->us;
	uint64_t skipped;
	if (j->err != 0) {
		d->stats.write_errors++;
		if (ratelog_due(&d->write_log, &skipped))
			fprintf(stderr, "sumcache: cache_dir %s: write: %s; "
			    "kept in memory only (%llu more since the last "
			    "line)\n", d->path, strerror(j->err),
			    (unsigned long long)skipped);
	}
	if (w->o != NULL && ent_is(d, j->e, j->g->id, j->off)) {
		struct ent *x = &d->ents[j->e];
		if (j->err == 0) {
			/* the page cache holds the bytes this process wrote:
			 * its own reads need no body checksum */
			x->flags |= E_COMMITTED | E_VERIFIED;
			d->stats.objects++;
			d->stats.bytes += x->len;
			d->stats.write_bytes += x->len;
			/* an object only the disk holds joins the cache now */
			if (!(x->flags & E_KNOWN)) {
				x->flags |= E_KNOWN;
				if (d->ev.found(d->ev.arg, w->o->key,
				    w->o->key_len))
					x->flags |= E_MARK;
			}
		} else {
			forget_ent(d, j->e, DISK_DROP_IO, w->o->key,
			    w->o->key_len);
		}
	}
	store_obj_unref(&w->o);
	free(w->tomb_key);
	job_end(j);
}

/* ---- reading ---- */

struct read_job {
	struct job j;
	uint32_t len;          /* the record's, as the index has it */
	size_t mem_max;
	bool verified;         /* the body's checksum was checked before */
	char *want;            /* the key asked for */
	size_t want_len;
	disk_read_f *cb;
	void *arg;
	/* results */
	bool failed;           /* fail says why; j.err has an I/O error's */
	enum disk_drop fail;
	bool other;            /* a record of another key (hash collision) */
	uint8_t *head;         /* record_head_len(&r) bytes */
	struct record_info r;
	struct store_body *body; /* in memory, or NULL: left in the file */
};

/* Reads and checks the head at off into a new buffer. */
static uint8_t *
read_head(int fd, uint64_t off, uint32_t len, struct record_info *r,
    bool *bad)
{
	uint8_t fixed[RECORD_HEAD];

	*bad = false;
	if (pread_all(fd, fixed, sizeof(fixed), off) < 0) {
		*bad = errno == 0;
		return NULL;
	}
	if (!record_read_fixed(fixed, r) || record_len(r) != len) {
		*bad = true;
		return NULL;
	}
	uint64_t hlen = record_head_len(r);
	uint8_t *head = malloc(hlen);
	if (head == NULL)
		return NULL;
	memcpy(head, fixed, sizeof(fixed));
	uint8_t trailer[RECORD_TRAILER];
	if (pread_all(fd, head + RECORD_HEAD, hlen - RECORD_HEAD,
	    off + RECORD_HEAD) < 0 || pread_all(fd, trailer,
	    sizeof(trailer), off + record_trailer_off(r)) < 0) {
		*bad = errno == 0;
		free(head);
		return NULL;
	}
	if (!record_head_ok(head, r) || !record_trailer_ok(trailer, r)) {
		*bad = true;
		free(head);
		return NULL;
	}
	return head;
}

static void
read_failed(struct read_job *rj, bool bad, enum disk_drop why)
{
	rj->failed = true;
	rj->fail = bad ? why : DISK_DROP_IO;
	rj->j.err = bad ? 0 : errno ? errno : EIO;
}

/* A record this small is read in one call, head, body and mark: most
 * are, and a disk hit's cost is mostly its system calls. */
#define WHOLE_READ_MAX (1u << 20)

static uint8_t *
read_whole(int fd, uint64_t off, uint32_t len, struct record_info *r,
    bool *bad)
{
	uint8_t *p = malloc(len);

	*bad = false;
	if (p == NULL)
		return NULL;
	if (pread_all(fd, p, len, off) < 0) {
		*bad = errno == 0;
		free(p);
		return NULL;
	}
	if (!record_read_fixed(p, r) || record_len(r) != len ||
	    !record_head_ok(p, r) ||
	    !record_trailer_ok(p + record_trailer_off(r), r)) {
		*bad = true;
		free(p);
		return NULL;
	}
	return p;
}

/* The body's checksum, read from the file a chunk at a time. */
static int
file_body_sum(int fd, uint64_t off, size_t len, uint64_t *sum)
{
	struct record_sum *rs = record_sum_new();
	char *buf = malloc(IO_CHUNK);
	int rc = rs != NULL && buf != NULL ? 0 : -1;

	for (size_t done = 0; rc == 0 && done < len;) {
		size_t n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
		rc = pread_all(fd, buf, n, off + done);
		if (rc == 0)
			record_sum_add(rs, buf, n);
		done += n;
	}
	free(buf);
	*sum = rs != NULL ? record_sum_end(rs) : 0;
	return rc;
}

static void
run_read(struct iopool_job *pj)
{
	struct read_job *rj = (struct read_job *)pj;
	struct job *j = &rj->j;
	int fd = j->g->fd;
	uint64_t t0 = mono_us();
	/* in one call when the body is wanted in memory anyway */
	bool bad, whole = rj->len <= WHOLE_READ_MAX &&
	    rj->len <= rj->mem_max + RECORD_HEAD + RECORD_TRAILER + 8192;

	errno = 0;
	rj->head = whole ? read_whole(fd, j->off, rj->len, &rj->r, &bad) :
	    read_head(fd, j->off, rj->len, &rj->r, &bad);
	if (rj->head == NULL) {
		read_failed(rj, bad, DISK_DROP_TORN);
		goto out;
	}
	if (rj->r.flags & RECORD_TOMBSTONE || rj->r.key_len != rj->want_len ||
	    memcmp(record_key(rj->head), rj->want, rj->want_len) != 0) {
		rj->other = true;
		goto out;
	}
	uint64_t hlen = record_head_len(&rj->r);
	size_t blen = (size_t)rj->r.body_len;
	if (blen <= rj->mem_max) {
		rj->body = store_body_new(blen);
		errno = ENOMEM;
		if (rj->body == NULL) {
			read_failed(rj, false, DISK_DROP_IO);
			goto out;
		}
		errno = 0;
		if (whole)
			memcpy(rj->body->data, rj->head + hlen, blen);
		else if (pread_all(fd, rj->body->data, blen, j->off + hlen) <
		    0) {
			read_failed(rj, errno == 0, DISK_DROP_TORN);
			goto out;
		}
		rj->body->len = blen;
		if (record_body_sum(rj->body->data, blen) != rj->r.body_sum)
			read_failed(rj, true, DISK_DROP_CHECKSUM);
		goto out;
	}
	if (rj->verified)
		goto out;
	/* sent from the file: its checksum is checked once, here */
	uint64_t sum;
	if (whole)
		sum = record_body_sum(rj->head + hlen, blen);
	else if (file_body_sum(fd, j->off + hlen, blen, &sum) < 0) {
		read_failed(rj, errno == 0, DISK_DROP_TORN);
		goto out;
	}
	if (sum != rj->r.body_sum)
		read_failed(rj, true, DISK_DROP_CHECKSUM);
out:
	j->us = mono_us() - t0;
}

/* The object a good read gives; NULL on ENOMEM. */
static struct store_obj *
read_object(struct read_job *rj)
{
	struct job *j = &rj->j;
	const struct record_info *r = &rj->r;
	const char *key = record_key(rj->head);
	struct store_body *body = rj->body;

	rj->body = NULL;
	if (body == NULL) {
		int fd = dup(j->g->fd);
		body = store_body_new(0);
		if (fd < 0 || body == NULL) {
			if (fd >= 0)
				close(fd);
			store_body_unref(&body);
			return NULL;
		}
		if (!bodyfd_attach(&body, fd, (int64_t)j->off +
		    (int64_t)record_head_len(r), (size_t)r->body_len, true)) {
			store_body_unref(&body);
			return NULL;
		}
	}
	struct store_obj *o = store_obj_new(key, r->key_len,
	    key + r->key_len, r->head_len, key + r->key_len + r->head_len,
	    r->vary_len, &r->meta, body);
	store_body_unref(&body);
	if (o != NULL)
		o->disk = j->e;
	return o;
}

static void
done_read(struct iopool_job *pj)
{
	struct read_job *rj = (struct read_job *)pj;
	struct job *j = &rj->j;
	struct disk *d = j->d;
	struct store_obj *o = NULL;
	uint64_t skipped;

	d->stats.reads++;
	d->stats.read_us += j->us;
	bool current = ent_is(d, j->e, j->g->id, j->off);
	if (rj->failed) {
		if (rj->fail == DISK_DROP_IO)
			d->stats.read_errors++;
		if (ratelog_due(&d->read_log, &skipped))
			fprintf(stderr, "sumcache: cache_dir %s: record at "
			    "seg-%010u+%u: %s; dropped (%llu more since the "
			    "last line)\n", d->path, j->g->id, j->off,
			    rj->fail == DISK_DROP_IO ? strerror(j->err) :
			    disk_drop_label(rj->fail),
			    (unsigned long long)skipped);
		if (current)
			forget_ent(d, j->e, rj->fail, rj->want, rj->want_len);
	} else if (!rj->other && current) {
		d->stats.read_bytes += rj->len;
		if (rj->r.body_len > rj->mem_max)
			d->ents[j->e].flags |= E_VERIFIED;
		o = read_object(rj);
	}
	rj->cb(rj->arg, o);
	free(rj->head);
	free(rj->want);
	store_body_unref(&rj->body);
	job_end(j);
}

void
disk_read(struct disk *d, disk_ent e, size_t mem_max, const char *key,
    size_t klen, disk_read_f *done, void *arg)
{
	struct read_job *rj = calloc(1, sizeof(*rj));
	struct ent *x = &d->ents[e];
	struct seg *g = seg_find(d, x->seg);

	SC_ASSERT((x->flags & E_COMMITTED) && g != NULL);
	if (rj == NULL || (rj->want = malloc(klen)) == NULL) {
		free(rj);
		done(arg, NULL);
		return;
	}
	memcpy(rj->want, key, klen);
	rj->want_len = klen;
	rj->j.e = e;
	rj->j.off = x->off;
	rj->len = x->len;
	rj->mem_max = mem_max;
	rj->verified = x->flags & E_VERIFIED;
	rj->cb = done;
	rj->arg = arg;
	job_submit(d, &rj->j, g, run_read, done_read);
}

/* ---- the start-up scan ---- */

struct found {
	uint64_t hash;
	uint32_t off, len;
	uint16_t vhash;
	bool tomb;
	uint32_t key_len;
	char *key;
};

struct scan_job {
	struct job j;
	struct found *found;
	size_t n, cap;
	uint64_t torn;      /* records without a valid mark, skipped */
	bool cut;           /* a head that is not one ended the scan early */
	bool nomem;
};

static void
scan_keep(struct scan_job *sj, const uint8_t *head, const struct record_info *r,
    uint64_t off)
{
	if (sj->n == sj->cap) {
		size_t cap = sj->cap ? sj->cap * 2 : 256;
		struct found *f = realloc(sj->found, cap * sizeof(*f));
		if (f == NULL) {
			sj->nomem = true;
			return;
		}
		sj->found = f;
		sj->cap = cap;
	}
	const char *key = record_key(head);
	struct found *f = &sj->found[sj->n];
	*f = (struct found){
		.hash = XXH3_64bits(key, r->key_len),
		.off = (uint32_t)off,
		.len = (uint32_t)record_len(r),
		.vhash = vary_hash(key + r->key_len + r->head_len, r->vary_len),
		.tomb = (r->flags & RECORD_TOMBSTONE) != 0,
		.key_len = r->key_len,
		.key = malloc(r->key_len),
	};
	if (f->key == NULL) {
		sj->nomem = true;
		return;
	}
	memcpy(f->key, key, r->key_len);
	sj->n++;
}

/*
 * Walks a segment's records in order through a window of the file:
 * small records come with the window, a large one's mark is read on its
 * own and the window moves past its body. A head that fails its checks
 * ends the walk: nothing after it can be found.
 */
static void
run_scan(struct iopool_job *pj)
{
	struct scan_job *sj = (struct scan_job *)pj;
	struct job *j = &sj->j;
	int fd = j->g->fd;
	uint64_t t0 = mono_us();
	struct stat st;
	uint8_t *win = malloc(SCAN_WINDOW);
	uint64_t wstart = 0, wlen = 0, off = 0;

	if (win == NULL || fstat(fd, &st) < 0) {
		j->err = win == NULL ? ENOMEM : errno;
		free(win);
		return;
	}
	uint64_t size = (uint64_t)st.st_size;
	while (off + RECORD_HEAD + RECORD_TRAILER <= size && !sj->nomem) {
		if (off < wstart || off + RECORD_HEAD > wstart + wlen) {
			wstart = off;
			wlen = size - off < SCAN_WINDOW ? size - off :
			    SCAN_WINDOW;
			if (pread_all(fd, win, wlen, wstart) < 0) {
				j->err = errno ? errno : EIO;
				break;
			}
		}
		struct record_info r;
		uint8_t *p = win + (off - wstart);
		if (!record_read_fixed(p, &r) || record_len(&r) > UINT32_MAX) {
			sj->cut = true;
			break;
		}
		if (off + record_len(&r) > size) {
			sj->torn++; /* the last write, cut short */
			break;
		}
		uint64_t hlen = record_head_len(&r);
		uint8_t *head = p, *own = NULL;
		if (off + hlen > wstart + wlen) {
			own = malloc(hlen);
			if (own == NULL || pread_all(fd, own, hlen, off) < 0) {
				free(own);
				sj->cut = true;
				break;
			}
			head = own;
		}
		uint8_t tr[RECORD_TRAILER];
		uint64_t toff = off + record_trailer_off(&r);
		const uint8_t *t = tr;
		if (toff + RECORD_TRAILER <= wstart + wlen)
			t = win + (toff - wstart);
		else if (pread_all(fd, tr, sizeof(tr), toff) < 0)
			memset(tr, 0, sizeof(tr));
		if (!record_head_ok(head, &r)) {
			free(own);
			sj->cut = true;
			break;
		}
		if (record_trailer_ok(t, &r))
			scan_keep(sj, head, &r, off);
		else
			sj->torn++;
		free(own);
		off += record_len(&r);
	}
	free(win);
	j->us = mono_us() - t0;
}

static void scan_next(struct disk *d);

/* A scanned record older than what the index has for its variant, or
 * than a tombstone since, is not the object any more. */
static void
scan_index(struct disk *d, struct seg *g, const struct found *f)
{
	for (uint32_t e = *bucket(d, f->hash), next; e != 0; e = next) {
		struct ent *x = &d->ents[e];
		next = x->next;
		if (x->hash != f->hash || (!f->tomb && x->vhash != f->vhash))
			continue;
		if (x->seg > g->id || (x->seg == g->id && x->off > f->off))
			return; /* the index has a newer one */
		forget_ent(d, e, DISK_DROP_REPLACED, f->key, f->key_len);
	}
	if (f->tomb)
		return;
	disk_ent e = ent_new(d, g, f->hash, f->vhash, f->off, f->len);
	if (e == 0)
		return;
	struct ent *x = &d->ents[e];
	x->flags |= E_COMMITTED | E_KNOWN;
	d->stats.objects++;
	d->stats.bytes += x->len;
	d->stats.scan_records++;
	if (d->ev.found(d->ev.arg, f->key, f->key_len))
		x->flags |= E_MARK;
}

static void
done_scan(struct iopool_job *pj)
{
	struct scan_job *sj = (struct scan_job *)pj;
	struct job *j = &sj->j;
	struct disk *d = j->d;

	if (!j->g->gone)
		for (size_t i = 0; i < sj->n; i++)
			scan_index(d, j->g, &sj->found[i]);
	d->stats.dropped[DISK_DROP_TORN] += sj->torn;
	if (j->err != 0 || sj->cut || sj->nomem)
		fprintf(stderr, "sumcache: cache_dir %s: seg-%010u: %s after "
		    "%zu records; the rest of it is not used\n", d->path,
		    j->g->id, j->err ? strerror(j->err) : sj->nomem ?
		    "out of memory" : "a record that is not one", sj->n);
	for (size_t i = 0; i < sj->n; i++)
		free(sj->found[i].key);
	free(sj->found);
	d->stats.scan_segments_done++;
	job_end(j);
	scan_next(d);
}

/* Scans the next segment found at start-up, oldest first, one at a time
 * so that newer records meet the older ones already indexed. */
static void
scan_next(struct disk *d)
{
	if (d->closing)
		return;
	for (size_t i = 0; i < d->nsegs; i++) {
		struct seg *g = d->segs[i];
		if (g->id < d->scan_id)
			continue;
		if (g->id >= d->scan_end)
			break;
		d->scan_id = g->id + 1;
		struct scan_job *sj = calloc(1, sizeof(*sj));
		if (sj == NULL)
			continue;
		job_submit(d, &sj->j, g, run_scan, done_scan);
		return;
	}
	if (!d->stats.scanning)
		return;
	d->stats.scanning = false;
	d->stats.scan_ms = mono_ms() - d->scan_start_ms;
	d->ev.scanned(d->ev.arg);
}

/* ---- eviction ---- */

/* The keys of the evicted records the summary counted, read back so
 * that it can let them go, and the segment's file unlinked. */
struct evict_job {
	struct job j;
	size_t n;
	uint32_t *offs;
	uint8_t *marks;
	char **keys;
	uint32_t *key_lens;
	char path[PATH_MAX];
};

/* Reads the keys of the records at offs[0..n) of fd; one that cannot be
 * read is left NULL. */
static void
read_keys(int fd, const uint32_t *offs, size_t n, char **keys,
    uint32_t *key_lens)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t fixed[RECORD_HEAD];
		struct record_info r;
		if (pread_all(fd, fixed, sizeof(fixed), offs[i]) < 0 ||
		    !record_read_fixed(fixed, &r))
			continue;
		char *key = malloc(r.key_len);
		if (key == NULL || pread_all(fd, key, r.key_len,
		    (uint64_t)offs[i] + RECORD_HEAD) < 0) {
			free(key);
			continue;
		}
		keys[i] = key;
		key_lens[i] = r.key_len;
	}
}

static void
run_evict(struct iopool_job *pj)
{
	struct evict_job *ej = (struct evict_job *)pj;

	read_keys(ej->j.g->fd, ej->offs, ej->n, ej->keys, ej->key_lens);
	if (unlink(ej->path) < 0)
		ej->j.err = errno;
}

static void
done_evict(struct iopool_job *pj)
{
	struct evict_job *ej = (struct evict_job *)pj;
	struct disk *d = ej->j.d;

	for (size_t i = 0; i < ej->n; i++) {
		/* a key that cannot be read stays in the summary until the
		 * next rebuild: a false hit, never a wrong answer */
		if (ej->keys[i] != NULL)
			d->ev.lost(d->ev.arg, ej->keys[i], ej->key_lens[i],
			    ej->marks[i]);
		free(ej->keys[i]);
	}
	if (ej->j.err != 0)
		fprintf(stderr, "sumcache: %s: unlink: %s\n", ej->path,
		    strerror(ej->j.err));
	free(ej->offs);
	free(ej->marks);
	free(ej->keys);
	free(ej->key_lens);
	job_end(&ej->j);
}

/*
 * Evicts the oldest segment: its entries leave the index at once (memory
 * copies lose their link; the rest are reported lost once their keys are
 * read back), its file is unlinked off the loop. Returns false when it
 * cannot go yet: it takes the writes, or some are still in flight.
 */
static bool
evict_oldest(struct disk *d)
{
	struct seg *g = d->nsegs > 1 ? d->segs[0] : NULL;

	if (g == NULL || g->writes > 0)
		return false;
	struct evict_job *ej = calloc(1, sizeof(*ej));
	size_t n = 0;
	for (uint32_t e = g->ents; e != 0; e = d->ents[e].seg_next)
		n++;
	if (ej == NULL || (n > 0 && ((ej->offs = calloc(n,
	    sizeof(*ej->offs))) == NULL || (ej->marks = calloc(n, 1)) ==
	    NULL || (ej->keys = calloc(n, sizeof(*ej->keys))) == NULL ||
	    (ej->key_lens = calloc(n, sizeof(*ej->key_lens))) == NULL))) {
		if (ej != NULL) {
			free(ej->offs);
			free(ej->marks);
			free(ej->keys);
			free(ej);
		}
		return false;
	}
	for (uint32_t e = g->ents, next; e != 0; e = next) {
		struct ent *x = &d->ents[e];
		next = x->seg_next;
		if (x->flags & E_LIVE) {
			uint8_t flags = x->flags;
			unhash(d, e);
			if (flags & E_IN_MEM) {
				d->ev.unlinked(d->ev.arg, x->hash, e);
			} else if (flags & E_KNOWN) {
				ej->offs[ej->n] = x->off;
				ej->marks[ej->n++] = (flags & E_MARK) != 0;
			}
		}
		x->flags = 0;
		x->next = d->free_ent;
		d->free_ent = e;
	}
	memmove(d->segs, d->segs + 1, (d->nsegs - 1) * sizeof(*d->segs));
	d->nsegs--;
	d->stats.segments = d->nsegs;
	d->stats.segments_evicted++;
	d->stats.file_bytes -= g->bytes;
	g->gone = true;
	seg_name(d, g->id, ej->path, sizeof(ej->path));
	/* the job's reference is the last: it closes the file */
	job_submit(d, &ej->j, g, run_evict, done_evict);
	return true;
}

/* ---- the summary's rebuild walk ---- */

/* One segment's entries at a time: their keys read back, then handed to
 * the walker if they are still the same entries. */
struct walk_job {
	struct job j;
	size_t n;
	disk_ent *ents;
	uint32_t *offs;
	char **keys;
	uint32_t *key_lens;
	disk_walk_f *each;
	void (*done)(void *arg);
	void *arg;
};

static void walk_segment(struct disk *d, uint32_t from_id, disk_walk_f *each,
    void (*done)(void *arg), void *arg);

static void
run_walk(struct iopool_job *pj)
{
	struct walk_job *wj = (struct walk_job *)pj;

	read_keys(wj->j.g->fd, wj->offs, wj->n, wj->keys, wj->key_lens);
}

static void
done_walk(struct iopool_job *pj)
{
	struct walk_job *wj = (struct walk_job *)pj;
	struct disk *d = wj->j.d;
	uint32_t id = wj->j.g->id;

	for (size_t i = 0; i < wj->n; i++) {
		if (wj->keys[i] != NULL && ent_is(d, wj->ents[i], id,
		    wj->offs[i]))
			wj->each(wj->arg, wj->keys[i], wj->key_lens[i],
			    wj->ents[i]);
		free(wj->keys[i]);
	}
	free(wj->ents);
	free(wj->offs);
	free(wj->keys);
	free(wj->key_lens);
	disk_walk_f *each = wj->each;
	void (*done)(void *) = wj->done;
	void *arg = wj->arg;
	job_end(&wj->j);
	walk_segment(d, id + 1, each, done, arg);
}

/* Starts the job for the first segment from from_id on with entries to
 * walk, or ends the walk. */
static void
walk_segment(struct disk *d, uint32_t from_id, disk_walk_f *each,
    void (*done)(void *arg), void *arg)
{
	for (size_t i = 0; i < d->nsegs && !d->closing; i++) {
		struct seg *g = d->segs[i];
		size_t n = 0;
		if (g->id < from_id)
			continue;
		for (uint32_t e = g->ents; e != 0; e = d->ents[e].seg_next)
			n += (d->ents[e].flags & E_COMMITTED) != 0;
		if (n == 0)
			continue;
		struct walk_job *wj = calloc(1, sizeof(*wj));
		if (wj == NULL || (wj->ents = calloc(n, sizeof(*wj->ents))) ==
		    NULL || (wj->offs = calloc(n, sizeof(*wj->offs))) == NULL ||
		    (wj->keys = calloc(n, sizeof(*wj->keys))) == NULL ||
		    (wj->key_lens = calloc(n, sizeof(*wj->key_lens))) == NULL) {
			if (wj != NULL) {
				free(wj->ents);
				free(wj->offs);
				free(wj->keys);
				free(wj);
			}
			break; /* out of memory: the walk ends short */
		}
		for (uint32_t e = g->ents; e != 0; e = d->ents[e].seg_next)
			if (d->ents[e].flags & E_COMMITTED) {
				wj->ents[wj->n] = e;
				wj->offs[wj->n++] = d->ents[e].off;
			}
		wj->each = each;
		wj->done = done;
		wj->arg = arg;
		job_submit(d, &wj->j, g, run_walk, done_walk);
		return;
	}
	done(arg);
}

void
disk_walk(struct disk *d, disk_walk_f *each, void (*done)(void *arg),
    void *arg)
{
	walk_segment(d, 0, each, done, arg);
}

/* ---- the segment that takes the writes ---- */

struct open_job {
	struct job j;
	uint32_t id;
	int fd;
	char path[PATH_MAX];
};

static void
run_open(struct iopool_job *pj)
{
	struct open_job *oj = (struct open_job *)pj;

	oj->fd = open(oj->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (oj->fd < 0)
		oj->j.err = errno;
}

static struct seg *
seg_new(uint32_t id, int fd)
{
	struct seg *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->id = id;
	g->fd = fd;
	return g;
}

static void
done_open(struct iopool_job *pj)
{
	struct open_job *oj = (struct open_job *)pj;
	struct disk *d = oj->j.d;
	uint64_t skipped;

	d->spare_pending = false;
	if (oj->fd >= 0) {
		d->spare = seg_new(oj->id, oj->fd);
		if (d->spare == NULL)
			close(oj->fd);
	} else if (ratelog_due(&d->write_log, &skipped)) {
		fprintf(stderr, "sumcache: %s: %s; writes wait for a new "
		    "segment\n", oj->path, strerror(oj->j.err));
	}
	job_end(&oj->j);
}

/* Opens the next segment ahead of need, off the loop. */
static void
prepare_spare(struct disk *d)
{
	if (d->spare != NULL || d->spare_pending || d->closing)
		return;
	struct open_job *oj = calloc(1, sizeof(*oj));
	if (oj == NULL)
		return;
	oj->id = d->next_id++;
	seg_name(d, oj->id, oj->path, sizeof(oj->path));
	d->spare_pending = true;
	job_submit(d, &oj->j, NULL, run_open, done_open);
}

/* Room for len bytes at the head; NULL when there is none now. */
static struct seg *
make_room(struct disk *d, uint64_t len)
{
	struct seg *h = head_seg(d);

	if (h == NULL)
		return NULL;
	if (h->bytes > 0 && h->bytes + len > d->seg_target) {
		if (d->spare == NULL) {
			prepare_spare(d);
			return NULL;
		}
		if (seg_append(d, d->spare) < 0)
			return NULL;
		h = d->spare;
		d->spare = NULL;
	}
	if (h->bytes >= d->seg_target / 2)
		prepare_spare(d);
	while (d->stats.file_bytes + len > d->conf.size)
		if (!evict_oldest(d))
			return NULL;
	return h;
}

/* ---- the interface ---- */

disk_ent
disk_store(struct disk *d, struct store_obj *o, bool in_mem)
{
	struct record_info r;

	record_describe(o, &r);
	uint64_t len = record_len(&r);
	if (d->closing || len > d->conf.size / 2 || len > UINT32_MAX / 2) {
		d->stats.write_refused += !d->closing;
		return 0;
	}
	struct seg *g = make_room(d, len);
	struct write_job *w = g != NULL ? calloc(1, sizeof(*w)) : NULL;
	disk_ent e = w != NULL ? ent_new(d, g, o->hash,
	    vary_hash(store_obj_varykey(o), o->vary_len), g->bytes,
	    (uint32_t)len) : 0;
	if (e == 0) {
		free(w);
		d->stats.write_refused++;
		return 0;
	}
	if (in_mem)
		d->ents[e].flags |= E_IN_MEM | E_KNOWN;
	w->o = store_obj_ref(o);
	w->j.e = e;
	w->j.off = g->bytes;
	g->bytes += (uint32_t)len;
	g->writes++;
	d->stats.file_bytes += len;
	job_submit(d, &w->j, g, run_write, done_write);
	return e;
}

unsigned
disk_lookup(struct disk *d, uint64_t hash, disk_ent *out, unsigned max)
{
	unsigned n = 0;

	if (d->nbuckets == 0)
		return 0;
	for (uint32_t e = *bucket(d, hash); e != 0 && n < max;
	    e = d->ents[e].next) {
		const struct ent *x = &d->ents[e];
		if (x->hash == hash && (x->flags & E_COMMITTED))
			out[n++] = e;
	}
	return n;
}

void
disk_drop(struct disk *d, disk_ent e)
{
	if (d->ents[e].flags & E_LIVE)
		drop(d, e, DISK_DROP_REPLACED);
	d->ents[e].flags &= (uint8_t)~E_IN_MEM;
}

unsigned
disk_forget(struct disk *d, const char *key, size_t klen)
{
	uint64_t hash = XXH3_64bits(key, klen);
	unsigned n = 0;

	if (d->nbuckets == 0)
		return 0;
	for (uint32_t e = *bucket(d, hash), next; e != 0; e = next) {
		next = d->ents[e].next;
		if (d->ents[e].hash == hash) {
			forget_ent(d, e, DISK_DROP_REPLACED, key, klen);
			n++;
		}
	}
	/* a tombstone, so that a scan after a crash agrees */
	struct record_info r = {.flags = RECORD_TOMBSTONE,
	    .key_len = (uint32_t)klen};
	uint64_t len = record_len(&r);
	struct seg *g = n > 0 && !d->closing ? make_room(d, len) : NULL;
	struct write_job *w = g != NULL ? calloc(1, sizeof(*w)) : NULL;
	if (w == NULL || (w->tomb_key = malloc(klen)) == NULL) {
		free(w);
		return n;
	}
	memcpy(w->tomb_key, key, klen);
	w->tomb_len = klen;
	w->j.off = g->bytes;
	g->bytes += (uint32_t)len;
	g->writes++;
	d->stats.file_bytes += len;
	job_submit(d, &w->j, g, run_write, done_write);
	return n;
}

bool
disk_in_mem(const struct disk *d, disk_ent e)
{
	return (d->ents[e].flags & E_IN_MEM) != 0;
}

void
disk_set_in_mem(struct disk *d, disk_ent e, bool in_mem, uint8_t mark)
{
	struct ent *x = &d->ents[e];

	if (!(x->flags & E_LIVE))
		return;
	if (in_mem) {
		x->flags |= E_IN_MEM;
		return;
	}
	x->flags &= (uint8_t)~(E_IN_MEM | E_MARK);
	if (mark)
		x->flags |= E_MARK;
}

uint8_t
disk_mark(const struct disk *d, disk_ent e)
{
	return (d->ents[e].flags & E_MARK) != 0;
}

const struct disk_stats *
disk_stats(struct disk *d)
{
	d->stats.size = d->conf.size;
	return &d->stats;
}

const char *
disk_drop_label(enum disk_drop r)
{
#define DISK_DROP_LABEL(name, label) [DISK_DROP_##name] = label,
	static const char *const labels[] = {
		DISK_DROP_REASONS(DISK_DROP_LABEL)
	};
#undef DISK_DROP_LABEL
	return r < DISK_DROP_N ? labels[r] : "?";
}

/* ---- opening and closing ---- */

static int
mkdirs(const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static bool
seg_id_of(const char *name, uint32_t *id)
{
	char *end;

	if (strncmp(name, "seg-", 4) != 0 || strlen(name) != 14)
		return false;
	unsigned long v = strtoul(name + 4, &end, 10);
	if (*end != '\0' || v > UINT32_MAX - 2)
		return false;
	*id = (uint32_t)v;
	return true;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The ids of the segments in dir, sorted; their bytes in *bytes. */
static uint32_t *
list_segments(const char *dir, size_t *n, uint64_t *bytes)
{
	DIR *dp = opendir(dir);
	uint32_t *ids = NULL;
	size_t cap = 0;
	struct dirent *de;

	*n = 0;
	*bytes = 0;
	if (dp == NULL)
		return NULL;
	while ((de = readdir(dp)) != NULL) {
		uint32_t id;
		struct stat st;
		if (!seg_id_of(de->d_name, &id) ||
		    fstatat(dirfd(dp), de->d_name, &st, 0) < 0)
			continue;
		/* a segment opened and never written to (a stop before
		 * any write) holds nothing; empty ones would pile up */
		if (st.st_size == 0 && unlinkat(dirfd(dp), de->d_name, 0) == 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			uint32_t *m = realloc(ids, cap * sizeof(*m));
			if (m == NULL)
				break;
			ids = m;
		}
		ids[(*n)++] = id;
		*bytes += (uint64_t)st.st_size;
	}
	closedir(dp);
	if (*n > 0)
		qsort(ids, *n, sizeof(*ids), cmp_u32);
	return ids;
}

int
disk_check(const char *path, uint64_t size, char *err, size_t errlen)
{
	struct stat st;
	struct statvfs vfs;
	char probe[PATH_MAX];
	const char *at = path;

	if (size < 4 * SEG_MIN) {
		snprintf(err, errlen, "cache_dir %s: size %llu is under the "
		    "least, 4 MB", path, (unsigned long long)size);
		return -1;
	}
	if (stat(path, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || access(path, W_OK | X_OK) < 0) {
			snprintf(err, errlen, "cache_dir %s: not a writable "
			    "directory", path);
			return -1;
		}
	} else {
		/* the nearest ancestor that exists must let us create it */
		snprintf(probe, sizeof(probe), "%s", path);
		for (char *slash; (slash = strrchr(probe, '/')) != NULL;) {
			*slash = '\0';
			at = probe[0] ? probe : "/";
			if (stat(at, &st) == 0)
				break;
		}
		if (at == path)
			at = ".";
		if (stat(at, &st) == 0 && !S_ISDIR(st.st_mode))
			errno = ENOTDIR;
		else if (access(at, W_OK | X_OK) == 0)
			errno = 0;
		if (errno != 0) {
			snprintf(err, errlen, "cache_dir %s: cannot be created "
			    "(%s: %s)", path, at, strerror(errno));
			return -1;
		}
	}
	if (statvfs(at, &vfs) < 0) {
		snprintf(err, errlen, "cache_dir %s: %s", path, strerror(errno));
		return -1;
	}
	size_t n;
	uint64_t kept;
	free(list_segments(path, &n, &kept));
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize + kept;
	if (size > avail) {
		snprintf(err, errlen, "cache_dir %s: size %llu MB is more than "
		    "the %llu MB its file system has free", path,
		    (unsigned long long)(size >> 20),
		    (unsigned long long)(avail >> 20));
		return -1;
	}
	return 0;
}

struct disk *
disk_open(struct event_base *base, const struct disk_conf *c,
    const struct disk_events *ev, char *err, size_t errlen)
{
	struct disk *d = calloc(1, sizeof(*d));
	char lock[PATH_MAX];

	if (d == NULL || (d->path = strdup(c->path)) == NULL) {
		free(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->conf = *c;
	d->conf.path = d->path;
	d->ev = *ev;
	d->lock_fd = -1;
	uint64_t target = c->size / SEG_COUNT;
	d->seg_target = target < SEG_MIN ? SEG_MIN : target > SEG_MAX ?
	    SEG_MAX : target;
	snprintf(lock, sizeof(lock), "%s/lock", d->path);
	if (mkdirs(d->path) < 0 || (d->lock_fd = open(lock, O_RDWR | O_CREAT |
	    O_CLOEXEC, 0644)) < 0) {
		snprintf(err, errlen, "cache_dir %s: %s", d->path,
		    strerror(errno));
		disk_close(&d);
		return NULL;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "cache_dir %s: in use by another "
		    "process (%s)", d->path, strerror(errno));
		disk_close(&d);
		return NULL;
	}
	size_t n;
	uint64_t bytes;
	uint32_t *ids = list_segments(d->path, &n, &bytes);
	for (size_t i = 0; i < n; i++) {
		char name[PATH_MAX];
		seg_name(d, ids[i], name, sizeof(name));
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		struct stat st;
		struct seg *g = NULL;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size <= UINT32_MAX)
			g = seg_new(ids[i], fd);
		if (g == NULL || seg_append(d, g) < 0) {
			snprintf(err, errlen, "cache_dir %s: %s", name,
			    fd < 0 ? strerror(errno) : "cannot be used");
			if (fd >= 0)
				close(fd);
			free(g);
			free(ids);
			disk_close(&d);
			return NULL;
		}
		g->bytes = (uint32_t)st.st_size;
		d->stats.file_bytes += g->bytes;
		d->scan_end = d->next_id = ids[i] + 1;
	}
	free(ids);
	d->stats.scan_segments = d->nsegs;
	d->stats.scanning = true;
	d->scan_start_ms = mono_ms();
	char name[PATH_MAX];
	seg_name(d, d->next_id, name, sizeof(name));
	int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	struct seg *h = fd >= 0 ? seg_new(d->next_id++, fd) : NULL;
	if (h == NULL || seg_append(d, h) < 0) {
		snprintf(err, errlen, "cache_dir %s: %s", name, fd < 0 ?
		    strerror(errno) : "out of memory");
		if (fd >= 0)
			close(fd);
		free(h);
		disk_close(&d);
		return NULL;
	}
	d->pool = iopool_new(base, c->threads);
	if (d->pool == NULL || index_grow(d) < 0) {
		snprintf(err, errlen, "cache_dir %s: cannot start its I/O "
		    "threads", d->path);
		disk_close(&d);
		return NULL;
	}
	/* a size made smaller since: the oldest go first */
	while (d->stats.file_bytes > d->conf.size && evict_oldest(d))
		continue;
	update_index_bytes(d);
	return d;
}

void
disk_scan(struct disk *d)
{
	scan_next(d);
}

void
disk_close(struct disk **dp)
{
	struct disk *d = *dp;

	if (d == NULL)
		return;
	*dp = NULL;
	d->closing = true;
	iopool_free(&d->pool);
	for (size_t i = 0; i < d->nsegs; i++) {
		SC_ASSERT(d->segs[i]->refs == 0);
		close(d->segs[i]->fd);
		free(d->segs[i]);
	}
	if (d->spare != NULL) {
		close(d->spare->fd);
		free(d->spare);
	}
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	free(d->segs);
	free(d->ents);
	free(d->buckets);
	free(d->path);
	free(d);
}
