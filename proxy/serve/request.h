/* Answering one request: cache lookups and origin fetches (the node's
 * own pages are pages.c's). */
#ifndef REQUEST_H
#define REQUEST_H

#include "icp.h"
#include "client.h"
#include "proxy.h"

/* A complete, valid head has been parsed into t->req: act on it. */
void request_start(struct txn *t);

/* Moves request body bytes from in (the client's input) to the
 * transaction, which may finish meanwhile (a summary POST is answered as
 * soon as it is whole). */
enum body_feed request_feed_body(struct txn *t, struct evbuffer *in);

/* The client's output fell below the low mark. */
void request_output_drained(struct txn *t);

/* The client's request body stopped arriving (idle_timeout) or missed its
 * deadline, before the connection is closed: a peer's summary is counted
 * as a slow one (true); false for any other request, the client's to
 * count as an abort. */
bool request_body_stalled(struct txn *t);

/* Writes a short text error response; close forces Connection: close. */
void request_error(struct txn *t, int status, enum squid_code code,
    const char *cause, bool close);
/* The same for any short text answer, text as given, counted as result;
 * finishes t. */
void request_text(struct txn *t, int status, enum squid_code code,
    enum txn_result result, const char *text, bool close);

/* Answers from a stored object (304 when the client's conditionals
 * match); code is the access-log code. Finishes the transaction. */
void request_serve_object(struct txn *t, struct store_obj *o,
    enum squid_code code);

/*
 * Writes the head of o's answer to t (304 when t's conditionals match),
 * x_cache saying what it was, length the body's length (o's body may
 * still be filling); sets t's status and code (result is the caller's).
 * Returns whether the body follows: not for HEAD, 304 or 204.
 */
bool request_object_head(struct txn *t, const struct store_obj *o,
    enum squid_code code, const char *x_cache, int64_t length);

/* Writes t's 416 for a representation of length bytes: none of the
 * object's fields, so that a cache downstream cannot take it for the
 * object. */
void request_unsatisfiable(struct txn *t, uint64_t length,
    const char *x_cache);

/* Whether o is the variant t's request selects (o's Vary). */
bool request_vary_matches(const struct store_obj *o, struct txn *t);

/* A collapsed request let go by the fetch it waited for: the store is
 * looked at again, then the request goes on (to a fetch of its own when
 * nothing is there). */
void request_lookup_again(struct txn *t);

/* The client went away: stop any fetch and forget the transaction. */
void txn_free(struct txn **t);

/* Writes the access log line and the request counters. */
void txn_account(struct txn *t);

/*
 * ICP's question (arg is the server): HIT when url is cached and stays
 * fresh for at least the next ICP_HIT_FRESH seconds (icp.h), as Squid
 * answers; ERR when url is no URL we could cache.
 */
enum icp_op request_icp_lookup(void *arg, const char *url, size_t len);


/* What every client connection asks of this room (client.h). */
extern const struct client_ops request_client_ops;

#endif
