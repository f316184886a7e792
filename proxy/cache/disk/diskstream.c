/*
 * A record written while its body arrives: a response too large for the
 * memory tier goes to the disk as it is fetched, a chunk at a time, and
 * is never held whole anywhere (disk.c gives the model, record.h the
 * bytes).
 *
 * The record's space is reserved when the response's head is in (its
 * length is known: a body of unknown length is not streamed), so the
 * record sits in its segment like any other. Its head goes down first,
 * then the body in IO_CHUNK pieces as they fill, each piece its own job
 * at its own offset; the body's checksum is taken on the loop as the
 * bytes come; the trailer goes last, once every piece is on the disk,
 * and only then is the entry committed. A crash in between leaves a head
 * without a mark: the scan steps over it (its length is in the head) and
 * counts it torn.
 *
 * Ownership: the caller (a fetch) holds the stream until it ends or
 * aborts it; after that the stream belongs to its jobs, and the last one
 * frees it. The segment counts the stream as one write from begin to the
 * end, so it is not evicted meanwhile.
 *
 * Back-pressure: bytes handed over and not yet on the disk are the
 * stream's backlog, at most DISK_STREAM_HIGH and one piece; the caller
 * stops feeding while disk_stream_full() and is told when the backlog
 * is down to half. A disk slower than the origin thus slows the fetch,
 * and memory stays bounded (DISK_STREAM_MEM a stream). The pieces not
 * yet in the readable prefix (below) are held to PIECES_OUT the same
 * way: one slow write with later ones done past it must not have the
 * caller feed on without bound.
 *
 * Readers while it is written: the clients of a collapsed fetch read the
 * body off the segment file as it goes down (disk_stream_body), up to the
 * stream's readable prefix: the record's bytes on the disk with no gap
 * from its start (pieces end in any order; those past a gap wait in
 * ahead[]). The caller is told as the prefix grows (written), and may
 * hand over a partial piece at once (disk_stream_flush) when its readers
 * wait, so a slow origin's bytes reach them as they come, not a
 * megabyte at a time.
 */
#define _GNU_SOURCE
#include "disk_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bodyfd.h"
#include "clock.h"
#include "record.h"
#include "sc_assert.h"

/* Pieces submitted and not yet in the readable prefix (in flight, or
 * done past a gap): the stream is full from PIECES_OUT on, and a
 * partial piece is handed over (disk_stream_flush) below FLUSH_OUT_MAX
 * only. A write while not full adds at most one piece (at most IO_CHUNK
 * bytes), and the end one more, so ahead[] never holds more than
 * PIECES_OUT + 1. */
#define PIECES_OUT 12
#define FLUSH_OUT_MAX 4

struct disk_stream {
	struct disk *d;
	struct seg *g;
	disk_ent e;
	uint32_t off;            /* the record's, in g */
	uint32_t len;            /* the whole record's */
	uint16_t vhash;          /* its variant's, for the key file */
	struct record_info r;
	char *key;               /* for the key file, and found() */
	uint64_t at;             /* next byte's offset in the record */
	uint8_t *piece;          /* the piece filling, IO_CHUNK bytes */
	size_t fill;
	struct record_sum *sum;
	size_t backlog;          /* bytes handed over, not yet written */
	unsigned jobs;           /* in flight */
	int err;                 /* the first I/O error, or 0 */
	bool ended, aborted;     /* the caller let go of it */
	bool mark_sent;
	void (*drained)(void *arg);
	void *arg;
	/* the readable prefix (record offsets), and pieces done past a gap
	 * (PIECES_OUT says why it is enough) */
	uint64_t done_to;
	struct { uint64_t at, end; } ahead[PIECES_OUT + 1];
	unsigned nahead;
	void (*written)(void *arg, uint64_t readable, bool failed);
	void *warg;
};

struct piece_job {
	struct job j;
	struct disk_stream *ds;
	uint8_t *buf;
	size_t n;
	uint64_t at;             /* offset in the record */
};

static void
stream_free(struct disk_stream *ds)
{
	free(ds->piece);
	free(ds->key);
	if (ds->sum != NULL)
		record_sum_end(ds->sum);
	free(ds);
}

/* The stream is done with its segment. */
static void
stream_finish(struct disk_stream *ds)
{
	disk_seg_release(ds->g);
	stream_free(ds);
}

