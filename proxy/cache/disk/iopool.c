/*
 * See iopool.h. One mutex guards both queues and home_only: jobs are disk
 * operations of tens of microseconds and more, so the lock is never the
 * cost. A finished job goes to its submitter's inbox; one with none (or
 * every job, once home_only) to the finished queue, and the pool's
 * threads wake base's loop through an eventfd, which takes every
 * finished job in one turn.
 */
#include "iopool.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "inbox.h"
#include "sc_assert.h"

#define IOPOOL_MAX_THREADS 16

struct queue {
	struct iopool_job *head, *tail;
};

#define IOPOOL_MAGIC 0x84060c46u
struct iopool {
	unsigned magic;         /* IOPOOL_MAGIC (SC_CAST) */
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct queue todo, finished;
	bool stopping;
	bool home_only;          /* finished jobs go to finished alone */
	pthread_mutex_t *done_lock;
	unsigned nthreads;
	pthread_t threads[IOPOOL_MAX_THREADS];
	int efd;
	struct event *ev;
};

static void
push(struct queue *q, struct iopool_job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
}

static struct iopool_job *
take_all(struct queue *q)
{
	struct iopool_job *j = q->head;

	q->head = q->tail = NULL;
	return j;
}

/* A job's done(), on whichever loop runs it, under the done lock. */
static void
run_one(struct iopool_job *j)
{
	pthread_mutex_t *lock = j->pool->done_lock;

	pthread_mutex_lock(lock);
	j->done(j);
	pthread_mutex_unlock(lock);
}

static void
run_note(void *arg)
{
	run_one(arg);
}

/* j's run is over: to its submitter's loop, or to base's. Called with
 * p->lock held, kept over the post so that once iopool_home_only
 * returns no job is on its way to another loop. */
static void
finish(struct iopool *p, struct iopool_job *j)
{
	/* a discarded note (a node stopping) still runs its done */
	if (j->to != NULL && !p->home_only &&
	    inbox_post(j->to, run_note, run_note, j) == 0)
		return;
	bool wake = p->finished.head == NULL;
	push(&p->finished, j);
	if (wake) {
		uint64_t one = 1;
		ssize_t n = write(p->efd, &one, sizeof(one));
		(void)n; /* a full counter still wakes the loop */
	}
}

static void *
worker(void *arg)
{
	struct iopool *p = SC_CAST(struct iopool, arg, IOPOOL_MAGIC);

	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (p->todo.head == NULL && !p->stopping)
			pthread_cond_wait(&p->work, &p->lock);
		struct iopool_job *j = p->todo.head;
		if (j == NULL)
			break; /* stopping, and nothing left */
		p->todo.head = j->next;
		if (p->todo.head == NULL)
			p->todo.tail = NULL;
		pthread_mutex_unlock(&p->lock);
		j->run(j);
		pthread_mutex_lock(&p->lock);
		finish(p, j);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void
run_done(struct iopool *p)
{
	pthread_mutex_lock(&p->lock);
	struct iopool_job *j = take_all(&p->finished);
	pthread_mutex_unlock(&p->lock);
	while (j != NULL) {
		struct iopool_job *next = j->next;
		run_one(j);
		j = next;
	}
}

static void
on_finished(evutil_socket_t fd, short what, void *arg)
{
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	run_done(arg);
}

struct iopool *
iopool_new(struct event_base *base, unsigned threads,
    pthread_mutex_t *done_lock)
{
	struct iopool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->magic = IOPOOL_MAGIC;
	p->done_lock = done_lock;
	if (threads == 0)
		threads = 1;
	if (threads > IOPOOL_MAX_THREADS)
		threads = IOPOOL_MAX_THREADS;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd >= 0)
		p->ev = event_new(base, p->efd, EV_READ | EV_PERSIST,
		    on_finished, p);
	if (p->ev == NULL || event_add(p->ev, NULL) < 0) {
		iopool_free(&p);
		return NULL;
	}
	for (; p->nthreads < threads; p->nthreads++)
		if (pthread_create(&p->threads[p->nthreads], NULL, worker,
		    p) != 0) {
			iopool_free(&p);
			return NULL;
		}
	return p;
}

void
iopool_free(struct iopool **pp)
{
	struct iopool *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	p->home_only = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	/* with no thread, what was never run runs here, and is done here */
	for (struct iopool_job *j = take_all(&p->todo); j != NULL;) {
		struct iopool_job *next = j->next;
		j->run(j);
		push(&p->finished, j);
		j = next;
	}
	run_done(p);
	if (p->ev)
		event_free(p->ev);
	if (p->efd >= 0)
		close(p->efd);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	p->magic = 0;
	free(p);
}

void
iopool_home_only(struct iopool *p)
{
	pthread_mutex_lock(&p->lock);
	p->home_only = true;
	pthread_mutex_unlock(&p->lock);
}

void
iopool_submit(struct iopool *p, struct iopool_job *j)
{
	SC_ASSERT(j->run != NULL && j->done != NULL);
	j->pool = p;
	j->to = inbox_here();
	pthread_mutex_lock(&p->lock);
	push(&p->todo, j);
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}
