/*
 * See inbox.h. A list under a mutex and an eventfd: a post appends and,
 * when the list was empty, wakes the loop with one write; the loop takes
 * the whole list at once and runs it outside the lock, so a post never
 * waits for the work before it. The cost: a malloc and a lock per post,
 * and one eventfd read per batch.
 */
#include "inbox.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "loop.h"
#include "sc_assert.h"

/* the inbox of the loop this thread runs (inbox_bind) */
static _Thread_local struct inbox *here;

struct note {
	struct note *next;
	inbox_f *fn;
	inbox_f *drop;
	void *arg;
};

#define INBOX_MAGIC 0x5b1e0a3du
struct inbox {
	unsigned magic;          /* INBOX_MAGIC (SC_CAST) */
	int fd;                  /* the eventfd */
	struct event *ev;        /* the loop's: reads fd */
	pthread_mutex_t lock;    /* guards head and tail */
	struct note *head, *tail;
};

static void
on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct inbox *in = SC_CAST(struct inbox, arg, INBOX_MAGIC);
	uint64_t n;

	(void)what;
	while (read(fd, &n, sizeof(n)) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&in->lock);
	struct note *list = in->head;
	in->head = in->tail = NULL;
	pthread_mutex_unlock(&in->lock);
	while (list != NULL) {
		struct note *next = list->next;
		list->fn(list->arg);
		free(list);
		list = next;
	}
}

struct inbox *
inbox_new(struct event_base *base)
{
	struct inbox *in = calloc(1, sizeof(*in));

	if (in == NULL)
		return NULL;
	in->magic = INBOX_MAGIC;
	in->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (in->fd >= 0)
		in->ev = event_new(base, in->fd, EV_READ | EV_PERSIST, on_wake,
		    in);
	/* another thread's work is a turn's head: it may be holding up a
	 * client of that thread */
	if (in->ev == NULL || event_priority_set(in->ev,
	    LOOP_PRIO_DEFAULT) < 0 || event_add(in->ev, NULL) < 0) {
		if (in->ev != NULL)
			event_free(in->ev);
		if (in->fd >= 0)
			close(in->fd);
		free(in);
		return NULL;
	}
	pthread_mutex_init(&in->lock, NULL);
	return in;
}

void
inbox_discard(struct inbox *in)
{
	if (in == NULL)
		return;
	pthread_mutex_lock(&in->lock);
	struct note *n = in->head, *next;
	in->head = in->tail = NULL;
	pthread_mutex_unlock(&in->lock);
	for (; n != NULL; n = next) {
		next = n->next;
		if (n->drop != NULL)
			n->drop(n->arg);
		free(n);
	}
}

void
inbox_free(struct inbox **inp)
{
	struct inbox *in = *inp;

	if (in == NULL)
		return;
	*inp = NULL;
	if (here == in)
		here = NULL;
	event_free(in->ev);
	close(in->fd);
	inbox_discard(in);
	pthread_mutex_destroy(&in->lock);
	in->magic = 0;
	free(in);
}

void
inbox_bind(struct inbox *in)
{
	here = in;
}

struct inbox *
inbox_here(void)
{
	return here;
}

int
inbox_post(struct inbox *in, inbox_f *fn, inbox_f *drop, void *arg)
{
	struct note *n = malloc(sizeof(*n));

	if (n == NULL)
		return -1;
	*n = (struct note){.fn = fn, .drop = drop, .arg = arg};
	pthread_mutex_lock(&in->lock);
	bool wake = in->head == NULL;
	if (in->tail != NULL)
		in->tail->next = n;
	else
		in->head = n;
	in->tail = n;
	pthread_mutex_unlock(&in->lock);
	if (wake) {
		uint64_t one = 1;
		while (write(in->fd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	}
	return 0;
}
