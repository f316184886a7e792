/*
 * A loop's inbox: work another thread hands to an event loop, to be run
 * there. The one way work crosses between a node's threads (a worker's
 * disk read done by the I/O threads, a cluster answer for a worker's
 * request, the node stopping every worker for a reload): whoever owns a
 * loop owns its objects, and a thread that holds something of another
 * loop's posts it here instead of touching it.
 */
#ifndef INBOX_H
#define INBOX_H

struct event_base;
struct inbox;

typedef void inbox_f(void *arg);

/* An inbox on base (an eventfd read by base's loop). NULL on failure. */
struct inbox *inbox_new(struct event_base *base);
/* Runs nothing more; what was posted and not run is dropped (its drop
 * runs). Accepts NULL; clears *in. On base's thread, with base not yet
 * freed. */
void inbox_free(struct inbox **in);
/* What was posted and not run is dropped now (its drop runs); what is
 * posted later is run or dropped as usual. For a stop whose notes hold
 * what must go before the loop does. Accepts NULL. */
void inbox_discard(struct inbox *in);

/*
 * fn(arg) runs on the inbox's loop, after what was posted before it (in
 * order, from any one thread). Any thread may post, the loop's own too.
 * drop(arg), if drop is not NULL, runs instead when the inbox is freed
 * first (a node stopping). -1 (ENOMEM), running nothing, when the note
 * could not be made.
 */
int inbox_post(struct inbox *in, inbox_f *fn, inbox_f *drop, void *arg);

/* The calling thread runs in's loop from now on: inbox_here() names it.
 * Once, on the thread, before its loop runs. */
void inbox_bind(struct inbox *in);
/* The inbox of the loop the calling thread runs, or NULL (a thread that
 * runs none: the I/O pool's). A callback that must come back to whoever
 * asked posts to the inbox that was here when they asked. */
struct inbox *inbox_here(void);

#endif
