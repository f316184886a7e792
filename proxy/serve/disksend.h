/*
 * Sending a large body kept in a disk segment a window at a time, each
 * window read off the loop first (disksend.c says why).
 */
#ifndef DISKSEND_H
#define DISKSEND_H

#include <stdbool.h>

#include "proxy.h"

/* Bodies on disk up to this are sent whole. */
#define DISKSEND_MIN (1u << 20)

struct disksend;

/* b is a body on disk large enough to be sent by windows. */
bool disksend_wanted(const struct store_body *b);
/*
 * Sends len bytes of b from offset from (a range, or the whole) as t's
 * response body, after its head: t->send is the sender (t holds it; b
 * gets a reference), and the transaction is done, through
 * client_txn_done, once the whole body is queued, which may be before
 * this returns. A window that cannot be read cuts the response short and
 * has the record the client was told it sends (t->c->sent) checked
 * again (tiers_send_failed). -1, nothing sent, when out of memory.
 */
int disksend_start(struct txn *t, struct store_body *b, uint64_t from,
    uint64_t len);
/* The client's output is down to its low-water mark. */
void disksend_drained(struct disksend *ds);
/* The transaction is gone (or done): accepts NULL, clears *ds. */
void disksend_free(struct disksend **ds);

#endif
