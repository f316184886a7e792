/*
 * Response heads, written one way for every answer a client gets: hits,
 * misses, errors, the node's own pages, a refused CONNECT. The caller
 * writes the status line and the fields it has (stored or forwarded
 * ones, its own Content-Type...); response_end adds what this node adds,
 * always in this order: Age, Via, X-Cache, the framing, Connection, and
 * the blank line.
 */
#ifndef RESPONSE_H
#define RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy.h"

struct evbuffer;

/* Reason phrase for a status code. */
const char *response_reason(int status);

/* "HTTP/1.1 STATUS REASON"; reason NULL: the standard phrase. */
void response_status(struct evbuffer *out, int status, const char *reason,
    size_t reason_len);

/* What response_end writes. */
struct head_tail {
	int64_t age;            /* Age in seconds; < 0: none */
	bool via;               /* Via: 1.1 NODE */
	const char *x_cache;    /* "HIT", "MISS": X-Cache: ... from NODE */
	int64_t length;         /* Content-Length; < 0: none */
	bool chunked;           /* without a length: Transfer-Encoding */
	bool internal;          /* our own page: no Cache-Status */
};

/* The tail of a head for t (NULL: a connection that closes after it, as
 * a tunnel's). */
void response_end(const struct worker *s, struct txn *t,
    struct evbuffer *out, const struct head_tail *tl);

/* t's Connection field, settling t->keep_alive: no reuse with request
 * body left unread, while draining, or on request. */
void response_connection_field(struct txn *t, struct evbuffer *out);

#endif
