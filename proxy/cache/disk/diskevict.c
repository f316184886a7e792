/*
 * The disk tier's eviction: the oldest segment goes whole, its hot records
 * re-admitted at the head first (disk.c gives the model; disk_impl.h
 * joins the files).
 */
#define _GNU_SOURCE
#include "disk_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Re-admission, SIEVE's visited bit on segments: a record read since it
 * was written (E_HIT), or whose object memory holds, is hot; the eviction
 * of its segment copies it to the head rather than lose it, and the copy
 * starts unmarked, so it must be hit again to outlive the next round.
 * Bounded: at most a quarter of the segment's bytes are copied, so an
 * eviction frees at least three quarters of one; only records up to
 * READMIT_MAX (each is read whole into a buffer, off the loop); and the
 * head takes them only up to a quarter past its target size.
 */
#define READMIT_SHARE 4
#define READMIT_MAX (1u << 20)

struct readmit {
	disk_ent e;            /* the copy's entry, at the head */
	uint32_t from;         /* the record's offset in the evicted segment */
	int err;               /* errno of a failed read or write, or 0 */
	bool lost;             /* the record could not be read: why says why */
	enum disk_drop why;
	struct found f;        /* the copy, as the head's key file lists it;
	                        * f.key malloc'd once the record is read */
};

/* The keys of the evicted records the summary counted, read back so
 * that it can let them go; the hot records copied to the head; and the
 * segment's file unlinked. */
struct evict_job {
	struct job j;
	size_t n;
	uint32_t *offs;
	char **keys;
	uint32_t *key_lens;
	struct seg *head;      /* a reference while ra are copied into it */
	struct readmit *ra;
	size_t nra;
	char path[PATH_MAX];
	char keys_path[PATH_MAX];
};

static void
run_evict(struct iopool_job *pj)
{
	struct evict_job *ej = (struct evict_job *)pj;

	for (size_t i = 0; i < ej->nra; i++) {
		struct readmit *r = &ej->ra[i];
		errno = 0;
		uint8_t *rec = disk_read_record(ej->j.g->fd, r->from, r->f.len,
		    &r->f, &r->why);
		if (rec == NULL) {
			r->lost = true;
			r->err = errno;
			continue;
		}
		if (disk_write_record(ej->head->fd, rec, r->f.len, r->f.off) < 0)
			r->err = errno ? errno : EIO;
		free(rec);
	}
	disk_read_keys(ej->j.g->fd, ej->offs, ej->n, ej->keys, ej->key_lens);
	if (unlink(ej->path) < 0)
		ej->j.err = errno;
	unlink(ej->keys_path); /* none yet is fine: a start prunes it */
}

/* A copy is over: committed at the head as a write is, or, when its
 * record could not be read, the object is gone (with no key to tell the
 * summary, it stays there until the next rebuild: a false hit). */
static void
readmit_ended(struct disk *d, uint32_t from_seg, struct seg *h,
    struct readmit *r)
{
	uint64_t skipped;

	if (!r->lost) {
		d->stats.readmitted += r->err == 0;
		disk_write_ended(d, h, r->e, &r->f, r->f.key, r->err);
		return;
	}
	d->stats.read_errors += r->why == DISK_DROP_IO;
	if (ratelog_due(&d->read_log, &skipped))
		fprintf(stderr, "sumcache: cache_dir %s: record at "
		    "seg-%010u+%u, to be re-admitted: %s; dropped (%llu more "
		    "since the last line)\n", d->path, from_seg, r->from,
		    r->why == DISK_DROP_IO ? strerror(r->err ? r->err : EIO) :
		    disk_drop_label(r->why), (unsigned long long)skipped);
	if (disk_ent_is(d, r->e, h->id, r->f.off)) {
		if (r->f.key != NULL) {
			disk_ent_forget(d, r->e, r->why, r->f.key, r->f.key_len);
		} else {
			bool in_mem = disk_in_mem(d, r->e);
			disk_ent_drop(d, r->e, r->why);
			if (in_mem)
				d->ev.relinked(d->ev.arg, d->ents[r->e].hash,
				    r->e, 0);
		}
	}
	disk_write_over(d, h);
}

static void
evict_job_free_lists(struct evict_job *ej)
{
	free(ej->ra);
	free(ej->offs);
	free(ej->keys);
	free(ej->key_lens);
}

static void
done_evict(struct iopool_job *pj)
{
	struct evict_job *ej = (struct evict_job *)pj;
	struct disk *d = ej->j.d;

	for (size_t i = 0; i < ej->nra; i++) {
		readmit_ended(d, ej->j.g->id, ej->head, &ej->ra[i]);
		free(ej->ra[i].f.key);
	}
	for (size_t i = 0; i < ej->n; i++) {
		/* a key that cannot be read stays in the summary until the
		 * next rebuild: a false hit, never a wrong answer */
		if (ej->keys[i] != NULL)
			d->ev.lost(d->ev.arg, ej->keys[i], ej->key_lens[i]);
		free(ej->keys[i]);
	}
	if (ej->j.err != 0)
		fprintf(stderr, "sumcache: %s: unlink: %s\n", ej->path,
		    strerror(ej->j.err));
	if (ej->head != NULL)
		disk_seg_release(ej->head);
	evict_job_free_lists(ej);
	disk_job_end(&ej->j);
}


