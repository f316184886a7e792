/*
 * The memory budget beyond the cache.
 *
 * cache_mem bounds what the store holds (store.c charges every object, and
 * every evicted body a client is still being sent). This module bounds the
 * rest that grows with traffic rather than with connections:
 *
 *   - In-flight copies. A miss that will be stored is copied as it streams
 *     to the client; a thousand slow misses of 1 MB each would hold 1 GB
 *     that no budget saw. Each fetch reserves what its copy may grow to
 *     (budget_take) before it grows; when inflight_mem is taken, new
 *     fetches stream to their clients uncached, and the refusal is counted.
 *     A reservation is given back when its fetch ends, stored or not.
 *
 *   - The allocator's high-water mark. glibc keeps freed heap memory for
 *     reuse, so a burst of connections or large buffers (summary bodies,
 *     copies) would leave RSS at the burst's peak for ever. Blocks of
 *     BUDGET_MMAP_MIN and more are mapped on their own (a fixed threshold:
 *     glibc's default one rises with use, after which large blocks stay
 *     on the heap), and malloc_trim returns the heap's free pages. A trim
 *     walks the heap, so it is kept for the end of a burst: when the open
 *     connections fall to half their peak (budget_conns), or after
 *     TRIM_AFTER of single large frees (budget_freed); never more than
 *     once per TRIM_EVERY_MS, with one more look a second later for what
 *     the burst's tail freed meanwhile. And every TRIM_EVERY_MS the heap's
 *     free bytes are looked at (mallinfo2, a walk of its free chunks, no
 *     system call): grown by TRIM_AFTER since the last trim, they are
 *     returned. That is memory the cache let go of without a burst: small
 *     bodies on the heap evicted for large ones in memfds, or a cache
 *     emptied by invalidations. Steady traffic, whose frees the next
 *     allocations reuse, never trims.
 *
 * Per-connection buffers are bounded where they live (client.c, fetch.c,
 * tunnel.c) and by max_connections; proxy/README.md's reliability section adds
 * the parts up.
 *
 * Threads: one budget for the node, called by every worker on its misses
 * and its connections' opening and closing (never on a hit), and by the
 * home loop's timers: one lock guards every field. The timers are the
 * home loop's alone (the loops take no lock of libevent's): a worker that
 * finds a trim due hands it to home's inbox.
 */
#include "budget.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include <event2/event.h>

#include "inbox.h"
#include "ratelog.h"
#include "sc_assert.h"

#define TRIM_AFTER (16u * 1024 * 1024)
/* a trim walks the heap (35 ms for 200,000 free chunks, measured): at most
 * one per TRIM_EVERY_MS, and none while traffic is steady */
#define TRIM_EVERY_MS 5000
#define FOLLOW_UP_MS 1000
/* a burst is over when connections fell to half their peak, by this many */
#define BURST_MIN 64

#define BUDGET_MAGIC 0xdc1afab8u
struct budget {
	unsigned magic;         /* BUDGET_MAGIC (SC_CAST) */
	pthread_mutex_t lock;   /* every field below */
	struct budget_stats stats;
	struct event *trim_ev;  /* home's, as look_ev */
	struct event *look_ev;  /* the heap's free bytes, looked at */
	struct inbox *home;     /* the loop of the timers, or NULL */
	size_t free_after_trim; /* mallinfo2's fordblks then, or lower since */
	size_t freed;          /* large frees since the last trim */
	uint64_t last_trim_ms;
	uint64_t conns_peak;   /* open connections, highest since a trim */
	bool follow_up;        /* the next trim is a burst's second look */
};

static void
on_trim(evutil_socket_t fd, short what, void *arg)
{
	struct budget *b = SC_CAST(struct budget, arg, BUDGET_MAGIC);
	struct timeval again = tv_ms(FOLLOW_UP_MS);

	(void)fd;
	(void)what;
	malloc_trim(0);
	size_t free_now = mallinfo2().fordblks;
	pthread_mutex_lock(&b->lock);
	b->stats.trims++;
	b->freed = 0;
	b->last_trim_ms = mono_ms();
	b->free_after_trim = free_now;
	/* a burst's tail is freed after its first trim: look once more */
	b->follow_up = !b->follow_up;
	if (b->follow_up)
		evtimer_add(b->trim_ev, &again);
	pthread_mutex_unlock(&b->lock);
}

static void schedule_trim(struct budget *b);

