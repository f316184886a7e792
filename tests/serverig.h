/*
 * A node served without a socket, for the unit tests of serve/: the real
 * server (server_init, the real client_ops), with one client connection
 * over a bufferevent pair (client_attach). A test writes a request into
 * its end, runs the loop until the whole answer is back, and can drive
 * the rooms below directly (the store, a busy object) in between.
 */
#ifndef SERVERIG_H
#define SERVERIG_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy.h"

struct srig {
	struct node s;
	struct bufferevent *user;  /* the client's end of the pair */
};

struct srig_answer {
	int status;
	char head[4096];           /* the response head, NUL-ended */
	char body[8192];
	size_t body_len;
};

/* Starts a node on a free port (never used: the client is a pair) with
 * no access log; ovr are more -o values, NULL-ended (may be NULL). */
void srig_start(struct srig *r, const char *const *ovr);
void srig_stop(struct srig *r);

/* Writes text (a request) into the client's end. */
void srig_send(struct srig *r, const char *text);
/* Runs the loop until a whole answer is in (GET: its Content-Length of
 * body; head_only: its head), at most 2 s: true with it in *a. */
bool srig_answer(struct srig *r, struct srig_answer *a, bool head_only);
/* Runs the loop for ms, whatever happens. */
void srig_run(struct srig *r, int ms);

/* A stored object for url (absolute), with head (stored fields, each
 * "Name: value\r\n"), body, received age seconds ago with a lifetime of
 * lifetime seconds. One reference, the caller's. */
struct store_obj *srig_object(const char *url, const char *head,
    const char *body, int64_t age, int64_t lifetime);

/* A busy object for url, as a GET miss's fetch would open it: the one
 * in the table, owned by the caller (busy_close/busy_fail). */
struct busy *srig_busy(struct srig *r, const char *url);

/* The value of field name in a's head (case-insensitive), into v. */
bool srig_field(const struct srig_answer *a, const char *name, char *v,
    size_t vlen);

#endif