/* A newer copy of x's variant is being written: a copy of x placed after
 * it would be taken for the newer one when it commits. */
static bool
newer_in_flight(struct disk *d, const struct ent *x)
{
	for (uint32_t e = *disk_bucket(d, x->hash); e != 0;
	    e = d->ents[e].next) {
		const struct ent *y = &d->ents[e];
		if (y->hash == x->hash && y->vhash == x->vhash &&
		    !(y->flags & E_COMMITTED))
			return true;
	}
	return false;
}

/*
 * Copies the live entry x (e, just unhashed) of the evicted segment to
 * the head h, if it is hot and the bounds allow: a new entry takes its
 * place in the index, uncommitted until the copy is done, with its
 * summary account and memory's link. Returns false when x is not copied.
 */
static bool
readmit(struct disk *d, struct evict_job *ej, struct seg *h, disk_ent e,
    const struct ent *x, uint64_t *budget)
{
	uint64_t room = d->seg_target + d->seg_target / READMIT_SHARE;

	if (!(x->flags & (E_HIT | E_IN_MEM)) || !(x->flags & E_COMMITTED) ||
	    x->len > READMIT_MAX || x->len > *budget || ej->ra == NULL ||
	    (uint64_t)h->bytes + x->len > room || d->closing ||
	    newer_in_flight(d, x))
		return false;
	disk_ent n = disk_ent_new(d, h, x->hash, x->vhash, h->bytes, x->len);
	if (n == 0)
		return false;
	/* the summary's account and memory's link move over */
	d->ents[n].flags |= x->flags & (E_KNOWN | E_IN_MEM);
	if (x->flags & E_IN_MEM)
		d->ev.relinked(d->ev.arg, x->hash, e, n);
	ej->ra[ej->nra++] = (struct readmit){.e = n, .from = x->off,
	    .f = {.hash = x->hash, .off = h->bytes, .len = x->len,
	    .vhash = x->vhash}};
	*budget -= x->len;
	h->bytes += x->len;
	disk_seg_write_begins(d, h);
	d->stats.file_bytes += x->len;
	return true;
}

/*
 * Evicts the oldest segment: its entries leave the index at once (hot
 * ones are re-admitted at the head; memory copies of the others lose
 * their link; the rest are reported lost once their keys are read back),
 * its file is unlinked off the loop. Returns false when it cannot go yet:
 * it takes the writes, or some are still in flight.
 */
bool
disk_evict_oldest(struct disk *d)
{
	struct seg *g = d->nsegs > 1 ? d->segs[0] : NULL;
	struct seg *h = disk_head_seg(d);

	if (g == NULL || g->writes > 0)
		return false;
	struct evict_job *ej = calloc(1, sizeof(*ej));
	size_t n = 0, hot = 0;
	for (uint32_t e = g->ents; e != 0; e = d->ents[e].seg_next) {
		n++;
		hot += (d->ents[e].flags & (E_HIT | E_IN_MEM)) != 0;
	}
	if (ej == NULL || (n > 0 && ((ej->offs = calloc(n,
	    sizeof(*ej->offs))) == NULL ||
	    (ej->keys = calloc(n, sizeof(*ej->keys))) == NULL ||
	    (ej->key_lens = calloc(n, sizeof(*ej->key_lens))) == NULL))) {
		if (ej != NULL)
			evict_job_free_lists(ej);
		free(ej);
		return false;
	}
	/* no room for the copies' list: they are evicted with the rest */
	if (hot > 0)
		ej->ra = calloc(hot, sizeof(*ej->ra));
	uint64_t budget = g->bytes / READMIT_SHARE;
	for (uint32_t e = g->ents, next; e != 0; e = next) {
		struct ent x = d->ents[e];
		next = x.seg_next;
		if (x.flags & E_LIVE)
			disk_unhash(d, e);
		/* freed first: the copy's entry may take the slot */
		d->ents[e].flags = 0;
		d->ents[e].next = d->free_ent;
		d->free_ent = e;
		if (!(x.flags & E_LIVE) || readmit(d, ej, h, e, &x, &budget))
			continue;
		if (x.flags & E_IN_MEM) {
			d->ev.relinked(d->ev.arg, x.hash, e, 0);
		} else if (x.flags & E_KNOWN) {
			ej->offs[ej->n] = x.off;
			ej->n++;
		}
	}
	if (ej->nra > 0) {
		ej->head = h;
		h->refs++;
	}
	memmove(d->segs, d->segs + 1, (d->nsegs - 1) * sizeof(*d->segs));
	d->nsegs--;
	d->stats.segments = d->nsegs;
	d->stats.segments_evicted++;
	d->stats.file_bytes -= g->bytes;
	g->gone = true;
	disk_seg_name(d, g->id, ej->path, sizeof(ej->path));
	disk_keys_path(d, g->id, ej->keys_path, sizeof(ej->keys_path));
	disk_keys_drop(g);
	/* the job's reference is the last: it closes the file */
	disk_job_submit(d, &ej->j, g, run_evict, done_evict);
	return true;
}
