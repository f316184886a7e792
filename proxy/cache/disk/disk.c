/*
 * The disk tier: here the index, the segments and the interface; eviction
 * and re-admission in diskevict.c; a record's writing and reading in
 * diskrw.c; the scan, the rebuild walk and opening a cache_dir in
 * diskscan.c (disk_impl.h joins them).
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
 * which an object's freshness mostly follows anyway. What was read since
 * it was written is re-admitted: the eviction copies it to the head (a
 * quarter of the segment at most), so a hot old object outlives its
 * segment as SIEVE's visited objects outlive its hand. The cost: an
 * object replaced or invalidated still takes its space until its segment
 * goes, and a hot object is written again once a round.
 *
 * Ownership: the disk lock guards the index and the segment table
 * (Threads, below); jobs on the iopool own their buffers and read or
 * write only the byte ranges given them under the lock, through a
 * descriptor whose segment they hold a reference to (seg.refs): an
 * evicted segment's file is unlinked at once and closed when its last
 * job is done. Space is given out under the lock, so jobs never race
 * for offsets. A write's entry is committed (found by
 * lookups) when its job reports success; a segment with writes in flight
 * is not evicted.
 *
 * Threads: every worker of a node reads and writes the disk tier, and
 * one lock guards it all, the disk lock (d->mutex, recursive): the index,
 * the segment table, the stats. tiers.c takes it at each of its entry
 * points, before the store's locks, and holds it across what the two
 * tiers do together (a store insert and its write, a promotion); the
 * disk_stream_* calls take it themselves; every job's done() runs with
 * it held (iopool.h), on the loop of the worker that submitted it, so
 * a read, a warm-up or a stream's progress reports to the worker that
 * asked. Recursive, as those reports call into the tiers again. The hit
 * path takes it only for a body sent from a segment file (the fstat of
 * disk_trusted); a body in memory takes none. The cost accepted: the
 * disk's work of every worker is one at a time, record reads from the
 * page cache included.
 *
 * Crash safety: a record counts only when its head checksum, its commit
 * mark and, when it is read, its body checksum hold (record.h). No fsync:
 * after power loss a record whose mark reached the disk before its body
 * fails the body checksum when it is read, and is dropped then.
 */
#define _GNU_SOURCE
#include "disk_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <xxhash.h>

#include "bodyfd.h"
#include "clock.h"
#include "record.h"
#include "sc_assert.h"

/* ---- helpers ---- */

void
disk_seg_name(const struct disk *d, uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/seg-%010u", d->path, id);
}

uint16_t
disk_vary_hash(const char *vary, size_t len)
{
	return (uint16_t)XXH3_64bits(vary, len);
}

int
disk_pread(int fd, void *buf, size_t len, uint64_t off)
{
	return disk_pread_flags(fd, buf, len, off, 0);
}

