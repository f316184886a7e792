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
 * The bound is exact with several workers too: each has a listener of its
 * own (SO_REUSEPORT) and accepts when it likes, so a connection's slot is
 * taken (a compare-and-swap on the node's count) before accept() is
 * called, as HAProxy does, and given back if accept() finds none waiting.
 * Counted after accept() instead (libevent's evconnlistener accepts first
 * and tells after), two workers at the last slot both took it, and each
 * later accept that made room for itself kept the node one over.
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
#define _GNU_SOURCE /* accept4 */
#include "accept.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "budget.h"
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
/* connections accepted in one wake-up at most: the loop serves its
 * clients between the batches of a burst */
#define ACCEPT_BATCH 64
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

/* Takes a slot: the node's count with it, or 0 at the limit. */
static unsigned
slot_take(struct node *n)
{
	unsigned open = atomic_load_explicit(&n->open_conns,
	    memory_order_relaxed);

	do {
		if (open >= n->max_connections)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&n->open_conns, &open,
	    open + 1, memory_order_relaxed, memory_order_relaxed));
	return open + 1;
}

bool
accept_slot_take(struct node *n)
{
	return slot_take(n) != 0;
}

/* A slot taken for a connection that did not come (accept() found none
 * waiting), or could not be served. */
static void
slot_give_back(struct node *n)
{
	atomic_fetch_sub_explicit(&n->open_conns, 1, memory_order_relaxed);
}

/* A connection came in the slot that made the count open: the peak and
 * the memory budget see it. (Seen at the take, the peak counted the slot
 * each batch of accepts takes to find none waiting. Another worker's such
 * take may be in open still: with several workers the peak may count
 * one of each, and never passes max_connections.) */
static void
slot_filled(struct node *n, unsigned open)
{
	unsigned peak = atomic_load_explicit(&n->conns_peak,
	    memory_order_relaxed);

	while (open > peak && !atomic_compare_exchange_weak_explicit(
	    &n->conns_peak, &peak, open, memory_order_relaxed,
	    memory_order_relaxed))
		;
	budget_conns(n->budget, open);
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
	event_del(s->listen_ev);
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
	event_add(s->listen_ev, NULL);
}

/* accept() failed for want of descriptors or memory (other descriptors
 * are open, or a smaller limit elsewhere): an idle connection's descriptor
 * lets the waiting one in, or the listener pauses. */
static void
short_of_descriptors(struct worker *s, int err)
{
	uint64_t retry_ms;
	bool here = make_room(s, &retry_ms);

	if (here || s->node->nworkers > 1) {
		/* closed here, or asked of the other workers */
		uint64_t now = mono_ms();
		if (now - s->accept_short_ms > EPISODE_MS)
			fprintf(stderr, "sumcache: accept: %s: closing idle "
			    "connections to make room (%u open)\n",
			    strerror(err), open_conns(s));
		s->accept_short_ms = now;
	}
	if (!here)
		pause_listener(s, strerror(err),
		    retry_ms < RETRY_MS ? retry_ms : RETRY_MS);
}

/* The listening socket is readable: a slot first, then accept(). At the
 * limit an idle connection gives up its slot for a newcomer, else
 * accepting waits for a close, or for one to idle. A newcomer is known to
 * wait only until one is accepted: past it, at the limit, nobody is
 * closed on a guess (the socket wakes the loop again if one waits). */
static void
on_readable(evutil_socket_t lfd, short what, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);
	bool waiting = true;

	(void)what;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		uint64_t retry_ms;
		unsigned open = slot_take(s->node);
		if (open == 0) {
			if (!waiting)
				return;
			if (make_room(s, &retry_ms))
				continue;
			METRIC_INC(s->m.connection_limit_reached);
			pause_listener(s, "max_connections reached, none idle",
			    retry_ms);
			return;
		}
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &len,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			waiting = false;
			slot_filled(s->node, open);
			if (!client_accept(s, fd, (struct sockaddr *)&ss))
				slot_give_back(s->node);
			continue;
		}
		int err = errno;
		slot_give_back(s->node);
		if (err == EAGAIN || err == EWOULDBLOCK)
			return;
		/* it died in the backlog: the next one is fine */
		if (err == EINTR || err == ECONNABORTED)
			continue;
		METRIC_INC(s->m.accept_errors);
		if (err == EMFILE || err == ENFILE || err == ENOBUFS ||
		    err == ENOMEM)
			short_of_descriptors(s, err);
		return;
	}
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
	event_add(s->listen_ev, NULL);
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
	int one = 1;

	s->accept_retry = evtimer_new(s->base, on_retry, s);
	if (s->accept_retry == NULL)
		return -1;
	/* a listener each: the kernel spreads the connections over the
	 * workers (SO_REUSEPORT) */
	int fd = socket(n->listen_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	/* accepted sockets inherit SO_KEEPALIVE: a client gone without a
	 * word is found by the kernel, as libevent's listener had it */
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) < 0 || setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one,
	    sizeof(one)) < 0 || (n->nworkers > 1 && setsockopt(fd, SOL_SOCKET,
	    SO_REUSEPORT, &one, sizeof(one)) < 0) ||
	    bind(fd, (struct sockaddr *)&n->listen_addr,
	    (socklen_t)n->listen_len) < 0 || listen(fd, 1024) < 0 ||
	    (s->listen_ev = event_new(s->base, fd, EV_READ | EV_PERSIST,
	    on_readable, s)) == NULL || event_add(s->listen_ev, NULL) < 0) {
		fprintf(stderr, "sumcache: cannot listen on %s: %s\n",
		    n->conf.http_listen, strerror(errno));
		if (fd >= 0)
			close(fd);
		if (s->listen_ev != NULL)
			event_free(s->listen_ev);
		s->listen_ev = NULL;
		return -1;
	}
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
	if (s->listen_ev != NULL)
		event_del(s->listen_ev);
}

void
accept_free(struct worker *s)
{
	if (s->listen_ev != NULL) {
		close(event_get_fd(s->listen_ev));
		event_free(s->listen_ev);
	}
	s->listen_ev = NULL;
	if (s->accept_retry)
		event_free(s->accept_retry);
	s->accept_retry = NULL;
}