/* Every byte is written (err 0), or some write failed: the record is
 * committed, or its entry dropped, as any write's. */
static void
stream_ended(struct disk_stream *ds)
{
	struct found f = {.off = ds->off, .len = ds->len,
	    .key_len = ds->r.key_len, .vhash = ds->vhash,
	    .expires_ms = store_meta_expires_ms(&ds->r.meta)};

	ds->d->stats.streams += ds->err == 0;
	disk_write_ended(ds->d, ds->g, ds->e, &f, ds->key, ds->err);
	stream_finish(ds);
}

/* The caller let go before the end: the entry goes (the record stays
 * without its mark); a write that failed is still counted as one. */
static void
stream_aborted(struct disk_stream *ds)
{
	struct disk *d = ds->d;

	if (ds->err != 0) {
		stream_ended(ds);
		return;
	}
	if (disk_ent_is(d, ds->e, ds->g->id, ds->off))
		disk_ent_drop(d, ds->e, DISK_DROP_ABORTED);
	disk_write_over(d, ds->g);
	stream_finish(ds);
}

static void
run_piece(struct iopool_job *pj)
{
	struct piece_job *pc = (struct piece_job *)pj;
	struct job *j = &pc->j;
	uint64_t t0 = mono_us();

	if (disk_pwrite(j->g->fd, pc->buf, pc->n, j->off + pc->at) < 0)
		j->err = errno ? errno : EIO;
	j->us = mono_us() - t0;
}

static void done_piece(struct iopool_job *pj);

/* Hands n bytes at buf (which it takes) to a job; -1 out of memory. */
static int
submit(struct disk_stream *ds, uint8_t *buf, size_t n)
{
	struct piece_job *pc = calloc(1, sizeof(*pc));

	if (pc == NULL) {
		free(buf);
		return -1;
	}
	*pc = (struct piece_job){.ds = ds, .buf = buf, .n = n, .at = ds->at};
	pc->j.off = ds->off;
	ds->at += n;
	ds->jobs++;
	disk_job_submit(ds->d, &pc->j, ds->g, run_piece, done_piece);
	return 0;
}

/* Every piece is down: the mark goes after them. At a stop the pool
 * takes no more jobs, and the mark is written here. */
static void
send_mark(struct disk_stream *ds)
{
	uint8_t *t = malloc(RECORD_TRAILER);

	ds->mark_sent = true;
	ds->r.body_sum = record_sum_end(ds->sum);
	ds->sum = NULL;
	ds->at = record_trailer_off(&ds->r);
	if (t == NULL) {
		ds->err = ENOMEM;
	} else if (!ds->d->closing) {
		record_write_trailer(&ds->r, t);
		ds->backlog += RECORD_TRAILER;
		if (submit(ds, t, RECORD_TRAILER) == 0)
			return; /* its job commits */
		ds->err = ENOMEM;
	} else {
		record_write_trailer(&ds->r, t);
		if (disk_pwrite(ds->g->fd, t, RECORD_TRAILER,
		    (uint64_t)ds->off + ds->at) < 0)
			ds->err = errno ? errno : EIO;
		free(t);
	}
	stream_ended(ds);
}

/* Body bytes on the disk from the body's start, without a gap. */
static uint64_t
readable(const struct disk_stream *ds)
{
	uint64_t hlen = record_head_len(&ds->r);

	if (ds->done_to <= hlen)
		return 0;
	return ds->done_to - hlen < ds->r.body_len ? ds->done_to - hlen :
	    ds->r.body_len;
}

/* [at, end) of the record is on the disk: whether the readable prefix
 * grew. */
static bool
note_written(struct disk_stream *ds, uint64_t at, uint64_t end)
{
	uint64_t was = ds->done_to;

	if (at != ds->done_to) {
		/* held to PIECES_OUT + 1 by disk_stream_full */
		SC_ASSERT(ds->nahead < sizeof(ds->ahead) /
		    sizeof(ds->ahead[0]));
		ds->ahead[ds->nahead].at = at;
		ds->ahead[ds->nahead].end = end;
		ds->nahead++;
		return false;
	}
	ds->done_to = end;
	for (unsigned i = 0; i < ds->nahead;) {
		if (ds->ahead[i].at != ds->done_to) {
			i++;
			continue;
		}
		ds->done_to = ds->ahead[i].end;
		ds->ahead[i] = ds->ahead[--ds->nahead];
		i = 0;
	}
	return ds->done_to > was;
}

