/* Fetching a request from its origin through libcurl, streamed. */
#ifndef FETCH_H
#define FETCH_H

#include "proxy.h"

enum fetch_kind {
	FETCH_MISS = 1,       /* GET/HEAD not in the cache: store if allowed */
	FETCH_REVALIDATE = 2, /* conditional GET for t->stale */
	FETCH_FORWARD = 3,    /* any other method: never stored */
};

/*
 * Starts the origin request for t; the fetch then owns the response: it
 * writes it to the client and finishes the transaction. Returns 0, or -1
 * (nothing was written; the caller answers 503).
 */
int fetch_start(struct txn *t, enum fetch_kind kind);

/* Request body bytes were added to t->body, or it is complete. */
void fetch_body_ready(struct fetch *f);

/* The client's output drained: resume reading from the origin. */
void fetch_output_drained(struct fetch *f);

/* The most memory one fetch holds, buffers of curl's included (the copy
 * for the store is inflight_mem's, not counted here). */
size_t fetch_mem_bound(void);

/* Stops the transfer if running and frees the fetch. */
void fetch_free(struct fetch **f);

/* Frees the shared fetches still running (at exit). */
void fetch_free_shared(struct worker *s);

#endif
