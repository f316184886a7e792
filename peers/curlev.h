/*
 * libcurl's multi-socket API driven by the libevent loop: every origin (and
 * later peer) transfer shares one multi handle, its connection cache and its
 * DNS cache, and never blocks the loop.
 */
#ifndef CURLEV_H
#define CURLEV_H

#include <curl/curl.h>

struct event_base;
struct curlev;

typedef void curlev_done_f(void *arg, CURLcode rc);

/* Per-transfer completion hook; lives inside the caller's transfer state. */
struct curlev_xfer {
	curlev_done_f *done;
	void *arg;
};

/* Idle connections kept for reuse, at most. */
#define CURLEV_POOL_MAX 32

struct curlev *curlev_new(struct event_base *base);
void curlev_free(struct curlev **o);

/*
 * Starts easy on the loop; x->done(x->arg, rc) runs once when it finishes,
 * after the handle was removed from the multi. The caller keeps ownership
 * of easy and x. Returns 0 or -1.
 */
int curlev_start(struct curlev *o, CURL *easy, struct curlev_xfer *x);

/* Stops a transfer that has not finished; done is not called. */
void curlev_cancel(struct curlev *o, CURL *easy);

#endif
