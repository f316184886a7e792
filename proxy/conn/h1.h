/*
 * The HTTP/1.1 writer (writer.h's h1_writer): a status line, the fields
 * serve/ has, then what this node adds, always in this order: Age, Via,
 * X-Cache, Cache-Status, the framing (Content-Length, or chunks for a
 * body of unknown length to an HTTP/1.1 client, else the close ends it),
 * Connection, and the blank line; the body framed as the head said. Its
 * head parts are also what a tunnel's refusal is written with.
 */
#ifndef H1_H
#define H1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy.h"

struct evbuffer;

/* "HTTP/1.1 STATUS REASON"; reason NULL: the standard phrase. */
void h1_status(struct evbuffer *out, int status, const char *reason,
    size_t reason_len);

/* What h1_tail writes. */
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
void h1_tail(const struct worker *s, struct txn *t, struct evbuffer *out,
    const struct head_tail *tl);

#endif
