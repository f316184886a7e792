/*
 * Sending a body kept in a disk segment: never the loop waiting for the
 * device, and never bytes the file no longer holds presented as the
 * object.
 *
 * The device. sendfile on pages that are not in the page cache reads them
 * there and then, on the loop, stalling every other client. So a body
 * over DISKSEND_MIN goes into the client's output a window at a time, and
 * each window is read once off the loop first (disk_warm), which leaves
 * its pages in the page cache for the loop's sendfile. The reads run up
 * to AHEAD windows ahead of what is queued, PARALLEL at a time, so the
 * device works while the socket drains; a window is queued when the
 * output is down to its low-water mark (the client's write callback). A
 * read is a look when the page cache holds the window (mincore), and
 * otherwise a map the kernel fills (MADV_POPULATE_READ): the bytes are
 * never copied out. PARALLEL stays at two of the four I/O threads, so
 * that promotions and writes do not wait behind a large send; four in
 * flight measured about 10 % more from a cold page cache. Smaller bodies
 * were read at their promotion (diskrw.c), so their pages are in the
 * cache unless the kernel has since taken them back.
 *
 * The file. sendfile hands the kernel references to the page cache's
 * pages, not copies, and they stay references until the client has read
 * them (on loopback, until it reads them out of its own socket). A
 * segment file cut short meanwhile (by another hand: damage) has the
 * kernel zero the cut part of the page holding the new end in place, and
 * the client would read those zeros as the object's, at its full length.
 * So the last COPY_TAIL bytes are not sent by reference: they are read
 * (copied) and queued only once everything before them has left this
 * host's kernel (client_all_sent), and only if the file still holds the
 * record as it was checked (its size, and disk_trusted's stamp). When it
 * does not, the answer is cut there: the client sees it end short and
 * the connection close, never the whole length. A body of
 * DISKSEND_COPY_WHOLE bytes or less, and any body for a TLS client
 * (whose layer copies every byte anyway, and would otherwise map the
 * file), is copied whole, a piece at a time as the output drains: the
 * copy is the check. What remains exposed is a cut made after the tail
 * was queued, in bytes the client had received but not yet read (its
 * socket's receive buffer).
 *
 * Ownership: the transaction owns its sender; a read in flight holds it
 * (and so the body and its file) until it is back, and frees it when
 * the transaction went away meanwhile.
 */
#include "disksend.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bodyfd.h"
#include "client.h"
#include "sc_assert.h"
#include "tiers.h"
#include "txn.h"
#include "writer.h"

#define WINDOW (2u << 20)
#define AHEAD 4      /* windows read ahead of what is queued, at most */
#define PARALLEL 2   /* reads in flight: the device works while the
                      * other's pages are copied */
#define COPY_TAIL (4u * 1024)   /* held back, read when the rest is out */
/* a copy tops the output up to this, as a collapsed reader's does */
#define COPY_OUT (CLIENT_OUT_HIGH / 2)

#define DISKSEND_MAGIC 0x26e7581au
struct disksend {
	unsigned magic;         /* DISKSEND_MAGIC (SC_CAST) */
	struct txn *t;            /* NULL once the transaction is gone */
	struct store_body *body;  /* a reference: its file stays open */
	struct disk_sent claim;   /* its record: checked when a send fails
	                           * (failed NULL: none known) */
	bool failed;              /* a read failed: the send is cut */
	uint64_t from, len;       /* the part of it sent (a range, or all);
	                           * the offsets below count from from */
	uint64_t by_ref;          /* [0, by_ref) goes by reference, the rest
	                           * is copied once checked */
	bool wait_sent;           /* and only once all before it has left
	                           * this host (something went by reference) */
	uint64_t queued;          /* bytes in the client's output so far */
	uint64_t warmed;          /* bytes read ahead, from the start */
	uint64_t asked;           /* bytes whose read was started */
	uint32_t done_ahead;      /* bit i: window warmed / WINDOW + i is
	                           * read (reads may end out of order) */
	unsigned reading;         /* reads in flight */
};

static void pump(struct disksend *ds);

/* The window at offset rel of the part is read: warmed moves past
 * every window read in order. */
static void
window_read(struct disksend *ds, uint64_t rel)
{
	uint64_t len = ds->len;

	ds->done_ahead |= 1u << (rel / WINDOW - ds->warmed / WINDOW);
	while (ds->done_ahead & 1) {
		ds->warmed += len - ds->warmed < WINDOW ? len - ds->warmed :
		    WINDOW;
		ds->done_ahead >>= 1;
	}
}

/* The body cannot be sent as the object: the client sees the message
 * end short, and the record is checked again, to leave the cache if it
 * fails. */
static void
cut(struct disksend *ds)
{
	struct txn *t = ds->t;

	ds->failed = true;
	if (ds->claim.failed != NULL)
		ds->claim.failed(&ds->claim);
	client_fail(t->c, CUT_ABORTED);
}

/* Whether the file still holds the record as checked: long enough, and
 * as this process left it (tiers_send_intact). */
static bool
intact(const struct disksend *ds)
{
	const struct store_ext *x = ds->body->ext;
	struct stat st;

	return fstat(x->fd, &st) == 0 && (uint64_t)st.st_size >=
	    (uint64_t)x->off + ds->from + ds->len &&
	    tiers_send_intact(ds->claim.tr, &ds->claim);
}

