/*
 * Admission of client connections.
 *
 * Every connection costs descriptors (its socket, and an origin or peer
 * socket or a tunnel's target while it is served) and memory (client.c
 * bounds each one's buffers). max_connections bounds their number, so
 * that both totals hold. At the limit a connection that holds its slot for
 * nothing is closed to make room (client_make_room: an idle keep-alive
 * one, else one that has not sent its request within a grace period), so
 * idle or slowloris connections cannot lock clients out, and new clients
 * are not closed before their request is read; when none may go, the
 * listener is disabled and connections wait in the kernel's backlog until
 * a close, or until one may go (a grace period ends, or a keep-alive
 * connection goes idle: looked at every CLIENT_HEAD_GRACE_MS).
 *
 * When accept() fails for want of descriptors or memory anyway (other
 * descriptors are open, or a smaller limit elsewhere), an idle connection
 * is closed the same way, or else the listener pauses until a close or
 * for RETRY_MS, instead of being woken for the same failing accept in a
 * loop. Each pause, or each episode of closing idle connections, is one
 * log line, however many accepts it concerns; every failed accept is
 * counted.
 *
 * The descriptor plan (accept_plan): of RLIMIT_NOFILE, FIXED_FDS for the
 * process's own (listener, log, resolver, ICP, curl, signals), an eighth
 * (8 to CURLEV_POOL_MAX) for the origin connections curl keeps for reuse,
 * two per peer (a push and a pull), then two per connection. Cached
 * bodies of BODYFD_MIN and more hold a memfd each, but only below the
 * descriptor numbers the rest may need (bodyfd.c): a full cache never
 * starves accept().
 */
#include "accept.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "client.h"
#include "curlev.h"
#include "inbox.h"
#include "proxy.h"
#include "sc_assert.h"

#define FIXED_FDS 32
/* each worker's own past the first (FIXED_FDS has the first's): its
 * loop's epoll and wake-up descriptors, its inbox, its listener, its
 * resolver's socket, its libcurl multi's */
#define WORKER_FDS 8
#define RETRY_MS 1000
/* descriptor shortage met again within this is the same episode: one log
 * line for it */
#define EPISODE_MS 10000
/* of what is left after the reserve, the share connections may take by
 * default; the rest can hold memfd bodies */
#define CONN_SHARE_NUM 3
#define CONN_SHARE_DEN 4

/* The node's: max_connections bounds every worker's together. */
static unsigned
open_conns(const struct worker *s)
{
	return atomic_load_explicit(&s->node->open_conns,
	    memory_order_relaxed);
}

static void resume_listener(struct worker *s);

/* On the loop of a worker that asked for room: one was made for it. */
static void
room_made(void *arg)
{
	resume_listener(SC_CAST(struct worker, arg, WORKER_MAGIC));
}

/* A worker asks another (to) for room: to closes its oldest idle
 * connection and tells the asker, which accepts again at once; or, the
 * first asked having none, asks every other worker. */
struct room_ask {
	struct worker *to, *asker;
	bool first;
};

static void ask(struct worker *to, struct worker *asker, bool first);

/* Every worker but from is asked for room for asker. */
static void
ask_others(struct worker *from, struct worker *asker)
{
	struct node *n = from->node;

	for (unsigned i = 0; i < n->nworkers; i++)
		if (n->workers[i] != from)
			ask(n->workers[i], asker, false);
}

static void
room_asked(void *arg)
{
	struct room_ask *a = arg;
	uint64_t retry_ms;

	if (client_make_room(a->to, &retry_ms)) {
		if (a->asker != a->to)
			inbox_post(a->asker->inbox, room_made, NULL, a->asker);
	} else if (a->first) {
		ask_others(a->to, a->asker);
	}
	free(a);
}

static void
ask(struct worker *to, struct worker *asker, bool first)
{
	struct room_ask *a = malloc(sizeof(*a));

	if (a == NULL)
		return; /* the asker's retry looks again */
	*a = (struct room_ask){to, asker, first};
	if (inbox_post(to->inbox, room_asked, free, a) < 0)
		free(a);
}

