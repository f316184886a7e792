/*
 * The response writer: how serve/ answers a request, whatever carries it
 * on the wire. serve/ says what the answer is: an interim 1xx, a head
 * (status, the fields it has, what this node adds, the body's length
 * when known), the body (bytes, a buffer, a stored body by reference or
 * copied) and, when the txn is done (client_txn_done), its end. The
 * writer decides how it goes on the wire: for HTTP/1.1 (h1.c) the status
 * line, Content-Length or chunks, Connection and keep-alive. Each
 * connection has its writer (struct client's wr), so an HTTP/2 writer is
 * another table, not a change to serve/.
 *
 * A head is started with its status (head_start), which gives the buffer
 * its fields go in as a field block, the store's format for them
 * (store_obj_head: a line a field; writer_field adds one), and ended
 * with what this node adds (head). The HTTP/1.1 writer lends the output
 * itself, after the status line, so a head is written in place, as one
 * piece, with no copy. Every byte a writer queues is counted to its txn
 * (bytes_out) and the worker's client_bytes_out.
 */
#ifndef WRITER_H
#define WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy.h"

struct disk_sent;
struct evbuffer;
struct store_body;

/* The end of a response's head, as serve/ has it. */
struct writer_head {
	int64_t age;          /* Age in seconds; < 0: none */
	bool via;             /* Via: 1.1 NODE */
	const char *x_cache;  /* "HIT", "MISS": X-Cache: ... from NODE */
	int64_t length;       /* the body's length, said in the head; < 0:
	                       * not said (unknown, or a 204's) */
	bool body;            /* a body follows (not HEAD, 204, 304) */
	bool internal;        /* our own page: no Cache-Status */
};

struct writer_ops {
	/* An interim 1xx of status: the buffer its fields go in, which
	 * interim_end ends; NULL for a client that cannot take one. */
	struct evbuffer *(*interim)(struct txn *t, int status,
	    const char *reason, size_t reason_len);
	void (*interim_end)(struct txn *t);
	/* A head of status (reason NULL: the standard phrase): the buffer
	 * its fields go in, which head ends. */
	struct evbuffer *(*head_start)(struct txn *t, int status,
	    const char *reason, size_t reason_len);
	/* The head's end: what this node adds, the framing. Settles
	 * t->keep_alive (a body ended by the close). */
	void (*head)(struct txn *t, const struct writer_head *h);
	/* The 200 of a CONNECT this node answers itself (interception). */
	void (*established)(struct txn *t);
	/* Bytes of the body: copied; all of b, moved (b is left empty). */
	void (*data)(struct txn *t, const void *p, size_t n);
	void (*data_buffer)(struct txn *t, struct evbuffer *b);
	/* len bytes of a stored body from offset from: by reference (the
	 * writer takes its own references), or, with copy, copied now
	 * (read from its file when it is kept in one). false when the file
	 * ended first or could not be read: the answer is then short and
	 * the caller fails it. claim (NULL: none) says whom to tell when a
	 * send of the body from its file fails later, on the socket: the
	 * writer keeps the last one it was given and calls its failed. */
	bool (*body)(struct txn *t, struct store_body *b, uint64_t from,
	    uint64_t len, bool copy, const struct disk_sent *claim);
	/* The body is whole (client_txn_done calls it): the last chunk. */
	void (*end)(struct txn *t);
	/* Bytes queued for the client and not yet gone: how far ahead of
	 * it a sender may run. */
	size_t (*queued)(const struct txn *t);
	/* Whether a body kept in a file must be copied for this client. */
	bool (*copies)(const struct txn *t);
};

/* The HTTP/1.1 writer (h1.c). */
extern const struct writer_ops h1_writer;

/* Adds a field to a block: name (nlen bytes) and value (vlen bytes),
 * false when memory ran out; a name and the value fmt makes. */
bool writer_field(struct evbuffer *fb, const char *name, size_t nlen,
    const char *value, size_t vlen);
void writer_fieldf(struct evbuffer *fb, const char *name, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));

static inline struct evbuffer *
writer_interim(struct txn *t, int status, const char *reason,
    size_t reason_len)
{
	return t->c->wr->interim(t, status, reason, reason_len);
}

static inline void
writer_interim_end(struct txn *t)
{
	t->c->wr->interim_end(t);
}

static inline struct evbuffer *
writer_head_start(struct txn *t, int status, const char *reason,
    size_t reason_len)
{
	return t->c->wr->head_start(t, status, reason, reason_len);
}

static inline void
writer_head(struct txn *t, const struct writer_head *h)
{
	t->c->wr->head(t, h);
}

static inline void
writer_established(struct txn *t)
{
	t->c->wr->established(t);
}

static inline void
writer_data(struct txn *t, const void *p, size_t n)
{
	t->c->wr->data(t, p, n);
}

static inline void
writer_data_buffer(struct txn *t, struct evbuffer *b)
{
	t->c->wr->data_buffer(t, b);
}

static inline bool
writer_body(struct txn *t, struct store_body *b, uint64_t from, uint64_t len,
    bool copy, const struct disk_sent *claim)
{
	return t->c->wr->body(t, b, from, len, copy, claim);
}

static inline size_t
writer_queued(const struct txn *t)
{
	return t->c->wr->queued(t);
}

static inline bool
writer_copies(const struct txn *t)
{
	return t->c->wr->copies(t);
}

#endif
