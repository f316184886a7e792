/*
 * Writing and reading one record of the disk tier, on the I/O threads,
 * and what the loop does when they are done (disk.c gives the model,
 * record.h the bytes).
 */
#define _GNU_SOURCE
#include "disk_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <xxhash.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14; older headers lack it */
#endif

#include "bodyfd.h"
#include "clock.h"
#include "record.h"
#include "sc_assert.h"

/* The len bytes at p are one record, head and mark checked (its body's
 * checksum is the caller's to check); r says what it is. */
static bool
record_whole(const uint8_t *p, uint32_t len, struct record_info *r)
{
	return record_read_fixed(p, r) && record_len(r) == len &&
	    record_head_ok(p, r) &&
	    record_read_trailer(p + record_trailer_off(r), r);
}

/* ---- writing ---- */

/* The head at off, then the body of o from the file it lives in; the
 * body's checksum out. */
static int
write_from_file(int fd, const uint8_t *head, uint64_t hlen,
    const struct store_body *b, uint64_t off, uint64_t *sum)
{
	struct record_sum *rs = record_sum_new();
	char *buf = malloc(IO_CHUNK);
	int rc = rs != NULL && buf != NULL ? 0 : -1;

	if (rc == 0)
		rc = disk_pwrite(fd, head, hlen, off);
	for (size_t done = 0; rc == 0 && done < b->len;) {
		size_t n = b->len - done < IO_CHUNK ? b->len - done : IO_CHUNK;
		rc = disk_pread(b->ext->fd, buf, n,
		    (uint64_t)b->ext->off + done);
		if (rc == 0)
			rc = disk_pwrite(fd, buf, n, off + hlen + done);
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

void
disk_run_write(struct iopool_job *pj)
{
	struct write_job *w = (struct write_job *)pj;
	struct job *j = &w->j;
	uint64_t t0 = mono_us();
	struct record_info r;
	const char *key, *head = NULL, *vary = NULL;
	const struct store_body *b = w->o != NULL ? w->o->body : NULL;

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

	/* the head and the body, then the mark */
	if (rc == 0)
		record_write_head(&r, key, head, vary, buf);
	if (rc == 0 && b != NULL && b->ext != NULL) {
		rc = write_from_file(j->g->fd, buf, hlen, b, j->off,
		    &r.body_sum);
	} else if (rc == 0) {
		r.body_sum = b != NULL ? record_body_sum(b->data, b->len) : 0;
		rc = disk_pwrite2(j->g->fd, buf, hlen, b != NULL ? b->data :
		    NULL, b != NULL ? b->len : 0, j->off);
	}
	if (rc == 0) {
		record_write_trailer(&r, trailer);
		rc = disk_pwrite(j->g->fd, trailer, RECORD_TRAILER,
		    j->off + record_trailer_off(&r));
	}
	j->err = rc == 0 ? 0 : errno ? errno : EIO;
	free(buf);
	j->us = mono_us() - t0;
}

void
disk_write_over(struct disk *d, struct seg *g)
{
	g->writes--;
	/* what changed the file since its last stamp was ours */
	if (g->writes == 0)
		disk_seg_stamp(g);
	if (g->sealed && g->writes == 0)
		disk_keys_seal(d, g);
}

void
disk_write_ended(struct disk *d, struct seg *g, disk_ent e,
    const struct found *f, const char *key, int err)
{
	uint64_t skipped;

	d->stats.writes++;
	if (err != 0) {
		d->stats.write_errors++;
		if (ratelog_due(&d->write_log, &skipped))
			fprintf(stderr, "sumcache: cache_dir %s: write: %s; "
			    "not on disk (%llu more since the last line)\n",
			    d->path, strerror(err),
			    (unsigned long long)skipped);
	} else {
		disk_keys_add(g, f, key);
	}
	if (e != 0 && disk_ent_is(d, e, g->id, f->off)) {
		struct ent *x = &d->ents[e];
		if (err == 0) {
			/* the page cache holds the bytes this process wrote:
			 * its own reads need no body checksum */
			x->flags |= E_COMMITTED | E_VERIFIED;
			d->stats.objects++;
			d->stats.bytes += x->len;
			d->stats.write_bytes += x->len;
			/* an object only the disk holds joins the cache now */
			if (!(x->flags & E_KNOWN)) {
				x->flags |= E_KNOWN;
				d->ev.found(d->ev.arg, key, f->key_len,
				    f->expires_ms);
			}
			disk_supersede(d, e, key, f->key_len);
		} else {
			disk_ent_forget(d, e, DISK_DROP_IO, key, f->key_len);
		}
	}
	disk_write_over(d, g);
}

void
disk_done_write(struct iopool_job *pj)
{
	struct write_job *w = (struct write_job *)pj;
	struct job *j = &w->j;
	struct found f = {.off = j->off, .len = w->len};
	const char *key = w->tomb_key;

	if (w->o != NULL) {
		key = w->o->key;
		f.key_len = (uint32_t)w->o->key_len;
		f.vhash = disk_vary_hash(store_obj_varykey(w->o),
		    w->o->vary_len);
		f.expires_ms = store_meta_expires_ms(&w->o->meta);
	} else {
		f.key_len = (uint32_t)w->tomb_len;
		f.tomb = true;
	}
	j->d->stats.write_us += j->us;
	disk_write_ended(j->d, j->g, w->o != NULL ? j->e : 0, &f, key,
	    j->err);
	store_obj_unref(&w->o);
	free(w->tomb_key);
	disk_job_end(j);
}

uint8_t *
disk_read_record(int fd, uint64_t off, uint32_t len, struct found *f,
    enum disk_drop *why)
{
	uint8_t *rec = malloc(len);
	struct record_info r;

	*why = DISK_DROP_IO;
	errno = ENOMEM;
	if (rec == NULL)
		return NULL;
	errno = 0;
	if (disk_pread(fd, rec, len, off) < 0) {
		if (errno == 0)
			*why = DISK_DROP_TORN;
		goto fail;
	}
	*why = DISK_DROP_TORN;
	if (!record_whole(rec, len, &r) || (r.flags & RECORD_TOMBSTONE))
		goto fail;
	/* the head is good: its key is known even if the body is not */
	const char *key = record_key(rec);
	*why = DISK_DROP_IO;
	errno = ENOMEM;
	if ((f->key = malloc(r.key_len)) == NULL)
		goto fail;
	memcpy(f->key, key, r.key_len);
	f->key_len = r.key_len;
	f->hash = XXH3_64bits(key, r.key_len);
	f->vhash = disk_vary_hash(key + r.key_len + r.head_len, r.vary_len);
	f->expires_ms = store_meta_expires_ms(&r.meta);
	*why = DISK_DROP_CHECKSUM;
	if (record_body_sum(rec + record_head_len(&r), (size_t)r.body_len) !=
	    r.body_sum)
		goto fail;
	return rec;
fail:
	free(rec);
	return NULL;
}

int
disk_write_record(int fd, const uint8_t *rec, uint32_t len, uint64_t off)
{
	uint32_t mark = len - RECORD_TRAILER;

	if (disk_pwrite(fd, rec, mark, off) < 0 ||
	    disk_pwrite(fd, rec + mark, RECORD_TRAILER, off + mark) < 0)
		return -1;
	return 0;
}

/* ---- reading ---- */

struct read_job {
	struct job j;
	uint32_t len;          /* the record's, as the index has it */
	size_t mem_max;
	bool verified;         /* the body's checksum was checked before */
	int rwf;               /* preadv2's flags: RWF_NOWAIT on the loop */
	char *want;            /* the key asked for */
	size_t want_len;
	disk_read_f *cb;
	void *arg;
	/* results */
	bool failed;           /* fail says why; j.err has an I/O error's */
	enum disk_drop fail;
	bool other;            /* a record of another key (hash collision) */
	uint8_t *head;         /* record_head_len(&r) bytes: rec's, or
	                        * its own allocation */
	struct store_body *rec; /* the whole record, when read in one call */
	struct record_info r;
	struct store_body *body; /* in memory, or NULL: left in the file */
};

/* Why a read of a record's bytes failed: the file ended first (errno 0
 * from disk_pread), or an I/O error. */
static enum disk_drop
read_error(void)
{
	return errno == 0 ? DISK_DROP_SHORT : DISK_DROP_IO;
}

/* Bytes read at once for a record's head: most heads (key, stored head
 * and varykey) fit, so a head costs one read and the trailer one more. */
#define HEAD_READ 4096

/* Reads and checks the head at off into a new buffer, and the trailer;
 * NULL with *why: IO (errno), SHORT, or TORN when the bytes are not the
 * record's. */
static uint8_t *
read_head(int fd, uint64_t off, uint32_t len, struct record_info *r,
    enum disk_drop *why, int rwf)
{
	uint8_t first[HEAD_READ];
	size_t n = len < sizeof(first) ? len : sizeof(first);

	*why = DISK_DROP_IO;
	if (disk_pread_flags(fd, first, n, off, rwf) < 0) {
		*why = read_error();
		return NULL;
	}
	if (n < RECORD_HEAD || !record_read_fixed(first, r) ||
	    record_len(r) != len) {
		*why = DISK_DROP_TORN;
		return NULL;
	}
	uint64_t hlen = record_head_len(r);
	uint8_t *head = malloc(hlen);
	if (head == NULL)
		return NULL;
	size_t have = hlen < n ? (size_t)hlen : n;
	memcpy(head, first, have);
	uint8_t trailer[RECORD_TRAILER];
	uint64_t toff = record_trailer_off(r);
	if (toff + RECORD_TRAILER <= n)
		memcpy(trailer, first + toff, RECORD_TRAILER);
	if ((have < hlen && disk_pread_flags(fd, head + have, hlen - have,
	    off + have, rwf) < 0) || (toff + RECORD_TRAILER > n &&
	    disk_pread_flags(fd, trailer, sizeof(trailer), off + toff,
	    rwf) < 0)) {
		*why = read_error();
		free(head);
		return NULL;
	}
	if (!record_head_ok(head, r) || !record_read_trailer(trailer, r)) {
		*why = DISK_DROP_TORN;
		free(head);
		return NULL;
	}
	return head;
}

static void
read_results_free(struct read_job *rj)
{
	if (rj->rec == NULL)
		free(rj->head);
	rj->head = NULL;
	store_body_unref(&rj->rec);
	store_body_unref(&rj->body);
}

/* bad: the bytes read are not the record (why), or the file ended
 * before it did (errno 0: it was cut); else an I/O error (errno). */
static void
read_failed(struct read_job *rj, enum disk_drop why)
{
	rj->failed = true;
	rj->fail = why;
	rj->j.err = why != DISK_DROP_IO ? 0 : errno ? errno : EIO;
}

/* A record this small is read in one call, head, body and mark: most
 * are, and a disk hit's cost is mostly its system calls. */
#define WHOLE_READ_MAX (1u << 20)

/* The record read in one call into a body's memory, where it stays: a
 * body wanted in memory is then its bytes past the head, not a copy.
 * NULL with *why as read_head's. */
static struct store_body *
read_whole(int fd, uint64_t off, uint32_t len, struct record_info *r,
    enum disk_drop *why, int rwf)
{
	struct store_body *b = store_body_new(len);
	uint8_t *p = b != NULL ? (uint8_t *)b->mem : NULL;

	*why = DISK_DROP_IO;
	if (p == NULL)
		return NULL;
	if (disk_pread_flags(fd, p, len, off, rwf) < 0) {
		*why = read_error();
		store_body_unref(&b);
		return NULL;
	}
	if (!record_whole(p, len, r)) {
		*why = DISK_DROP_TORN;
		store_body_unref(&b);
		return NULL;
	}
	return b;
}

/* The body's checksum, read from the file a chunk at a time. */
static int
file_body_sum(int fd, uint64_t off, size_t len, uint64_t *sum, int rwf)
{
	struct record_sum *rs = record_sum_new();
	char *buf = malloc(IO_CHUNK);
	int rc = rs != NULL && buf != NULL ? 0 : -1;

	for (size_t done = 0; rc == 0 && done < len;) {
		size_t n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
		rc = disk_pread_flags(fd, buf, n, off + done, rwf);
		if (rc == 0)
			record_sum_add(rs, buf, n);
		done += n;
	}
	free(buf);
	*sum = rs != NULL ? record_sum_end(rs) : 0;
	return rc;
}

static int warm_range(int fd, uint64_t off, size_t len);

static void
run_read(struct iopool_job *pj)
{
	struct read_job *rj = (struct read_job *)pj;
	struct job *j = &rj->j;
	int fd = j->g->fd;
	uint64_t t0 = mono_us();
	/* in one call when the body is to be checked, or may be one
	 * wanted in memory (a record at most a head's read longer) */
	bool whole = rj->len <= WHOLE_READ_MAX && (!rj->verified ||
	    rj->len <= rj->mem_max + HEAD_READ);
	enum disk_drop why;

	errno = 0;
	if (whole) {
		rj->rec = read_whole(fd, j->off, rj->len, &rj->r, &why,
		    rj->rwf);
		rj->head = rj->rec != NULL ? (uint8_t *)rj->rec->mem : NULL;
	} else
		rj->head = read_head(fd, j->off, rj->len, &rj->r, &why,
		    rj->rwf);
	if (rj->head == NULL) {
		read_failed(rj, why);
		goto out;
	}
	if (rj->r.flags & RECORD_TOMBSTONE || rj->r.key_len != rj->want_len ||
	    memcmp(record_key(rj->head), rj->want, rj->want_len) != 0) {
		rj->other = true;
		goto out;
	}
	uint64_t hlen = record_head_len(&rj->r);
	size_t blen = (size_t)rj->r.body_len;
	if (blen <= rj->mem_max && whole) {
		rj->body = store_body_ref(rj->rec);
		rj->body->data = rj->rec->mem + hlen;
		rj->body->len = blen;
	} else if (blen <= rj->mem_max) {
		rj->body = store_body_new(blen);
		errno = ENOMEM;
		if (rj->body == NULL) {
			read_failed(rj, DISK_DROP_IO);
			goto out;
		}
		errno = 0;
		if (disk_pread_flags(fd, rj->body->data, blen, j->off + hlen,
		    rj->rwf) < 0) {
			read_failed(rj, read_error());
			goto out;
		}
		rj->body->len = blen;
	}
	/* a body read into memory is checked at every read: its bytes are
	 * at hand, and the page cache may have been filled from the device
	 * again since. One left in the file is checked at its first read
	 * since start-up (or never, when this process wrote it), and again
	 * once its file has changed (disk_trusted) or a send from it failed
	 * (disk_distrust) */
	if (rj->verified && blen > rj->mem_max) {
		/* the loop sends it from the page cache: on a thread (the
		 * loop found the head not cached) its pages are brought in
		 * first, so the send does not wait for the device. The loop's
		 * own read touched the record's two ends without waiting;
		 * the pages between, written, read and sent together with
		 * them, are taken to be cached too */
		if (rj->rwf == 0 && warm_range(fd, j->off + hlen, blen) < 0)
			read_failed(rj, read_error());
		goto out;
	}
	if (blen <= rj->mem_max) {
		if (record_body_sum(rj->body->data, blen) != rj->r.body_sum)
			read_failed(rj, DISK_DROP_CHECKSUM);
		goto out;
	}
	uint64_t sum;
	if (whole)
		sum = record_body_sum(rj->head + hlen, blen);
	else if (file_body_sum(fd, j->off + hlen, blen, &sum, rj->rwf) < 0) {
		read_failed(rj, read_error());
		goto out;
	}
	if (sum != rj->r.body_sum)
		read_failed(rj, DISK_DROP_CHECKSUM);
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
		struct bodyfd_file *f = disk_seg_file(j->g);
		body = f != NULL ? store_body_new(0) : NULL;
		if (body == NULL || !bodyfd_share(&body, f, (int64_t)j->off +
		    (int64_t)record_head_len(r), (size_t)r->body_len)) {
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
	bool current = disk_ent_is(d, j->e, j->g->id, j->off);
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
			disk_ent_forget(d, j->e, rj->fail, rj->want,
			    rj->want_len);
	} else if (!rj->other && current) {
		d->stats.read_bytes += rj->len;
		d->ents[j->e].flags |= E_VERIFIED | E_HIT;
		errno = 0;
		o = read_object(rj);
		/* a good record that cannot be held: no memory, or no
		 * descriptor for its segment's file; the request misses */
		if (o == NULL) {
			d->stats.read_errors++;
			if (ratelog_due(&d->read_log, &skipped))
				fprintf(stderr, "sumcache: cache_dir %s: record "
				    "at seg-%010u+%u read, not kept: %s (%llu "
				    "more since the last line)\n", d->path,
				    j->g->id, j->off,
				    strerror(errno ? errno : ENOMEM),
				    (unsigned long long)skipped);
		}
	}
	rj->cb(rj->arg, o);
	read_results_free(rj);
	free(rj->want);
	disk_job_end(j);
}

/*
 * A read from the page cache costs a copy; a thread's round trip costs
 * two context switches and more, the larger part of a small disk hit.
 * So the loop tries first, with RWF_NOWAIT, which fails rather than wait
 * for the device; what it cannot read that way goes to a thread, and
 * the kernel has started reading it ahead meanwhile. Only records up to
 * WHOLE_READ_MAX, or whose body stays in the file, already checked: the
 * loop copies at most that much.
 */
static bool
read_cached(struct read_job *rj, struct seg *g)
{
	struct job *j = &rj->j;
	struct disk *d = j->d;

	if (d->no_nowait || (rj->len > WHOLE_READ_MAX && !rj->verified))
		return false;
	j->g = g;
	rj->rwf = RWF_NOWAIT;
	run_read(&j->pj);
	bool blocked = rj->failed && rj->fail == DISK_DROP_IO &&
	    (j->err == EAGAIN || j->err == EOPNOTSUPP || j->err == EINVAL);
	if (!blocked) {
		d->stats.reads_cached++;
		g->refs++; /* done_read's release takes it */
		done_read(&j->pj);
		return true;
	}
	if (j->err != EAGAIN)
		d->no_nowait = true;
	read_results_free(rj);
	rj->failed = rj->other = false;
	rj->rwf = j->err = 0;
	return false;
}

bool
disk_read(struct disk *d, disk_ent e, size_t mem_max, const char *key,
    size_t klen, disk_read_f *done, void *arg)
{
	struct read_job *rj = calloc(1, sizeof(*rj));
	struct ent *x = &d->ents[e];
	struct seg *g = disk_seg_find(d, x->seg);

	SC_ASSERT((x->flags & E_COMMITTED) && g != NULL);
	if (rj == NULL || (rj->want = malloc(klen)) == NULL) {
		free(rj);
		done(arg, NULL);
		return true;
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
	rj->j.d = d;
	if (read_cached(rj, g))
		return true;
	disk_job_submit(d, &rj->j, g, run_read, done_read);
	return false;
}

/* ---- a look at a record's head, for ICP ---- */

int
disk_peek(struct disk *d, const char *key, size_t klen, struct store_meta *m)
{
	disk_ent e[1];
	struct record_info r;
	enum disk_drop why;

	if (disk_lookup(d, XXH3_64bits(key, klen), e, 1) == 0)
		return -1;
	struct seg *g = disk_seg_find(d, d->ents[e[0]].seg);
	if (g == NULL || d->no_nowait)
		return 0;
	errno = 0;
	uint8_t *head = read_head(g->fd, d->ents[e[0]].off, d->ents[e[0]].len,
	    &r, &why, RWF_NOWAIT);
	if (head == NULL)
		return why != DISK_DROP_IO ? -1 : 0;
	bool same = !(r.flags & RECORD_TOMBSTONE) && r.key_len == klen &&
	    memcmp(record_key(head), key, klen) == 0;
	free(head);
	if (!same)
		return -1;
	*m = r.meta;
	return 1;
}

/* ---- warming a body's pages ---- */

struct warm_job {
	struct job j;
	int fd;
	uint64_t at;
	size_t len;
	void (*cb)(void *arg, uint64_t off, int err);
	void *arg;
};

/* Reads len bytes of fd at off through a scratch buffer and throws them
 * away: what stays is the pages, in the cache. */
static int
read_through(int fd, uint64_t off, size_t len)
{
	char *buf = malloc(IO_CHUNK);
	int rc = buf != NULL ? 0 : -1;

	for (size_t done = 0; rc == 0 && done < len;) {
		size_t n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
		rc = disk_pread(fd, buf, n, off + done);
		done += n;
	}
	free(buf);
	return rc;
}

/*
 * Brings len bytes of fd at off into the page cache and waits for them,
 * without copying them out: a map of the range, which mincore tells is
 * resident already (a look, the common case), or which
 * MADV_POPULATE_READ (Linux 5.14) reads in. A pread through a buffer
 * where the kernel refuses it: a copy of every byte on this core, which
 * the sends from the loop share.
 */
static int
warm_range(int fd, uint64_t off, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(uint64_t)(page - 1);
	size_t span = (size_t)(off + len - start);
	size_t pages = (span + (size_t)page - 1) / (size_t)page;
	unsigned char *vec = malloc(pages);
	void *map = vec != NULL ? mmap(NULL, span, PROT_READ, MAP_SHARED, fd,
	    (off_t)start) : MAP_FAILED;
	bool all = map != MAP_FAILED && mincore(map, span, vec) == 0;
	int rc = 0;

	for (size_t i = 0; all && i < pages; i++)
		all = vec[i] & 1;
	free(vec);
	if (map == MAP_FAILED)
		return read_through(fd, off, len);
	if (!all && madvise(map, span, MADV_POPULATE_READ) != 0) {
		int err = errno;
		rc = err == EINVAL ? read_through(fd, off, len) : -1;
		if (err != EINVAL)
			errno = err == EFAULT ? EIO : err;
	}
	munmap(map, span);
	return rc;
}

static void
run_warm(struct iopool_job *pj)
{
	struct warm_job *wj = (struct warm_job *)pj;
	uint64_t t0 = mono_us();

	errno = 0;
	if (warm_range(wj->fd, wj->at, wj->len) < 0)
		wj->j.err = errno ? errno : ENODATA; /* 0: short */
	wj->j.us = mono_us() - t0;
}

static void
done_warm(struct iopool_job *pj)
{
	struct warm_job *wj = (struct warm_job *)pj;
	struct disk *d = wj->j.d;
	uint64_t skipped;

	d->stats.read_us += wj->j.us;
	if (wj->j.err != 0) {
		/* the send meets the same error: the response is cut short,
		 * as when an origin fails mid-body */
		d->stats.read_errors++;
		if (ratelog_due(&d->read_log, &skipped))
			fprintf(stderr, "sumcache: cache_dir %s: read ahead of "
			    "a send: %s (%llu more since the last line)\n",
			    d->path, strerror(wj->j.err),
			    (unsigned long long)skipped);
	}
	wj->cb(wj->arg, wj->at, wj->j.err);
	disk_job_end(&wj->j);
}

bool
disk_warm(struct disk *d, int fd, uint64_t off, size_t len,
    void (*done)(void *arg, uint64_t off, int err), void *arg)
{
	struct warm_job *wj = d->closing ? NULL : calloc(1, sizeof(*wj));

	if (wj == NULL)
		return false;
	*wj = (struct warm_job){.fd = fd, .at = off, .len = len, .cb = done,
	    .arg = arg};
	disk_job_submit(d, &wj->j, NULL, run_warm, done_warm);
	return true;
}
