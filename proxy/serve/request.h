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

/*
 * ICP's question (arg is the server): HIT when url is cached and stays
 * fresh for at least the next ICP_HIT_FRESH seconds (icp.h), as Squid
 * answers; ERR when url is no URL we could cache.
 */
enum icp_op request_icp_lookup(void *arg, const char *url, size_t len);


/* What every client connection asks of this room (client.h). */
extern const struct client_ops request_client_ops;

#endif
