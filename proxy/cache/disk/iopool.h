/*
 * Work the event loops must never wait for (the disk tier's reads, writes
 * and scans), run by a few threads. A job's run() executes on a pool
 * thread and touches only what the job owns; its done() executes
 * afterwards on the loop of the thread that submitted it (its inbox:
 * inbox.h), or on base's loop when that thread runs none, always with
 * the pool's done lock held: what done touches, that lock guards. So a
 * worker's read comes back to the worker that asked. Jobs start in
 * submission order; with more than one thread they may finish in any
 * order.
 */
#ifndef IOPOOL_H
#define IOPOOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct inbox;
struct iopool;
struct iopool_job;

typedef void iopool_run_f(struct iopool_job *j);

struct iopool_job {
	iopool_run_f *run;   /* on a pool thread */
	iopool_run_f *done;  /* then on the submitter's loop; may free the
	                      * job */
	struct iopool *pool;     /* the pool's own, */
	struct inbox *to;        /* set at iopool_submit */
	struct iopool_job *next;
};

/* A pool of threads reporting to the submitters' loops, or to base's;
 * done_lock is held around every done(). NULL on failure (errno set). */
struct iopool *iopool_new(struct event_base *base, unsigned threads,
    pthread_mutex_t *done_lock);
/* From now on every done() runs on base's loop (or in iopool_free): the
 * other loops are stopping. Jobs already handed to their inboxes run
 * when those are discarded (inbox_discard). */
void iopool_home_only(struct iopool *p);
/* Runs what is queued, calls every done() not yet handed to a loop, then
 * stops the threads. */
void iopool_free(struct iopool **p);
void iopool_submit(struct iopool *p, struct iopool_job *j);

#endif
