/*
 * Admission of client connections: max_connections, and what happens when
 * descriptors run out. See accept.c.
 */
#ifndef ACCEPT_H
#define ACCEPT_H

#include <stdbool.h>
#include <stdint.h>

struct node;
struct worker;

/*
 * The descriptor plan for this process's limit (RLIMIT_NOFILE, raised to
 * the hard limit first): how many connections may be open at once (the
 * max_connections directive, or derived when it is 0) and below which
 * descriptor number a cached body may hold a memfd, for a node of
 * workers workers. 0, or -1 with the
 * reason on stderr when the limit cannot hold the configured connections.
 */
int accept_plan(struct node *n, unsigned workers);

/* One connection's slot of max_connections, taken before it is accepted
 * (false at the limit): the connection gives it back when it closes. The
 * listeners take theirs so; the unit tests' rig, for a connection it
 * attaches. */
bool accept_slot_take(struct node *n);

/* Listens on http_listen. 0, or -1 with the reason on stderr. */
int accept_start(struct worker *s);

/* A client connection or tunnel closed: a paused listener resumes, and
 * a drain ends with the last of them. */
void accept_conn_closed(struct worker *s);

/* Stops accepting for good (drain). */
void accept_stop(struct worker *s);

void accept_free(struct worker *s);

#endif
