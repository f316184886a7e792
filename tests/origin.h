/*
 * test-origin's two halves share this: the server (origin.c: connections,
 * requests, delays and drops, TLS, main) and the answers by path
 * (origin_paths.c). The program's usage is origin.c's opening comment.
 */
#ifndef ORIGIN_H
#define ORIGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_parse.h"

struct bufferevent;
struct evbuffer;
struct event;
struct event_base;

/* A client connection and the request it is on. */
struct conn {
	struct bufferevent *bev;
	struct http_head req;
	bool have_head;
	bool chunked_req;
	uint64_t body_left;
	struct http_chunked ch;
	struct evbuffer *body;
	uint64_t big_left;   /* bytes of /big still to send */
	char big_fill[16];   /* and the pattern they repeat */
	bool big_chunked;    /* in chunks */
	bool close_after;    /* /cut: close once the output is sent */
	bool delayed;        /* ?delay= has passed: answer now */
	struct evbuffer *rest;  /* ?pause=: the body's second half */
	struct event *resume;
	struct event *delay;
	struct event *steady;    /* /steady: the next part */
	uint64_t steady_at, steady_size, steady_part;
	long steady_ms, steady_stall, steady_sent;
	char path[1024];
	char query[1024];
};

/* The origin's state (origin.c): its loop, the request log, counts,
 * and what /__status and /__drop set. */
extern struct event_base *base;
extern struct evbuffer *reqlog;
extern unsigned revalidations;
extern unsigned connections;
extern unsigned open_conns;
extern unsigned generation;
extern long forced_status;     /* /__status */
extern char forced_drop[8];    /* /__drop: "close", "reset" or "" */

/* The query parameter name of c's request as a number (dflt when
 * absent), or as a string into out (NULL when absent). */
long qparam(const struct conn *c, const char *name, long dflt);
const char *qstr(const struct conn *c, const char *name, char *out,
    size_t len);
/* Closes and frees c. */
void conn_free(struct conn *c);
/* n bytes of name repeated, from offset into the pattern. */
void fill(char *buf, size_t n, const char *name, size_t offset);
/* Logs c's request and writes its answer, by path (origin_paths.c). */
void respond(struct conn *c);

#endif
