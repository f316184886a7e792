/* The node's own pages and the summary exchange; see pages.c. */
#ifndef PAGES_H
#define PAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "metrics.h"
#include "proxy.h"

/* An origin-form request (path p, n bytes): an internal page, the summary
 * exchange, or 400 (this is a forward proxy). Finishes or starts t. */
void pages_answer(struct txn *t, const char *p, size_t n);

/* An absolute-form request for one of our read-only pages at this node's
 * own address: answered, and true; false for anything else. */
bool pages_answer_absolute(struct txn *t);

/* A peer's POSTed message is all here (t->body's block): applied,
 * answered. */
void pages_peer_post_arrived(struct txn *t);
/* t, a peer's POST or not, is going: a summary's receipt ends. */
void pages_peer_post_end(struct txn *t);

/* Where /metrics and the status page read the node's counters: every
 * worker's summed, the node's gauges, copies of the store's, budget's,
 * digest's, leaf cache's and upstream connections' (in v->taken), and
 * the disk tier's (borrowed, until the loop runs again). Any worker. */
void pages_metrics_view(struct worker *s, struct metrics_view *v);

#endif
