/*
 * A transaction's life: made (for a client, or for no client: a
 * revalidation behind a stale answer, a range's whole object carried on),
 * accounted (its access-log line and counters), freed. The bottom of
 * serve/: it names no feature. A feature that hangs state on a txn holds
 * a part (txn_hold) whose drop frees that state; txn_free drops every
 * part held, the last held first, so adding a feature touches neither
 * struct txn's teardown nor this file.
 */
#ifndef TXN_H
#define TXN_H

#include "proxy.h"

/* A feature's teardown: frees what the feature hangs on t (NULL-safe:
 * the state may have gone before the txn). Static, one per feature. */
struct txn_part {
	const char *name;   /* the feature's, for an assertion's line */
	void (*drop)(struct txn *t);
};

/* A txn of worker w for client c (NULL: one with no client, which
 * txn_clientless makes); NULL on ENOMEM. txn_free frees it. */
struct txn *txn_new(struct worker *w, struct client *c);
/* p's drop runs when t is freed (once, however often it is held). */
void txn_hold(struct txn *t, const struct txn_part *p);
/* Frees t with every part held; clears *tp. */
void txn_free(struct txn **tp);
/* Writes the access log line and the request counters. */
void txn_account(struct txn *t);

/*
 * A txn with no client for t's request, parsed again (so a fetch asks for
 * the same variant), on the worker's list of them (freed at exit). NULL
 * on ENOMEM, or when the request does not parse again (it did once).
 */
struct txn *txn_clientless(const struct txn *t);
/* A clientless t ends: its access-log line says status and code, and t is
 * freed, with what it holds. */
void txn_clientless_end(struct txn *t, int status, enum squid_code code);
/* Frees the clientless txns still running (at exit). */
void txn_clientless_free_all(struct worker *w);

#endif
