/* Serving stale copies on purpose: stale-while-revalidate and
 * stale-if-error (RFC 5861); see stale.c. */
#ifndef STALE_H
#define STALE_H

#include <stdbool.h>

#include "proxy.h"

/* o's freshness now, with its stale rules read from its stored
 * Cache-Control when it is stale (a fresh one costs no parsing). */
void stale_entry(const struct store_obj *o, struct cachectl_entry *e);

/* t keeps o (the caller's reference; NULL: none) as the stored copy it
 * answers from or revalidates (t->stale), released with t. */
void stale_keep(struct txn *t, struct store_obj *o);

/* Whether t's stale copy (t->stale) may answer in place of an error:
 * disconnected when the origin could not be reached at all. */
bool stale_on_error(const struct txn *t, bool disconnected);

/* Statuses stale-if-error covers (RFC 5861 4). */
bool stale_error_status(int status);

#endif
