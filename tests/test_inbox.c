/*
 * The inbox (peers/base/inbox.c): work posted by other threads runs on
 * the loop, every note once, each thread's in the order posted, with the
 * loop woken from idle; what is still posted at the free is dropped
 * (ASan's leak check sees it freed).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include <event2/event.h>

#include "inbox.h"

#define POSTERS 4
#define NOTES 20000

struct rig {
	struct event_base *base;
	struct inbox *in;
	unsigned next[POSTERS]; /* the loop's: the seq each poster is at */
	unsigned ran, out_of_order;
	pthread_t loop_thread;
	bool wrong_thread;
};

struct note_arg {
	struct rig *r;
	unsigned poster, seq;
};

static void
ran(void *arg)
{
	struct note_arg *a = arg;
	struct rig *r = a->r;

	r->wrong_thread |= !pthread_equal(pthread_self(), r->loop_thread);
	if (a->seq != r->next[a->poster])
		r->out_of_order++;
	r->next[a->poster] = a->seq + 1;
	if (++r->ran == POSTERS * NOTES)
		event_base_loopbreak(r->base);
	free(a);
}

struct poster {
	struct rig *r;
	unsigned id;
};

static void *
post_all(void *arg)
{
	struct poster *p = arg;

	for (unsigned i = 0; i < NOTES; i++) {
		struct note_arg *a = malloc(sizeof(*a));
		*a = (struct note_arg){p->r, p->id, i};
		cr_assert_eq(inbox_post(p->r->in, ran, free, a), 0);
	}
	return NULL;
}

Test(inbox, notes_from_four_threads_run_on_the_loop_in_order)
{
	struct rig r = {.base = event_base_new()};
	struct poster p[POSTERS];
	pthread_t th[POSTERS];

	cr_assert_not_null(r.base);
	cr_assert_eq(event_base_priority_init(r.base, 3), 0);
	r.in = inbox_new(r.base);
	cr_assert_not_null(r.in);
	r.loop_thread = pthread_self();
	for (unsigned i = 0; i < POSTERS; i++) {
		p[i] = (struct poster){&r, i};
		cr_assert_eq(pthread_create(&th[i], NULL, post_all, &p[i]), 0);
	}
	/* a safety net: the loop must be broken by the last note */
	struct timeval limit = {10, 0};
	event_base_loopexit(r.base, &limit);
	event_base_dispatch(r.base);
	for (unsigned i = 0; i < POSTERS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(r.ran, POSTERS * NOTES, "%u of %u notes ran", r.ran,
	    POSTERS * NOTES);
	cr_assert_eq(r.out_of_order, 0);
	cr_assert(!r.wrong_thread, "a note ran off the loop's thread");
	inbox_free(&r.in);
	cr_assert_null(r.in);
	event_base_free(r.base);
}

static void
never(void *arg)
{
	cr_assert_fail("a note ran after its inbox was freed (%p)", arg);
}

static void
dropped(void *arg)
{
	(*(int *)arg)++;
}

Test(inbox, what_is_posted_at_the_free_is_dropped)
{
	struct event_base *base = event_base_new();
	cr_assert_eq(event_base_priority_init(base, 3), 0);
	struct inbox *in = inbox_new(base);

	int drops = 0;

	for (int i = 0; i < 3; i++)
		cr_assert_eq(inbox_post(in, never, dropped, &drops), 0);
	cr_assert_eq(inbox_post(in, never, NULL, NULL), 0);
	inbox_free(&in);
	cr_assert_eq(drops, 3, "each note's drop runs once, at the free");
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_base_free(base);
}

static void
counted(void *arg)
{
	(*(int *)arg) += 100;
}

/* A stop drops what is pending before what the notes hold goes; what is
 * posted after still runs on the loop. */
Test(inbox, a_discard_drops_what_is_pending_and_later_notes_run)
{
	struct event_base *base = event_base_new();
	cr_assert_eq(event_base_priority_init(base, 3), 0);
	struct inbox *in = inbox_new(base);
	int drops = 0, runs = 0;

	for (int i = 0; i < 3; i++)
		cr_assert_eq(inbox_post(in, never, dropped, &drops), 0);
	inbox_discard(in);
	cr_assert_eq(drops, 3, "each pending note's drop runs at the discard");
	cr_assert_eq(inbox_post(in, counted, dropped, &runs), 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cr_assert_eq(runs, 100, "a note posted after the discard runs");
	inbox_discard(NULL);
	inbox_free(&in);
	cr_assert_eq(drops, 3, "nothing is dropped twice");
	event_base_free(base);
}
