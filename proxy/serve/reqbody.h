/*
 * A request's body, read from the client while it is answered: decoded
 * (Content-Length or chunked) into a buffer the origin fetch drains, or,
 * for a peer's POSTed message, into one flat block read whole. The txn
 * holds it behind t->body, NULL for a request without one.
 */
#ifndef REQBODY_H
#define REQBODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct http_head;
struct reqbody;

/* The body h announces, or NULL (and 0) when it announces none; -1 on
 * ENOMEM. */
int reqbody_new(const struct http_head *h, struct reqbody **out);
void reqbody_free(struct reqbody **b);

/* Reads the body into one block of its Content-Length (a peer's
 * message), not the buffer; before a byte is fed. -1 on ENOMEM. */
int reqbody_into_block(struct reqbody *b);

enum reqbody_feed {
	REQBODY_MORE,      /* took what in had; more is to come */
	REQBODY_DONE,      /* all of it is in */
	REQBODY_BAD,       /* a chunked framing error; *why says which */
};

/* Takes what in holds of the body, no further. */
enum reqbody_feed reqbody_feed(struct reqbody *b, struct evbuffer *in,
    const char **why);

/* Bytes decoded and not yet drained by reqbody_read. */
size_t reqbody_waiting(const struct reqbody *b);

/* Moves up to n bytes of the buffer into dst: how many (0 when none
 * waits: see reqbody_done). */
size_t reqbody_read(struct reqbody *b, void *dst, size_t n);

bool reqbody_done(const struct reqbody *b);

/* The block of reqbody_into_block, whole once reqbody_done; its length
 * is the head's Content-Length. Hands it over (free it): the memory of a
 * large summary goes back when it has been applied. */
uint8_t *reqbody_take_block(struct reqbody *b);

#endif
