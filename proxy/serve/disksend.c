/*
 * Sending a large body kept in a disk segment without the loop waiting for
 * the device.
 *
 * A disk-tier body over DISKSEND_MIN is sent from its segment file with
 * sendfile, and sendfile on pages that are not in the page cache reads
 * them there and then, on the loop, stalling every other client. So the
 * body goes into the client's output a window at a time, and each window
 * is read once off the loop first (disk_warm), which leaves its pages in
 * the page cache for the loop's sendfile. The reads run up to AHEAD
 * windows ahead of what is queued, PARALLEL at a time, so the device
 * works while the socket drains; a window is queued when the output is
 * down to its low-water mark (the client's write callback).
 * A read is a look when the page cache holds the window (mincore), and
 * otherwise a map the kernel fills (MADV_POPULATE_READ): the bytes are
 * never copied out. PARALLEL stays at two of the four I/O threads, so
 * that promotions and writes do not wait behind a large send; four in
 * flight measured about 10 % more from a cold page cache.
 *
 * Smaller bodies on disk are sent whole: at their promotion the loop read
 * their record's two ends without waiting, or an I/O thread brought their
 * pages in (diskrw.c), so their pages are in the cache unless the kernel
 * has since taken them back; then a send of at most DISKSEND_MIN bytes
 * reads them on the loop.
 *
 * Ownership: the transaction owns its sender; a read in flight holds it
 * (and so the body and its file) until it is back, and frees it when
 * the transaction went away meanwhile.
 */
#include "disksend.h"

#include <stdlib.h>

#include <event2/buffer.h>

#include "bodyfd.h"
#include "client.h"
#include "tiers.h"

#define WINDOW (2u << 20)
#define AHEAD 4      /* windows read ahead of what is queued, at most */
#define PARALLEL 2   /* reads in flight: the device works while the
                      * other's pages are copied */

struct disksend {
	struct txn *t;            /* NULL once the transaction is gone */
	struct store_body *body;  /* a reference: its file stays open */
	bool failed;              /* a read failed: the send is cut */
	uint64_t from, len;       /* the part of it sent (a range, or all);
	                           * the offsets below count from from */
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

static void
on_warm(void *arg, uint64_t off, int err)
{
	struct disksend *ds = arg;

	ds->reading--;
	window_read(ds, off - (uint64_t)ds->body->ext->off - ds->from);
	if (ds->t == NULL) {
		if (ds->reading == 0) {
			store_body_unref(&ds->body);
			free(ds);
		}
		return;
	}
	if (err != 0 && !ds->failed) {
		/* the window cannot be read (a device error, or the file
		 * was cut): the client sees the message end short, and the
		 * record is checked again, to leave the cache if it fails */
		struct txn *t = ds->t;
		ds->failed = true;
		tiers_send_failed(t->srv->tiers, &t->c->sent);
		client_fail(t->c, CUT_ABORTED);
		return;
	}
	pump(ds);
}

/* Queues what is read while the output is low; reads on ahead; ends the
 * transaction once the whole body is queued. */
static void
pump(struct disksend *ds)
{
	struct txn *t = ds->t;
	struct evbuffer *out = client_out(t->c);
	uint64_t len = ds->len;

	for (;;) {
		while (ds->queued < ds->warmed &&
		    evbuffer_get_length(out) <= CLIENT_OUT_HIGH / 4) {
			uint64_t n = ds->warmed - ds->queued;
			if (n > WINDOW)
				n = WINDOW;
			bodyfd_send_range(ds->body, out, ds->from + ds->queued,
			    n);
			ds->queued += n;
			client_sent(t, n);
		}
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
		if (tiers_warm(t->srv->tiers, ds->body->ext->fd,
		    (uint64_t)ds->body->ext->off + ds->from + at, (size_t)n,
		    on_warm, ds))
			ds->reading++;
		else
			window_read(ds, at); /* not off the loop: the send
			                      * reads it */
	}
}

bool
disksend_wanted(const struct store_body *b)
{
	return b->ext != NULL && b->ext->on_disk && b->len > DISKSEND_MIN;
}

int
disksend_start(struct txn *t, struct store_body *b, uint64_t from,
    uint64_t len)
{
	struct disksend *ds = calloc(1, sizeof(*ds));

	if (ds == NULL)
		return -1;
	ds->t = t;
	ds->body = store_body_ref(b);
	ds->from = from;
	ds->len = len;
	t->send = ds;
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
	free(ds);
}
