/*
 * libcurl's multi-socket API driven by the libevent loop: every origin (and
 * later peer) transfer shares one multi handle, its connection cache and its
 * DNS cache, and never blocks the loop.
 */
#ifndef ORIGIN_H
#define ORIGIN_H

#include <curl/curl.h>

struct event_base;
struct origin;

typedef void origin_done_f(void *arg, CURLcode rc);

/* Per-transfer completion hook; lives inside the caller's transfer state. */
struct origin_xfer {
	origin_done_f *done;
	void *arg;
};

struct origin *origin_new(struct event_base *base);
void origin_free(struct origin **o);

/*
 * Starts easy on the loop; x->done(x->arg, rc) runs once when it finishes,
 * after the handle was removed from the multi. The caller keeps ownership
 * of easy and x. Returns 0 or -1.
 */
int origin_start(struct origin *o, CURL *easy, struct origin_xfer *x);

/* Stops a transfer that has not finished; done is not called. */
void origin_cancel(struct origin *o, CURL *easy);

#endif