/* Reads the next piece of the copied part into the output; false when
 * the file ended first or the read failed. */
static bool
copy_piece(struct disksend *ds)
{
	uint64_t n = ds->len - ds->queued;
	size_t queued = writer_queued(ds->t);

	if (n > COPY_OUT - queued)
		n = COPY_OUT - queued;
	if (!writer_body(ds->t, ds->body, ds->from + ds->queued, n, true,
	    &ds->claim))
		return false;
	ds->queued += n;
	return true;
}

static void
on_warm(void *arg, uint64_t off, int err)
{
	struct disksend *ds = SC_CAST(struct disksend, arg, DISKSEND_MAGIC);

	ds->reading--;
	window_read(ds, off - (uint64_t)ds->body->ext->off - ds->from);
	if (ds->t == NULL) {
		if (ds->reading == 0) {
			store_body_unref(&ds->body);
			ds->magic = 0;
			free(ds);
		}
		return;
	}
	if (err != 0 && !ds->failed) {
		/* the window cannot be read (a device error, or the file
		 * was cut) */
		cut(ds);
		return;
	}
	pump(ds);
}

/* The copied part: once what went by reference has left the host and
 * the file still holds the record, pieces as the output drains. false
 * while it waits (a drain, or the kernel), or when it cut the answer. */
static bool
pump_copy(struct disksend *ds)
{
	struct client *c = ds->t->c;

	if (ds->queued == ds->by_ref && ds->wait_sent) {
		if (!client_all_sent(c)) {
			if (writer_queued(ds->t) == 0)
				client_wait_all_sent(c);
			return false;
		}
		if (!intact(ds)) {
			cut(ds);
			return false;
		}
	}
	while (ds->queued < ds->len && ds->queued < ds->warmed &&
	    writer_queued(ds->t) < COPY_OUT)
		if (!copy_piece(ds)) {
			cut(ds);
			return false;
		}
	return true;
}

/* Queues what is read while the output is low; reads on ahead; ends the
 * transaction once the whole body is queued. */
static void
pump(struct disksend *ds)
{
	struct txn *t = ds->t;
	uint64_t len = ds->len;

	for (;;) {
		/* nothing read, queued or sent by reference past the part */
		SC_ASSERT(ds->queued <= len && ds->warmed <= len &&
		    ds->by_ref <= len);
		while (ds->queued < ds->by_ref && ds->queued < ds->warmed &&
		    writer_queued(t) <= CLIENT_OUT_HIGH / 4) {
			uint64_t n = ds->warmed - ds->queued;
			if (n > WINDOW)
				n = WINDOW;
			if (n > ds->by_ref - ds->queued)
				n = ds->by_ref - ds->queued;
			writer_body(t, ds->body, ds->from + ds->queued, n,
			    false, &ds->claim);
			ds->queued += n;
		}
		if (ds->queued >= ds->by_ref && ds->queued < len &&
		    !pump_copy(ds))
			return;
		if (ds->queued == len) {
			struct client *c = t->c;
			disksend_free(&t->send);
			client_txn_done(c);
			return;
		}
		if (ds->reading == PARALLEL || ds->asked == len ||
		    ds->asked >= ds->queued + AHEAD * (uint64_t)WINDOW)
			return;
		uint64_t at = ds->asked;
		uint64_t n = len - at < WINDOW ? len - at : WINDOW;
		ds->asked += n;
		if (tiers_warm(t->w->node->tiers, ds->body->ext->fd,
		    (uint64_t)ds->body->ext->off + ds->from + at, (size_t)n,
		    on_warm, ds))
			ds->reading++;
		else
			window_read(ds, at); /* not off the loop: the send
			                      * reads it */
	}
}

static void
drop_disksend(struct txn *t)
{
	disksend_free(&t->send);
}

static const struct txn_part disksend_part = {"disk send", drop_disksend};

bool
disksend_wanted(const struct store_body *b)
{
	return b->ext != NULL && b->ext->on_disk;
}

int
disksend_start(struct txn *t, struct store_body *b, uint64_t from,
    uint64_t len, bool after_ref, const struct disk_sent *claim)
{
	struct disksend *ds = calloc(1, sizeof(*ds));

	if (ds == NULL)
		return -1;
	ds->magic = DISKSEND_MAGIC;
	ds->t = t;
	if (claim != NULL)
		ds->claim = *claim;
	ds->body = store_body_ref(b);
	ds->from = from;
	ds->len = len;
	if (!writer_copies(t) && len > DISKSEND_COPY_WHOLE)
		ds->by_ref = len - COPY_TAIL;
	ds->wait_sent = ds->by_ref > 0 || after_ref;
	/* read at promotion: no reads ahead (window_read's bits count
	 * windows) */
	if (len <= DISKSEND_MIN)
		ds->warmed = ds->asked = len;
	/* one body a txn: its windows are the only ones going out */
	SC_ASSERT(t->send == NULL);
	t->send = ds;
	txn_hold(t, &disksend_part);
	pump(ds);
	return 0;
}

void
disksend_drained(struct disksend *ds)
{
	pump(ds);
}

void
disksend_free(struct disksend **dsp)
{
	struct disksend *ds = *dsp;

	if (ds == NULL)
		return;
	*dsp = NULL;
	ds->t = NULL;
	if (ds->reading > 0)
		return; /* the last on_warm frees it */
	store_body_unref(&ds->body);
	ds->magic = 0;
	free(ds);
}
