/*
 * Work the event loop must never wait for (the disk tier's reads, writes
 * and scans), run by a few threads. A job's run() executes on a worker
 * and touches only what the job owns; its done() executes afterwards on
 * the loop, which owns everything else. Jobs start in submission order;
 * with more than one thread they may finish in any order.
 */
#ifndef IOPOOL_H
#define IOPOOL_H

#include <stdint.h>

struct event_base;
struct iopool_job;

typedef void iopool_run_f(struct iopool_job *j);

struct iopool_job {
	iopool_run_f *run;   /* on a worker thread */
	iopool_run_f *done;  /* then on the loop; may free the job */
	struct iopool_job *next; /* the pool's own */
};

struct iopool;

/* A pool of threads reporting to base; NULL on failure (errno set). */
struct iopool *iopool_new(struct event_base *base, unsigned threads);
/* Runs what is queued, calls every done(), then stops the threads. */
void iopool_free(struct iopool **p);
void iopool_submit(struct iopool *p, struct iopool_job *j);

#endif