/* The worker whose oldest connection is the node's oldest. */
static struct worker *
oldest_worker(const struct node *n)
{
	struct worker *o = n->workers[0];

	for (unsigned i = 1; i < n->nworkers; i++)
		if (atomic_load_explicit(&n->workers[i]->oldest_us,
		    memory_order_relaxed) < atomic_load_explicit(&o->oldest_us,
		    memory_order_relaxed))
			o = n->workers[i];
	return o;
}

/*
 * At the node's limit a newcomer needs a connection closed, the node's
 * oldest idle one. Each worker's clients are its own, oldest last, and
 * each worker says when its oldest came (oldest_us): the worker with
 * the oldest closes its oldest idle one (one that has none asks every
 * other) and tells the asker, which accepts again at once. Here (true)
 * when it is this worker's to do, else it is asked for and the
 * newcomer's listener waits for the news, or looks again when the
 * node's oldest connection may go (*retry_ms). The cost: a
 * worker whose oldest connection is busy but has a younger idle one
 * closes that one, not another worker's older idle one; and a worker
 * with nothing idle costs one idle connection of each other.
 */
static bool
make_room(struct worker *s, uint64_t *retry_ms)
{
	struct node *n = s->node;
	struct worker *o = oldest_worker(n);

	if (o == s && client_make_room(s, retry_ms))
		return true;
	if (n->nworkers == 1)
		return false;
	if (o == s) {
		ask_others(s, s);
		return false;  /* *retry_ms: when its own may go */
	}
	ask(o, s, true);
	/* an idle one goes at once (the news resumes the listener); a new
	 * one that has sent nothing, when its grace ends: look again then */
	uint64_t since_ms = (mono_us() - atomic_load_explicit(&o->oldest_us,
	    memory_order_relaxed)) / 1000;
	*retry_ms = since_ms < CLIENT_HEAD_GRACE_MS ? CLIENT_HEAD_GRACE_MS -
	    since_ms : 1;
	return false;
}

static void
pause_listener(struct worker *s, const char *why, uint64_t retry_ms)
{
	struct timeval tv = tv_ms(retry_ms);

	if (s->accept_paused_ms == 0) {
		uint64_t now = mono_ms();
		s->accept_paused_ms = now;
		/* a burst at the limit pauses and resumes often: one line for
		 * all of it */
		if (now - s->accept_pause_logged_ms > EPISODE_MS) {
			s->accept_pause_logged_ms = now;
			fprintf(stderr, "sumcache: %s: new connections wait "
			    "until one closes or idles (%u open)\n", why,
			    open_conns(s));
		}
	}
	evconnlistener_disable(s->listener);
	evtimer_add(s->accept_retry, &tv);
}

static void
resume_listener(struct worker *s)
{
	if (s->accept_paused_ms == 0 || s->node->draining)
		return;
	if (open_conns(s) >= s->node->max_connections)
		return;
	uint64_t paused = mono_ms() - s->accept_paused_ms;
	if (paused >= RETRY_MS)
		fprintf(stderr, "sumcache: accepting again after %llu ms\n",
		    (unsigned long long)paused);
	s->accept_paused_ms = 0;
	evtimer_del(s->accept_retry);
	evconnlistener_enable(s->listener);
}

static void
on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);

	(void)l;
	(void)salen;
	client_accept(s, fd, sa);
	/* the next accept needs a free slot: an idle connection gives up
	 * its own, else accepting waits for a close, or for one to idle */
	uint64_t retry_ms;
	if (open_conns(s) >= s->node->max_connections &&
	    !make_room(s, &retry_ms)) {
		METRIC_INC(s->m.connection_limit_reached);
		pause_listener(s, "max_connections reached, none idle",
		    retry_ms);
	}
}

static void
on_accept_error(struct evconnlistener *l, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);
	int err = EVUTIL_SOCKET_ERROR();

	(void)l;
	METRIC_INC(s->m.accept_errors);
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return; /* it died in the backlog: the next one is fine */
	/* an idle connection's descriptor lets the waiting one in (the
	 * listening socket stays readable, so accept runs again) */
	uint64_t retry_ms;
	bool here = make_room(s, &retry_ms);
	if (here || s->node->nworkers > 1) {
		/* closed here, or asked of the other workers */
		uint64_t now = mono_ms();
		if (now - s->accept_short_ms > EPISODE_MS)
			fprintf(stderr, "sumcache: accept: %s: closing idle "
			    "connections to make room (%u open)\n",
			    evutil_socket_error_to_string(err), open_conns(s));
		s->accept_short_ms = now;
	}
	if (!here)
		pause_listener(s, evutil_socket_error_to_string(err),
		    retry_ms < RETRY_MS ? retry_ms : RETRY_MS);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);

	(void)fd;
	(void)what;
	if (s->accept_paused_ms == 0 || s->node->draining)
		return;
	uint64_t retry_ms;
	if (open_conns(s) >= s->node->max_connections &&
	    !make_room(s, &retry_ms)) {
		struct timeval tv = tv_ms(retry_ms);
		evtimer_add(s->accept_retry, &tv);
		return;
	}
	/* descriptors may be free again: try; a failure pauses again */
	s->accept_paused_ms = 0;
	evconnlistener_enable(s->listener);
}