int
disk_pread_flags(int fd, void *buf, size_t len, uint64_t off, int flags)
{
	for (size_t got = 0; got < len;) {
		struct iovec v = {(char *)buf + got, len - got};
		ssize_t n = preadv2(fd, &v, 1, (off_t)(off + got), flags);
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

int
disk_pwrite(int fd, const void *buf, size_t len, uint64_t off)
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

int
disk_pwrite2(int fd, const void *a, size_t alen, const void *b, size_t blen,
    uint64_t off)
{
	struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
	int n = blen > 0 ? 2 : 1;

	while (iov[0].iov_len + iov[1].iov_len > 0) {
		ssize_t put = pwritev(fd, iov, n, (off_t)off);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return -1;
		off += (uint64_t)put;
		/* a short write: on past what went down */
		for (int i = 0; i < n; i++) {
			size_t k = (size_t)put < iov[i].iov_len ? (size_t)put :
			    iov[i].iov_len;
			iov[i].iov_base = (char *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			put -= (ssize_t)k;
		}
	}
	return 0;
}

/* ---- segments ---- */

struct seg *
disk_seg_find(const struct disk *d, uint32_t id)
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

struct seg *
disk_head_seg(const struct disk *d)
{
	return d->nsegs ? d->segs[d->nsegs - 1] : NULL;
}

int
disk_seg_append(struct disk *d, struct seg *g)
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

void
disk_seg_release(struct seg *g)
{
	SC_ASSERT(g->refs > 0);
	if (--g->refs == 0 && g->gone)
		disk_seg_free(g);
}

void
disk_seg_free(struct seg *g)
{
	disk_keys_drop(g);
	bodyfd_file_unref(&g->file);
	close(g->fd);
	free(g);
}

struct bodyfd_file *
disk_seg_file(struct seg *g)
{
	if (g->file == NULL) {
		int fd = fcntl(g->fd, F_DUPFD_CLOEXEC, 0);
		/* a bound, not a length: the head segment still grows */
		if (fd >= 0)
			g->file = bodyfd_file_open(fd, (int64_t)UINT32_MAX + 1);
	}
	return g->file;
}

static void
stamp_of(int fd, struct seg_stamp *st)
{
	struct stat sb;

	if (fstat(fd, &sb) != 0) {
		*st = (struct seg_stamp){0};
		return;
	}
	*st = (struct seg_stamp){.size = (uint64_t)sb.st_size,
	    .mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 +
	    sb.st_mtim.tv_nsec,
	    .ctime_ns = (int64_t)sb.st_ctim.tv_sec * 1000000000 +
	    sb.st_ctim.tv_nsec};
}

void
disk_seg_stamp(struct seg *g)
{
	stamp_of(g->fd, &g->stamp);
}

struct seg *
disk_seg_new(uint32_t id, int fd)
{
	struct seg *g = calloc(1, sizeof(*g));

	if (g == NULL)
		return NULL;
	g->id = id;
	g->fd = fd;
	disk_seg_stamp(g);
	return g;
}

/* ---- the index ---- */

uint32_t *
disk_bucket(struct disk *d, uint64_t hash)
{
	return &d->buckets[hash & (d->nbuckets - 1)];
}

int
disk_index_grow(struct disk *d)
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

void
disk_index_bytes(struct disk *d)
{
	d->stats.index_bytes = (uint64_t)d->cap_ents * sizeof(struct ent) +
	    (uint64_t)d->nbuckets * sizeof(uint32_t);
}

/* A new live entry at the head of seg g's list and of its hash chain. */
disk_ent
disk_ent_new(struct disk *d, struct seg *g, uint64_t hash, uint16_t vhash,
    uint32_t off, uint32_t len)
{
	uint32_t e = d->free_ent;

	if (e != 0) {
		d->free_ent = d->ents[e].next;
	} else {
		if (d->nents + 1 >= d->cap_ents) {
			/* by halves: the slack stays under 16 bytes an entry */
			uint32_t cap = d->cap_ents ?
			    d->cap_ents + d->cap_ents / 2 : 1024;
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
	if (d->stats.objects + 1 > 2ull * d->nbuckets &&
	    disk_index_grow(d) < 0) {
		d->ents[e].next = d->free_ent;
		d->free_ent = e;
		return 0;
	}
	struct ent *x = &d->ents[e];
	*x = (struct ent){.hash = hash, .seg = g->id, .off = off, .len = len,
	    .vhash = vhash, .flags = E_LIVE, .seg_next = g->ents};
	g->ents = e;
	uint32_t *b = disk_bucket(d, hash);
	x->next = *b;
	*b = e;
	disk_index_bytes(d);
	return e;
}

void
disk_unhash(struct disk *d, disk_ent e)
{
	struct ent *x = &d->ents[e];
	uint32_t *p = disk_bucket(d, x->hash);

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
void
disk_ent_drop(struct disk *d, disk_ent e, enum disk_drop why)
{
	SC_ASSERT(d->ents[e].flags & E_LIVE);
	disk_unhash(d, e);
	d->stats.dropped[why]++;
}

/*
 * Drops e and tells the cache what it lost: memory's copy loses its link,
 * or, when only the disk held the object, the object is gone. key is the
 * entry's, which the caller has at hand.
 */
void
disk_ent_forget(struct disk *d, disk_ent e, enum disk_drop why, const char *key,
    size_t klen)
{
	struct ent *x = &d->ents[e];
	uint8_t flags = x->flags;

	disk_ent_drop(d, e, why);
	if (flags & E_IN_MEM)
		d->ev.relinked(d->ev.arg, x->hash, e, 0);
	else if (flags & E_KNOWN)
		d->ev.lost(d->ev.arg, key, klen);
}

bool
disk_ent_is(const struct disk *d, disk_ent e, uint32_t seg, uint32_t off)
{
	const struct ent *x = &d->ents[e];

	return (x->flags & E_LIVE) && x->seg == seg && x->off == off;
}

void
disk_supersede(struct disk *d, disk_ent e, const char *key, size_t klen)
{
	const struct ent *n = &d->ents[e];

	for (uint32_t o = *disk_bucket(d, n->hash), next; o != 0; o = next) {
		struct ent *x = &d->ents[o];
		next = x->next;
		if (o == e || x->hash != n->hash || x->vhash != n->vhash ||
		    x->seg > n->seg || (x->seg == n->seg && x->off > n->off))
			continue; /* another variant, or newer */
		if (x->flags & E_IN_MEM)
			d->ev.stale(d->ev.arg, x->hash, o);
		/* memory dropped its copy, and so the entry (disk_drop) */
		if (x->flags & E_LIVE)
			disk_ent_forget(d, o, DISK_DROP_REPLACED, key, klen);
	}
}

void
disk_lock(struct disk *d)
{
	pthread_mutex_lock(&d->mutex);
}

void
disk_unlock(struct disk *d)
{
	pthread_mutex_unlock(&d->mutex);
}

/* ---- jobs ---- */

void
disk_job_submit(struct disk *d, struct job *j, struct seg *g, iopool_run_f *run,
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

void
disk_job_end(struct job *j)
{
	if (j->g != NULL)
		disk_seg_release(j->g);
	free(j);
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

static void
done_open(struct iopool_job *pj)
{
	struct open_job *oj = (struct open_job *)pj;
	struct disk *d = oj->j.d;
	uint64_t skipped;

	d->spare_pending = false;
	if (oj->fd >= 0) {
		d->spare = disk_seg_new(oj->id, oj->fd);
		if (d->spare == NULL)
			close(oj->fd);
	} else if (ratelog_due(&d->write_log, &skipped)) {
		fprintf(stderr, "sumcache: %s: %s; writes wait for a new "
		    "segment\n", oj->path, strerror(oj->j.err));
	}
	disk_job_end(&oj->j);
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
	disk_seg_name(d, oj->id, oj->path, sizeof(oj->path));
	d->spare_pending = true;
	disk_job_submit(d, &oj->j, NULL, run_open, done_open);
}

struct seg *
disk_make_room(struct disk *d, uint64_t len)
{
	struct seg *h = disk_head_seg(d);

	if (h == NULL)
		return NULL;
	if (h->bytes > 0 && h->bytes + len > d->seg_target) {
		if (d->spare == NULL) {
			prepare_spare(d);
			return NULL;
		}
		if (disk_seg_append(d, d->spare) < 0)
			return NULL;
		disk_keys_seal(d, h);
		h = d->spare;
		d->spare = NULL;
	}
	/* the next head opens ahead of need, so a record that does not fit
	 * this one finds it ready */
	if (h->bytes + len >= d->seg_target / 2)
		prepare_spare(d);
	while (d->stats.file_bytes + len > d->conf.size)
		if (!disk_evict_oldest(d))
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
	struct seg *g = disk_make_room(d, len);
	struct write_job *w = g != NULL ? calloc(1, sizeof(*w)) : NULL;
	disk_ent e = w != NULL ? disk_ent_new(d, g, o->hash,
	    disk_vary_hash(store_obj_varykey(o), o->vary_len), g->bytes,
	    (uint32_t)len) : 0;
	if (e == 0) {
		free(w);
		d->stats.write_refused++;
		return 0;
	}
	if (in_mem)
		d->ents[e].flags |= E_IN_MEM | E_KNOWN;
	w->o = store_obj_ref(o);
	w->len = (uint32_t)len;
	w->j.e = e;
	w->j.off = g->bytes;
	g->bytes += (uint32_t)len;
	disk_seg_write_begins(d, g);
	d->stats.file_bytes += len;
	disk_job_submit(d, &w->j, g, disk_run_write, disk_done_write);
	return e;
}

unsigned
disk_lookup(struct disk *d, uint64_t hash, disk_ent *out, unsigned max)
{
	unsigned n = 0;

	if (d->nbuckets == 0)
		return 0;
	for (uint32_t e = *disk_bucket(d, hash); e != 0 && n < max;
	    e = d->ents[e].next) {
		const struct ent *x = &d->ents[e];
		if (x->hash == hash && (x->flags & E_COMMITTED))
			out[n++] = e;
	}
	return n;
}

/* g's file changed under us: none of its bodies is known good now. */
static void
seg_changed(struct disk *d, struct seg *g, const struct seg_stamp *now)
{
	uint64_t skipped;

	d->stats.segments_changed++;
	if (ratelog_due(&d->change_log, &skipped))
		fprintf(stderr, "sumcache: cache_dir %s: seg-%010u changed "
		    "outside sumcache (%llu bytes, now %llu); its records are "
		    "checked again (%llu more since the last line)\n", d->path,
		    g->id, (unsigned long long)g->stamp.size,
		    (unsigned long long)now->size, (unsigned long long)skipped);
	g->stamp = *now;
	for (uint32_t e = g->ents; e != 0; e = d->ents[e].seg_next)
		d->ents[e].flags &= (uint8_t)~E_VERIFIED;
}

void
disk_seg_write_begins(struct disk *d, struct seg *g)
{
	struct seg_stamp now;

	if (g->writes++ > 0)
		return;
	stamp_of(g->fd, &now);
	if (memcmp(&now, &g->stamp, sizeof(now)) != 0)
		seg_changed(d, g, &now);
}

bool
disk_trusted(struct disk *d, disk_ent e)
{
	struct ent *x = &d->ents[e];
	struct seg *g = (x->flags & (E_LIVE | E_VERIFIED)) == (E_LIVE |
	    E_VERIFIED) ? disk_seg_find(d, x->seg) : NULL;
	struct seg_stamp now;

	if (g == NULL)
		return false;
	stamp_of(g->fd, &now);
	if (memcmp(&now, &g->stamp, sizeof(now)) != 0 && g->writes == 0)
		seg_changed(d, g, &now);
	return x->flags & E_VERIFIED;
}

uint64_t
disk_ent_where(const struct disk *d, disk_ent e)
{
	const struct ent *x = &d->ents[e];

	return (uint64_t)x->seg << 32 | x->off;
}

bool
disk_trusted_at(struct disk *d, disk_ent e, uint64_t where)
{
	return !disk_ent_is(d, e, (uint32_t)(where >> 32), (uint32_t)where) ||
	    disk_trusted(d, e);
}

bool
disk_distrust(struct disk *d, disk_ent e, uint64_t where)
{
	if (e == 0 || !disk_ent_is(d, e, (uint32_t)(where >> 32),
	    (uint32_t)where))
		return false;
	d->ents[e].flags &= (uint8_t)~E_VERIFIED;
	return true;
}

void
disk_drop(struct disk *d, disk_ent e)
{
	if (d->ents[e].flags & E_LIVE)
		disk_ent_drop(d, e, DISK_DROP_REPLACED);
	d->ents[e].flags &= (uint8_t)~E_IN_MEM;
}

unsigned
disk_forget(struct disk *d, const char *key, size_t klen)
{
	uint64_t hash = XXH3_64bits(key, klen);
	unsigned dropped = 0, disk_only = 0;

	if (d->nbuckets == 0 || d->closing)
		return 0;
	for (uint32_t e = *disk_bucket(d, hash), next; e != 0; e = next) {
		next = d->ents[e].next;
		if (d->ents[e].hash != hash)
			continue;
		disk_only += (d->ents[e].flags & (E_KNOWN | E_IN_MEM)) ==
		    E_KNOWN;
		disk_ent_forget(d, e, DISK_DROP_REPLACED, key, klen);
		dropped++;
	}
	if (dropped == 0)
		return 0;
	/* a tombstone, so that a scan after a crash agrees; without room
	 * for it, a crash before the records' segment goes would bring
	 * them back, so the refusal is counted */
	struct record_info r = {.flags = RECORD_TOMBSTONE,
	    .key_len = (uint32_t)klen};
	uint64_t len = record_len(&r);
	struct seg *g = disk_make_room(d, len);
	struct write_job *w = g != NULL ? calloc(1, sizeof(*w)) : NULL;
	if (w == NULL || (w->tomb_key = malloc(klen)) == NULL) {
		free(w);
		d->stats.write_refused++;
		return disk_only;
	}
	memcpy(w->tomb_key, key, klen);
	w->tomb_len = klen;
	w->len = (uint32_t)len;
	w->j.off = g->bytes;
	g->bytes += (uint32_t)len;
	disk_seg_write_begins(d, g);
	d->stats.file_bytes += len;
	disk_job_submit(d, &w->j, g, disk_run_write, disk_done_write);
	return disk_only;
}

bool
disk_in_mem(const struct disk *d, disk_ent e)
{
	return (d->ents[e].flags & E_IN_MEM) != 0;
}

void
disk_set_in_mem(struct disk *d, disk_ent e, bool in_mem)
{
	struct ent *x = &d->ents[e];

	if (!(x->flags & E_LIVE))
		return;
	if (in_mem)
		x->flags |= E_IN_MEM;
	else
		x->flags &= (uint8_t)~E_IN_MEM;
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
