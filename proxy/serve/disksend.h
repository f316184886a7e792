/*
 * Sending a body kept in a disk segment: a large one a window at a time,
 * each window read off the loop first; its last bytes only once the file
 * is known to still hold them (disksend.c says why).
 */
#ifndef DISKSEND_H
#define DISKSEND_H

#include <stdbool.h>

#include "proxy.h"

/* Bodies on disk up to this are sent without reads ahead. */
#define DISKSEND_MIN (1u << 20)
/* Parts of bodies on disk up to this are copied whole: a copy of this
 * much costs about what a sendfile and the check of its last bytes
 * would (disksend.c). */
#define DISKSEND_COPY_WHOLE (64u * 1024)

struct disksend;

/* b is a body on disk: disksend sends it. */
bool disksend_wanted(const struct store_body *b);
/*
 * Sends len bytes of b from offset from (a range, or the whole) as t's
 * response body, after its head: t->send is the sender (t holds it; b
 * gets a reference), and the transaction is done, through
 * client_txn_done, once the whole body is queued, which may be before
 * this returns. A window that cannot be read, or a file that no longer
 * holds the record when the last bytes are due, cuts the response short
 * and tells the record's claim (tiers.h; NULL: none known), which has it
 * checked again; the claim goes with every window to the writer too.
 * after_ref: bytes of b before from went to the client by reference (a
 * collapsed reader's), so the last bytes wait for them as for this
 * send's own. -1, nothing sent, when out of memory.
 */
int disksend_start(struct txn *t, struct store_body *b, uint64_t from,
    uint64_t len, bool after_ref, const struct disk_sent *claim);
/* The client's output is down to its low-water mark. */
void disksend_drained(struct disksend *ds);
/* The transaction is gone (or done): accepts NULL, clears *ds. */
void disksend_free(struct disksend **ds);

#endif
