/* Byte ranges (RFC 9110 14): a request's Range read against a stored or
 * arriving 200, and the 206 body it asks for; see range.c. */
#ifndef RANGE_H
#define RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "http_parse.h"

struct evbuffer;
struct metrics;
struct store_body;
struct disk_sent;
struct txn;
struct txn_part;

/* Ranges a 206 holds at most, once merged; more and the Range is
 * ignored (the whole 200 is sent). */
#define RANGE_MAX 32

enum range_verdict {
	RANGE_WHOLE,          /* no Range, one we ignore, or If-Range false:
	                       * the 200 */
	RANGE_PARTIAL,        /* a 206: the plan says what it holds */
	RANGE_UNSATISFIABLE,  /* a 416 */
};

struct range_span {
	uint64_t from, len;
};

/* A 206's body: its spans ascending and apart; with more than one, the
 * multipart/byteranges frame around them. */
struct range_plan {
	uint64_t length;       /* the whole representation's */
	uint64_t total;        /* the 206 body's */
	unsigned n;
	struct range_span span[RANGE_MAX];
	char boundary[32];     /* multipart only (n > 1) */
	char *frame;           /* multipart: each part's head, then the
	                        * closing delimiter, one after another */
	uint32_t frame_at[RANGE_MAX + 2]; /* where each starts in frame;
	                        * [n + 1] is frame's length */
};

/* What lies at an offset of the 206 body: len bytes of text, or (text
 * NULL) len body bytes from body offset from. */
struct range_piece {
	const char *text;
	uint64_t from, len;
};

/* Whether req is a GET asking for byte ranges this proxy understands
 * (the Range parses). */
bool range_asked(const struct http_head *req);

/*
 * Reads req's Range (GET only) against a 200 of length bytes whose
 * validators are etag (NULL: none) and last_modified (< 0: none), for
 * If-Range, and whose Content-Type is ctype (NULL: none), for a multipart
 * answer's parts. RANGE_PARTIAL sets *plan (freed by range_plan_free);
 * NULL on ENOMEM, when the whole is answered instead.
 */
enum range_verdict range_plan(const struct http_head *req, uint64_t length,
    const char *etag, size_t elen, time_t last_modified, const char *ctype,
    size_t ctl, struct range_plan **plan);
/* Counts the answer given (a 206 or a 416) in m; returns v. */
enum range_verdict range_count(struct metrics *m, enum range_verdict v);
/* Accepts NULL; clears *p. */
void range_plan_free(struct range_plan **p);
/* A txn's range plan as a part of it (txn.h): held by whoever sets
 * t->range. */
extern const struct txn_part range_part;

/* The 206's fields that say what it holds: Content-Range, or the
 * multipart Content-Type. */
void range_fields(const struct range_plan *p, struct evbuffer *out);
/* A 416's Content-Range, for a representation of length bytes. */
void range_unsatisfiable_field(uint64_t length, struct evbuffer *out);

/* The piece of p's body at offset at (< p->total), *into bytes in. */
void range_piece_at(const struct range_plan *p, uint64_t at,
    struct range_piece *pc, uint64_t *into);

/*
 * Adds p's body from *at on to out, copied, while the body bytes it needs
 * are among src's len bytes (body offsets src_off on) and at most max
 * bytes; moves *at on. Returns the bytes added. Streams (a fetch's chunks,
 * a copy still growing) call it as the bytes arrive, in order.
 */
uint64_t range_copy(const struct range_plan *p, uint64_t *at,
    const char *src, uint64_t src_off, uint64_t len, uint64_t max,
    struct evbuffer *out);

/* Writes t's 206 body (t->range) from at to its end, its bytes by
 * reference to the complete body b, or copied from it when it is kept on
 * disk; claim (NULL: none) goes with them (writer.h's body). Returns the
 * bytes written: fewer than the rest when the disk's file no longer holds
 * them (the answer must then be cut). */
uint64_t range_send(struct txn *t, uint64_t at, struct store_body *b,
    const struct disk_sent *claim);

#endif