/* Pieces submitted and not yet readable. */
static unsigned
pieces_out(const struct disk_stream *ds)
{
	return ds->jobs + ds->nahead;
}

/* Whether a caller held back may feed again: the backlog down to half,
 * and half the pieces out readable. */
static bool
has_room(const struct disk_stream *ds)
{
	return ds->backlog <= DISK_STREAM_HIGH / 2 &&
	    pieces_out(ds) <= PIECES_OUT / 2;
}

static void
done_piece(struct iopool_job *pj)
{
	struct piece_job *pc = (struct piece_job *)pj;
	struct disk_stream *ds = pc->ds;
	struct disk *d = ds->d;
	bool was_short = !has_room(ds);

	d->stats.write_us += pc->j.us;
	bool failed = pc->j.err != 0 && ds->err == 0;
	if (failed)
		ds->err = pc->j.err;
	ds->jobs--;
	ds->backlog -= pc->n;
	free(pc->buf);
	/* readers hear of body bytes only, and of the first failure */
	if (!ds->aborted && !ds->mark_sent && ds->written != NULL &&
	    (failed || (ds->err == 0 && note_written(ds, pc->at, pc->at +
	    pc->n))))
		ds->written(ds->warg, readable(ds), failed);
	disk_job_end(&pc->j);
	if (ds->jobs > 0)
		goto more;
	if (ds->aborted) {
		stream_aborted(ds);
		return;
	}
	if (ds->mark_sent || (ds->ended && ds->err != 0)) {
		stream_ended(ds);
		return;
	}
	if (ds->ended) {
		send_mark(ds);
		return;
	}
more:
	/* the caller waits on a stream now down to half */
	if (!ds->ended && !ds->aborted && was_short && has_room(ds) &&
	    ds->drained != NULL)
		ds->drained(ds->arg);
}

struct disk_stream *
disk_stream_begin(struct disk *d, const struct store_obj *o,
    uint64_t body_len)
{
	struct record_info r;

	record_describe(o, &r);
	r.body_len = body_len;
	uint64_t len = record_len(&r), hlen = record_head_len(&r);
	if (d->closing || len > d->conf.size / 2 || len > UINT32_MAX / 2) {
		d->stats.write_refused += !d->closing;
		return NULL;
	}
	struct disk_stream *ds = calloc(1, sizeof(*ds));
	uint8_t *head = malloc(hlen);
	struct seg *g = NULL;
	if (ds != NULL && head != NULL && (ds->key = malloc(o->key_len)) !=
	    NULL && (ds->piece = malloc(IO_CHUNK)) != NULL &&
	    (ds->sum = record_sum_new()) != NULL)
		g = disk_make_room(d, len);
	disk_ent e = g != NULL ? disk_ent_new(d, g, o->hash,
	    disk_vary_hash(store_obj_varykey(o), o->vary_len), g->bytes,
	    (uint32_t)len) : 0;
	if (e == 0) {
		free(head);
		if (ds != NULL)
			stream_free(ds);
		d->stats.write_refused++;
		return NULL;
	}
	memcpy(ds->key, o->key, o->key_len);
	ds->d = d;
	ds->g = g;
	ds->e = e;
	ds->off = g->bytes;
	ds->len = (uint32_t)len;
	ds->vhash = d->ents[e].vhash;
	record_write_head(&r, o->key, store_obj_head(o), store_obj_varykey(o),
	    head);
	ds->r = r;
	g->bytes += (uint32_t)len;
	disk_seg_write_begins(d, g);
	g->refs++; /* the stream's own, until stream_finish */
	d->stats.file_bytes += len;
	/* the head first: from here a scan can step over the record */
	ds->backlog = hlen;
	if (submit(ds, head, hlen) < 0)
		ds->err = ENOMEM;
	return ds;
}

bool
disk_stream_full(const struct disk_stream *ds)
{
	disk_lock(ds->d);
	bool full = ds->backlog >= DISK_STREAM_HIGH ||
	    pieces_out(ds) >= PIECES_OUT;
	disk_unlock(ds->d);
	return full;
}

void
disk_stream_on_drained(struct disk_stream *ds, void (*drained)(void *arg),
    void *arg)
{
	disk_lock(ds->d);
	ds->drained = drained;
	ds->arg = arg;
	disk_unlock(ds->d);
}

