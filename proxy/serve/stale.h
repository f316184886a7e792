/* Serving stale copies on purpose: stale-while-revalidate and
 * stale-if-error (RFC 5861); see stale.c. */
#ifndef STALE_H
#define STALE_H

#include <stdbool.h>

#include "proxy.h"

/* o's freshness now, with its stale rules read from its stored
 * Cache-Control when it is stale (a fresh one costs no parsing). */
void stale_entry(const struct store_obj *o, struct cachectl_entry *e);

/*
 * t is about to be answered with the stale o (stale-while-revalidate):
 * unless a fetch of its URL is running already, a revalidation starts
 * behind it, for no client, and stores what it gets. o is borrowed.
 */
void stale_refresh_behind(const struct txn *t, struct store_obj *o);

/*
 * A transaction with no client for t's request, on the server's list
 * (freed at exit), to carry on a fetch once t's client has its answer: a
 * range request's whole object (range.c). It borrows t's stale copy, if
 * any. NULL on ENOMEM.
 */
struct txn *stale_background_txn(const struct txn *t);

/* A revalidation behind a stale answer (clientless t) ends: its
 * access-log line says status and code, and t is freed, with its fetch
 * if it still has one. */
void stale_background_end(struct txn *t, int status, enum squid_code code);

/* A clientless t is being freed: it leaves the server's list. */
void stale_forget(struct txn *t);

/* Frees the revalidations still running (at exit). */
void stale_free_all(struct worker *s);

/* Whether t's stale copy (t->stale) may answer in place of an error:
 * disconnected when the origin could not be reached at all. */
bool stale_on_error(const struct txn *t, bool disconnected);

/* Statuses stale-if-error covers (RFC 5861 4). */
bool stale_error_status(int status);

#endif
