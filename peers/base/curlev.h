/*
 * libcurl's multi-socket API driven by the libevent loop: every origin and
 * peer transfer shares one multi handle, its connection cache and its DNS
 * cache, and never blocks the loop. A kept connection on which bytes wait
 * is never used again (curlev.c says why curl alone does not see to it).
 */
#ifndef CURLEV_H
#define CURLEV_H

#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

struct event_base;
struct curlev;

typedef void curlev_done_f(void *arg, CURLcode rc);

/* a connection's attempts: IPv6 and IPv4, and another of each */
#define CURLEV_OPENED 4

/* Per-transfer completion hook; lives inside the caller's transfer state. */
#define CURLEV_XFER_MAGIC 0x1c0e7a5du
struct curlev_xfer {
	unsigned magic;     /* CURLEV_XFER_MAGIC from curlev_start on */
	curlev_done_f *done;
	void *arg;
	/* curlev's own */
	struct curlev *o;
	bool running;   /* in the multi, or waiting to enter it */
	bool pending;   /* started from inside a curl callback */
	bool refused_conn;  /* a kept connection with bytes waiting was
	                     * refused: the transfer goes on a new one */
	bool retried;       /* and it has */
	curl_socket_t opened[CURLEV_OPENED];  /* sockets curl opened for
	                                       * it, the last few */
	unsigned nopened;
	CURL *easy;
	struct curlev_xfer *next_pending;
};

/* What curlev saw of its connections, counted in place for the caller's
 * metrics (proxy/stats/metrics.h). */
struct curlev_stats {
	/* connections closed, never used again, because bytes had arrived
	 * on them past the end of the last answer: an overlong body, a
	 * second response, or (over TLS) possibly an alert */
	uint64_t excess;
};

/* Connections kept for reuse, at most (the caller's descriptor plan may
 * ask for fewer). */
#define CURLEV_POOL_MAX 256
/* With no transfer running this long, the kept connections are closed. */
#define CURLEV_IDLE_CLOSE_MS 5000

/* A multi on base keeping up to pool connections for reuse; NULL on
 * ENOMEM. */
struct curlev *curlev_new(struct event_base *base, long pool);
void curlev_free(struct curlev **o);

/*
 * Starts easy on the loop; x->done(x->arg, rc) runs once when it finishes,
 * after the handle was removed from the multi. The caller keeps ownership
 * of easy and x. Returns 0 or -1. May be called from a transfer's own
 * callbacks (a response that finishes one client lets its next request
 * start): the handle then enters the multi once curl has returned.
 */
int curlev_start(struct curlev *o, CURL *easy, struct curlev_xfer *x);

/* Borrowed for o's life. */
/* A copy; any thread. */
struct curlev_stats curlev_stats(const struct curlev *o);

/* Stops a transfer that has not finished; done is not called. */
void curlev_cancel(struct curlev *o, CURL *easy);

/*
 * Easy handles kept for the next transfer: a handle made and freed for
 * every miss was a good part of libcurl's cost on a small one (its
 * allocations, and glibc consolidating them). curlev_easy gives a handle
 * with every option at its default (a kept one, or a new one; NULL on
 * ENOMEM); curlev_easy_done takes back one that is not running (NULL
 * accepted), resets it and keeps it, or frees it when CURLEV_EASY_KEEP
 * are kept already; *easy is cleared.
 */
#define CURLEV_EASY_KEEP 64
CURL *curlev_easy(struct curlev *o);
void curlev_easy_done(struct curlev *o, CURL **easy);

#endif