void
disk_stream_on_written(struct disk_stream *ds,
    void (*written)(void *arg, uint64_t readable, bool failed), void *arg)
{
	disk_lock(ds->d);
	ds->written = written;
	ds->warg = arg;
	disk_unlock(ds->d);
}

static int stream_flush(struct disk_stream *ds, bool last);

int
disk_stream_flush(struct disk_stream *ds, bool last)
{
	struct disk *d = ds->d;

	disk_lock(d);
	int rc = stream_flush(ds, last);
	disk_unlock(d);
	return rc;
}

static int
stream_flush(struct disk_stream *ds, bool last)
{
	if (ds->err != 0)
		return -1;
	/* those in flight say when they are down, and the caller asks
	 * again then; the last partial piece goes whatever is in flight */
	if (ds->fill == 0 || (!last && pieces_out(ds) >= FLUSH_OUT_MAX))
		return 0;
	uint8_t *part = ds->piece;
	if ((ds->piece = malloc(IO_CHUNK)) == NULL || submit(ds, part,
	    ds->fill) < 0) {
		ds->err = ENOMEM;
		if (ds->piece == NULL)
			free(part);
		return -1;
	}
	ds->fill = 0;
	return 0;
}

struct store_body *
disk_stream_body(const struct disk_stream *ds)
{
	disk_lock(ds->d);
	struct bodyfd_file *f = disk_seg_file(ds->g);
	struct store_body *b = f != NULL ? store_body_new(0) : NULL;

	if (b != NULL && !bodyfd_share(&b, f, (int64_t)ds->off +
	    (int64_t)record_head_len(&ds->r), (size_t)ds->r.body_len))
		store_body_unref(&b);
	disk_unlock(ds->d);
	return b;
}

static int stream_write(struct disk_stream *ds, const void *p, size_t n);

int
disk_stream_write(struct disk_stream *ds, const void *p, size_t n)
{
	struct disk *d = ds->d;

	disk_lock(d);
	int rc = stream_write(ds, p, n);
	disk_unlock(d);
	return rc;
}

static int
stream_write(struct disk_stream *ds, const void *p, size_t n)
{
	const uint8_t *src = p;

	if (ds->err != 0)
		return -1;
	SC_ASSERT(n <= IO_CHUNK && ds->at - record_head_len(&ds->r) +
	    ds->fill + n <= ds->r.body_len);
	record_sum_add(ds->sum, p, n);
	ds->backlog += n;
	while (n > 0) {
		size_t k = IO_CHUNK - ds->fill < n ? IO_CHUNK - ds->fill : n;
		memcpy(ds->piece + ds->fill, src, k);
		ds->fill += k;
		src += k;
		n -= k;
		if (ds->fill < IO_CHUNK)
			break;
		uint8_t *full = ds->piece;
		ds->piece = malloc(IO_CHUNK);
		if (submit(ds, full, IO_CHUNK) < 0 || ds->piece == NULL) {
			ds->err = ENOMEM;
			return -1;
		}
		ds->fill = 0;
	}
	return 0;
}

static void stream_end(struct disk_stream *ds);

void
disk_stream_end(struct disk_stream **dsp)
{
	struct disk_stream *ds = *dsp;
	struct disk *d = ds->d;

	*dsp = NULL;
	disk_lock(d);
	stream_end(ds);
	disk_unlock(d);
}

static void
stream_end(struct disk_stream *ds)
{
	SC_ASSERT(ds->err != 0 || ds->at - record_head_len(&ds->r) +
	    ds->fill == ds->r.body_len);
	ds->ended = true;
	if (ds->fill > 0 && ds->err == 0) {
		uint8_t *last = ds->piece;
		ds->piece = NULL;
		if (submit(ds, last, ds->fill) < 0)
			ds->err = ENOMEM;
		ds->fill = 0;
	}
	if (ds->jobs > 0)
		return; /* the last piece's job sends the mark */
	if (ds->err == 0)
		send_mark(ds);
	else
		stream_ended(ds);
}

void
disk_stream_abort(struct disk_stream **dsp)
{
	struct disk_stream *ds = *dsp;

	if (ds == NULL)
		return;
	*dsp = NULL;
	struct disk *d = ds->d;
	disk_lock(d);
	ds->aborted = true;
	if (ds->jobs == 0)
		stream_aborted(ds);
	/* else the last job lets it go */
	disk_unlock(d);
}