/* On home's loop: a trim a worker found due. */
static void
trim_asked(void *arg)
{
	struct budget *b = SC_CAST(struct budget, arg, BUDGET_MAGIC);

	pthread_mutex_lock(&b->lock);
	schedule_trim(b);
	pthread_mutex_unlock(&b->lock);
}

/* Under the lock: a trim is due. The timer is home's: another thread
 * asks home for it. */
static void
trim_due(struct budget *b)
{
	if (b->home != NULL && inbox_here() != b->home)
		inbox_post(b->home, trim_asked, NULL, b);
	else
		schedule_trim(b);
}

/* A trim at the end of this loop turn, or once TRIM_EVERY_MS has passed
 * since the last. */
static void
schedule_trim(struct budget *b)
{
	if (evtimer_pending(b->trim_ev, NULL))
		return;
	uint64_t since = mono_ms() - b->last_trim_ms;
	uint64_t wait = since >= TRIM_EVERY_MS ? 0 : TRIM_EVERY_MS - since;
	struct timeval tv = tv_ms(wait);

	b->follow_up = false;
	evtimer_add(b->trim_ev, &tv);
}

/* Free heap bytes grown by TRIM_AFTER since the last trim: returned. */
static void
on_look(evutil_socket_t fd, short what, void *arg)
{
	struct budget *b = SC_CAST(struct budget, arg, BUDGET_MAGIC);
	size_t free_now = mallinfo2().fordblks;

	(void)fd;
	(void)what;
	pthread_mutex_lock(&b->lock);
	if (free_now < b->free_after_trim)
		b->free_after_trim = free_now; /* reused since */
	else if (free_now - b->free_after_trim >= TRIM_AFTER)
		schedule_trim(b);
	pthread_mutex_unlock(&b->lock);
}

struct budget *
budget_new(struct event_base *base, struct inbox *home,
    size_t inflight_max)
{
	struct budget *b = calloc(1, sizeof(*b));
	struct timeval every = tv_ms(TRIM_EVERY_MS);

	if (b == NULL)
		return NULL;
	b->magic = BUDGET_MAGIC;
	b->home = home;
	pthread_mutex_init(&b->lock, NULL);
	b->stats.inflight_max = inflight_max;
	b->trim_ev = evtimer_new(base, on_trim, b);
	b->look_ev = event_new(base, -1, EV_PERSIST, on_look, b);
	if (b->trim_ev == NULL || b->look_ev == NULL) {
		budget_free(&b);
		return NULL;
	}
	evtimer_add(b->look_ev, &every);
	b->free_after_trim = mallinfo2().fordblks;
	return b;
}

void
budget_free(struct budget **bp)
{
	struct budget *b = *bp;

	if (b == NULL)
		return;
	*bp = NULL;
	if (b->trim_ev != NULL)
		event_free(b->trim_ev);
	if (b->look_ev != NULL)
		event_free(b->look_ev);
	pthread_mutex_destroy(&b->lock);
	b->magic = 0;
	free(b);
}

bool
budget_take(struct budget *b, size_t n)
{
	bool ok = true;

	pthread_mutex_lock(&b->lock);
	if (n > b->stats.inflight_max - b->stats.inflight) {
		b->stats.inflight_refused++;
		ok = false;
	} else {
		b->stats.inflight += n;
	}
	pthread_mutex_unlock(&b->lock);
	return ok;
}

void
budget_give(struct budget *b, size_t n)
{
	pthread_mutex_lock(&b->lock);
	SC_ASSERT(b->stats.inflight >= n);
	b->stats.inflight -= n;
	pthread_mutex_unlock(&b->lock);
}

void
budget_freed(struct budget *b, size_t n)
{
	pthread_mutex_lock(&b->lock);
	b->freed += n;
	if (b->freed >= TRIM_AFTER)
		trim_due(b);
	pthread_mutex_unlock(&b->lock);
}

void
budget_conns(struct budget *b, uint64_t open)
{
	pthread_mutex_lock(&b->lock);
	if (open > b->conns_peak) {
		b->conns_peak = open;
	} else if (open * 2 <= b->conns_peak &&
	    b->conns_peak - open >= BURST_MIN) {
		/* what the burst's connections held is free now */
		b->conns_peak = open;
		trim_due(b);
	}
	pthread_mutex_unlock(&b->lock);
}

struct budget_stats
budget_stats(struct budget *b)
{
	pthread_mutex_lock(&b->lock);
	struct budget_stats st = b->stats;
	pthread_mutex_unlock(&b->lock);
	return st;
}

void
budget_tune_allocator(void)
{
	mallopt(M_MMAP_THRESHOLD, BUDGET_MMAP_MIN);
}