int
accept_plan(struct node *s, unsigned workers)
{
	struct rlimit rl;
	uint64_t nofile = 1024;

	/* every connection and every large cached body holds a descriptor:
	 * use all the hard limit allows, as nginx and Squid do */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		nofile = rl.rlim_cur > INT32_MAX ? INT32_MAX : rl.rlim_cur;
	}
	/* curl's kept connections: an eighth of the descriptors, within
	 * curlev's own bounds */
	uint64_t pool = nofile / 8 < 8 ? 8 : nofile / 8 > CURLEV_POOL_MAX ?
	    CURLEV_POOL_MAX : nofile / 8;
	uint64_t reserve = FIXED_FDS + WORKER_FDS * (uint64_t)(workers - 1) +
	    pool +
	    2 * (uint64_t)s->conf.n_peers;
	uint64_t conns = s->conf.max_connections;
	if (nofile <= reserve + 2 * 8) {
		fprintf(stderr, "sumcache: %llu descriptors (ulimit -n) cannot "
		    "hold the %llu this node reserves and 8 connections\n",
		    (unsigned long long)nofile, (unsigned long long)reserve);
		return -1;
	}
	if (conns == 0)
		conns = (nofile - reserve) / 2 * CONN_SHARE_NUM / CONN_SHARE_DEN;
	if (2 * conns + reserve > nofile) {
		fprintf(stderr, "sumcache: max_connections %llu needs %llu "
		    "descriptors; ulimit -n allows %llu\n",
		    (unsigned long long)conns,
		    (unsigned long long)(2 * conns + reserve),
		    (unsigned long long)nofile);
		return -1;
	}
	s->max_connections = (unsigned)conns;
	s->curl_pool = (unsigned)pool;
	s->body_fd_ceiling = (int)(nofile - reserve - 2 * conns);
	return 0;
}

int
accept_start(struct worker *s)
{
	struct node *n = s->node;
	s->accept_retry = evtimer_new(s->base, on_retry, s);
	if (s->accept_retry == NULL)
		return -1;
	/* a listener each: the kernel spreads the connections over the
	 * workers (SO_REUSEPORT) */
	unsigned flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_CLOSE_ON_EXEC;
	if (n->nworkers > 1)
		flags |= LEV_OPT_REUSEABLE_PORT;
	s->listener = evconnlistener_new_bind(s->base, on_accept, s, flags,
	    1024, (struct sockaddr *)&n->listen_addr, n->listen_len);
	if (s->listener == NULL) {
		fprintf(stderr, "sumcache: cannot listen on %s: %s\n",
		    n->conf.http_listen, strerror(errno));
		return -1;
	}
	evconnlistener_set_error_cb(s->listener, on_accept_error);
	return 0;
}

void
accept_conn_closed(struct worker *s)
{
	resume_listener(s);
	/* a worker's drain ends with its last connection; home's, with the
	 * other workers' too (they may hand it work until they end) */
	if (s->node->draining && s->clients == NULL && s->ntunnels == 0 &&
	    (s != s->node->home || s->node->others_running == 0))
		event_base_loopbreak(s->base);
}

void
accept_stop(struct worker *s)
{
	if (s->accept_retry != NULL)
		evtimer_del(s->accept_retry);
	if (s->listener != NULL)
		evconnlistener_disable(s->listener);
}

void
accept_free(struct worker *s)
{
	if (s->listener)
		evconnlistener_free(s->listener);
	s->listener = NULL;
	if (s->accept_retry)
		event_free(s->accept_retry);
	s->accept_retry = NULL;
}
