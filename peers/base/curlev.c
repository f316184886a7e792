/*
 * curl multi-socket glue.
 *
 * curl tells us which sockets to watch (socket callback) and when to call it
 * back (timer callback); we turn those into libevent events and report
 * readiness with curl_multi_socket_action. Each socket's event is stored
 * in curl's per-socket pointer (curl_multi_assign), so there is no table
 * of our own. Completed transfers are collected after every action.
 * Connections kept for reuse are closed once nothing has run for
 * CURLEV_IDLE_CLOSE_MS.
 *
 * Bytes on a kept connection. curl takes a kept connection for alive when
 * a peek finds bytes on it, and sends the next request there: what an
 * origin sent past the end of its answer (a second response, arriving a
 * moment after the first) would be read as the next request's answer,
 * and cached under that URL. (Excess that arrives in the read that ends
 * the body curl sees itself, and closes that connection.) So before a
 * request goes out on a kept connection (CURLOPT_PREREQFUNCTION) its
 * socket is peeked: if anything waits, the transfer is refused there,
 * which makes curl close that connection, and started again on a new one
 * (a new connection is never refused). curl names the connection there
 * by its addresses, not its socket, so every upstream connection is in
 * a table of ours from its first request to its close (struct
 * curlev_conn): curl opens its sockets through us
 * (CURLOPT_OPENSOCKETFUNCTION), the first request's callback finds which
 * of the transfer's sockets it is (its local port), and curl tells us of
 * every close (CURLOPT_CLOSESOCKETFUNCTION), so an entry is never a
 * closed socket's number reused. (Noting a connection when its transfer
 * ends is too late: curl may hand it to the next transfer in the same
 * pass.) Over TLS the bytes might be an alert rather than data: the
 * connection is refused all the same, and counted only over plain HTTP.
 */
#include "curlev.h"

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "clock.h"
#include "loop.h"
#include "ratelog.h"
#include "sc_assert.h"

/* buckets of the connections by local port */
#define CURLEV_CONN_BUCKETS 256

/* An upstream connection, from its first request to its close: its
 * socket, under the addresses the prerequest callback names it by. */
struct curlev_conn {
	curl_socket_t fd;   /* CURL_SOCKET_BAD: a free entry */
	int local_port, port;
	char ip[48];
	int next;           /* in its bucket, or on the free list; -1 */
};

#define CURLEV_MAGIC 0x58766446u
struct curlev {
	unsigned magic;         /* CURLEV_MAGIC (SC_CAST) */
	struct event_base *base;
	CURLM *multi;
	struct event *timer;
	struct event *idle;   /* closes the kept connections */
	long pool;
	unsigned running;
	/* inside curl_multi_socket_action, which refuses to be re-entered:
	 * transfers started meanwhile wait on the pending list */
	bool in_action;
	struct curlev_xfer *pending, **pending_tail;
	CURL *kept[CURLEV_EASY_KEEP];   /* easy handles, reset, for reuse */
	unsigned nkept;
	_Atomic uint64_t excess;  /* curlev_stats' */
	struct ratelog excess_log;
	/* every upstream connection (it grows as they do), by local port */
	struct curlev_conn *conns;
	int nconns, free_conn;
	int bucket[CURLEV_CONN_BUCKETS];
};

static bool
bytes_waiting(curl_socket_t fd)
{
	char c;

	return fd != CURL_SOCKET_BAD &&
	    recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

static bool
over_tls(CURL *easy)
{
	char *scheme = NULL;

	curl_easy_getinfo(easy, CURLINFO_SCHEME, &scheme);
	return scheme != NULL && strcasecmp(scheme, "https") == 0;
}

static void
count_excess(struct curlev *o, const char *where)
{
	uint64_t skipped;

	/* one writer (the loop's thread), read by another's /metrics */
	atomic_store_explicit(&o->excess, atomic_load_explicit(&o->excess,
	    memory_order_relaxed) + 1, memory_order_relaxed);
	if (ratelog_due(&o->excess_log, &skipped))
		fprintf(stderr, "sumcache: bytes past the end of an answer "
		    "%s; that connection is closed, never used again (%llu "
		    "more since the last line)\n", where,
		    (unsigned long long)skipped);
}

static int *
bucket_of(struct curlev *o, int local_port)
{
	return &o->bucket[(unsigned)local_port % CURLEV_CONN_BUCKETS];
}

static struct curlev_conn *
conn_find(struct curlev *o, const char *ip, int port, int local_port)
{
	for (int i = *bucket_of(o, local_port); i >= 0; i = o->conns[i].next) {
		struct curlev_conn *c = &o->conns[i];
		if (c->local_port == local_port && c->port == port &&
		    strcmp(c->ip, ip) == 0)
			return c;
	}
	return NULL;
}

/* A new connection's entry; NULL on ENOMEM (it goes unchecked). */
static struct curlev_conn *
conn_add(struct curlev *o, curl_socket_t fd, const char *ip, int port,
    int local_port)
{
	if (o->free_conn < 0) {
		int n = o->nconns == 0 ? 64 : 2 * o->nconns;
		struct curlev_conn *more = realloc(o->conns, (size_t)n *
		    sizeof(*more));
		if (more == NULL)
			return NULL;
		o->conns = more;
		for (int i = n - 1; i >= o->nconns; i--) {
			o->conns[i] = (struct curlev_conn){.fd = CURL_SOCKET_BAD,
			    .next = o->free_conn};
			o->free_conn = i;
		}
		o->nconns = n;
	}
	int i = o->free_conn;
	struct curlev_conn *c = &o->conns[i];
	int *b = bucket_of(o, local_port);
	o->free_conn = c->next;
	*c = (struct curlev_conn){.fd = fd, .local_port = local_port,
	    .port = port, .next = *b};
	snprintf(c->ip, sizeof(c->ip), "%s", ip);
	*b = i;
	return c;
}

/* CURLOPT_CLOSESOCKETFUNCTION: curl closes a socket, its connection's
 * entry goes. */
static int
on_close_socket(void *arg, curl_socket_t fd)
{
	struct curlev *o = SC_CAST(struct curlev, arg, CURLEV_MAGIC);

	for (int i = 0; i < o->nconns; i++) {
		struct curlev_conn *c = &o->conns[i];
		if (c->fd != fd)
			continue;
		int *p = bucket_of(o, c->local_port);
		while (*p != i)
			p = &o->conns[*p].next;
		*p = c->next;
		c->fd = CURL_SOCKET_BAD;
		c->next = o->free_conn;
		o->free_conn = i;
		break;
	}
	return close(fd);
}

/* CURLOPT_OPENSOCKETFUNCTION: curl's socket, opened here so that the
 * transfer knows it (a connection may try two: IPv6 and IPv4). */
static curl_socket_t
on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct curlev_xfer *x = SC_CAST(struct curlev_xfer, arg,
	    CURLEV_XFER_MAGIC);
	curl_socket_t fd = socket(a->family, a->socktype | SOCK_CLOEXEC,
	    a->protocol);

	(void)purpose;
	if (fd != CURL_SOCKET_BAD)
		x->opened[x->nopened++ % CURLEV_OPENED] = fd;
	return fd;
}

/* Which of x's sockets is the new connection from local_port. */
static curl_socket_t
opened_at(const struct curlev_xfer *x, int local_port)
{
	for (unsigned i = 0; i < CURLEV_OPENED && i < x->nopened; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		curl_socket_t fd = x->opened[i];
		if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
			continue;
		int p = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)
		    &ss)->sin_port) : ss.ss_family == AF_INET6 ?
		    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) : -1;
		if (p == local_port)
			return fd;
	}
	return CURL_SOCKET_BAD;
}

/* CURLOPT_PREREQFUNCTION: the request is about to go out. A new
 * connection enters the table; on a kept one with bytes waiting the
 * request does not go (curlev.c's opening). */
static int
on_prereq(void *arg, char *ip, char *local_ip, int port, int local_port)
{
	struct curlev_xfer *x = SC_CAST(struct curlev_xfer, arg,
	    CURLEV_XFER_MAGIC);
	struct curlev_conn *c = conn_find(x->o, ip, port, local_port);
	char where[80];

	(void)local_ip;
	if (c == NULL) {
		curl_socket_t fd = opened_at(x, local_port);
		if (fd != CURL_SOCKET_BAD)
			conn_add(x->o, fd, ip, port, local_port);
		return CURL_PREREQFUNC_OK;
	}
	if (!bytes_waiting(c->fd))
		return CURL_PREREQFUNC_OK;
	if (!over_tls(x->easy)) {
		snprintf(where, sizeof(where), "waited on a kept connection "
		    "to %s:%d", ip, port);
		count_excess(x->o, where);
	}
	x->refused_conn = true;
	return CURL_PREREQFUNC_ABORT;
}

static void
stopped(struct curlev *o, struct curlev_xfer *x)
{
	struct timeval tv = tv_ms(CURLEV_IDLE_CLOSE_MS);

	x->running = false;
	SC_ASSERT(o->running > 0);
	if (--o->running == 0)
		evtimer_add(o->idle, &tv);
}

static void
check_done(struct curlev *o)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(o->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		CURL *easy = msg->easy_handle;
		CURLcode rc = msg->data.result;
		struct curlev_xfer *x = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
		SC_ASSERT(x != NULL);
		curl_multi_remove_handle(o->multi, easy);
		if (x->refused_conn && !x->retried) {
			/* refused a kept connection: on a new one */
			x->retried = true;
			curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, 1L);
			if (curl_multi_add_handle(o->multi, easy) == CURLM_OK)
				continue;
			rc = CURLE_FAILED_INIT;
		}
		if (x->retried)
			curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, 0L);
		stopped(o, x);
		x->done(x->arg, rc);
	}
}

/* Adds the transfers started inside the last action; one curl refuses
 * ends at once, as if it had failed to start. */
static void
add_pending(struct curlev *o)
{
	struct curlev_xfer *x;

	while ((x = o->pending) != NULL) {
		o->pending = x->next_pending;
		if (o->pending == NULL)
			o->pending_tail = &o->pending;
		x->pending = false;
		if (curl_multi_add_handle(o->multi, x->easy) != CURLM_OK) {
			stopped(o, x);
			x->done(x->arg, CURLE_FAILED_INIT);
		}
	}
}

static void
action(struct curlev *o, curl_socket_t fd, int what)
{
	int running;

	o->in_action = true;
	curl_multi_socket_action(o->multi, fd, what, &running);
	o->in_action = false;
	add_pending(o);
	check_done(o);
}

static void
on_socket_event(evutil_socket_t fd, short what, void *arg)
{
	action(arg, fd, ((what & EV_READ) ? CURL_CSELECT_IN : 0) |
	    ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0));
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	action(arg, CURL_SOCKET_TIMEOUT, 0);
}

static int
socket_cb(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct curlev *o = SC_CAST(struct curlev, userp, CURLEV_MAGIC);
	struct event *ev = socketp;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (ev != NULL) {
			event_free(ev);
			curl_multi_assign(o->multi, s, NULL);
		}
		return 0;
	}
	short kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
	    ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
	if (ev != NULL) {
		event_del(ev);
		event_assign(ev, o->base, s, kind, on_socket_event, o);
	} else {
		ev = event_new(o->base, s, kind, on_socket_event, o);
		if (ev == NULL)
			return -1;
		curl_multi_assign(o->multi, s, ev);
	}
	/* fails, harmlessly, on a base without loop.h's queues (tools) */
	(void)event_priority_set(ev, LOOP_PRIO_BULK);
	event_add(ev, NULL);
	return 0;
}

static int
timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct curlev *o = SC_CAST(struct curlev, userp, CURLEV_MAGIC);

	(void)multi;
	if (timeout_ms < 0) {
		evtimer_del(o->timer);
		return 0;
	}
	struct timeval tv = tv_ms(timeout_ms);
	evtimer_add(o->timer, &tv);
	return 0;
}

static CURLM *
multi_new(struct curlev *o)
{
	CURLM *m = curl_multi_init();

	if (m == NULL)
		return NULL;
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, o);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(m, CURLMOPT_TIMERDATA, o);
	/* connections kept for reuse, across all origins; part of the
	 * caller's descriptor plan (proxy/conn/accept.c) */
	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, o->pool);
	return m;
}

/*
 * Nothing has run for CURLEV_IDLE_CLOSE_MS: close the kept connections.
 * curl looks at a kept connection only when it starts a transfer, so one
 * its origin closed would otherwise sit in CLOSE-WAIT, holding a
 * descriptor, until traffic comes back; and curl has no call to drop its
 * pool but the multi's own cleanup. So the idle multi is replaced by a
 * new one.
 */
static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct curlev *o = SC_CAST(struct curlev, arg, CURLEV_MAGIC);
	CURLM *fresh;

	(void)fd;
	(void)what;
	if (o->running > 0 || (fresh = multi_new(o)) == NULL)
		return;
	curl_multi_cleanup(o->multi); /* its socket callbacks see o->multi */
	o->multi = fresh;
}

struct curlev *
curlev_new(struct event_base *base, long pool)
{
	struct curlev *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	o->magic = CURLEV_MAGIC;
	o->base = base;
	o->pool = pool;
	o->pending_tail = &o->pending;
	o->free_conn = -1;
	for (int i = 0; i < CURLEV_CONN_BUCKETS; i++)
		o->bucket[i] = -1;
	o->multi = multi_new(o);
	o->timer = evtimer_new(base, on_timer, o);
	o->idle = evtimer_new(base, on_idle, o);
	if (o->multi == NULL || o->timer == NULL || o->idle == NULL) {
		curlev_free(&o);
		return NULL;
	}
	return o;
}

void
curlev_free(struct curlev **op)
{
	struct curlev *o = *op;

	if (o == NULL)
		return;
	*op = NULL;
	if (o->multi)
		curl_multi_cleanup(o->multi);
	if (o->timer)
		event_free(o->timer);
	if (o->idle)
		event_free(o->idle);
	while (o->nkept > 0)
		curl_easy_cleanup(o->kept[--o->nkept]);
	free(o->conns);
	o->magic = 0;
	free(o);
}

CURL *
curlev_easy(struct curlev *o)
{
	return o->nkept > 0 ? o->kept[--o->nkept] : curl_easy_init();
}

void
curlev_easy_done(struct curlev *o, CURL **easy)
{
	CURL *e = *easy;

	*easy = NULL;
	if (e == NULL)
		return;
	if (o->nkept == CURLEV_EASY_KEEP) {
		curl_easy_cleanup(e);
		return;
	}
	/* reset now, not when taken: a kept handle points at nothing of
	 * its last owner's (error buffer, callbacks' arguments) */
	curl_easy_reset(e);
	o->kept[o->nkept++] = e;
}

struct curlev_stats
curlev_stats(const struct curlev *o)
{
	return (struct curlev_stats){.excess = atomic_load_explicit(&o->excess,
	    memory_order_relaxed)};
}

int
curlev_start(struct curlev *o, CURL *easy, struct curlev_xfer *x)
{
	curl_easy_setopt(easy, CURLOPT_PRIVATE, x);
	curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(easy, CURLOPT_PREREQDATA, x);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, on_close_socket);
	curl_easy_setopt(easy, CURLOPT_CLOSESOCKETDATA, o);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, x);
	x->magic = CURLEV_XFER_MAGIC;
	x->o = o;
	x->easy = easy;
	x->refused_conn = x->retried = false;
	x->nopened = 0;
	x->pending = o->in_action;
	if (x->pending) {
		x->next_pending = NULL;
		*o->pending_tail = x;
		o->pending_tail = &x->next_pending;
	} else if (curl_multi_add_handle(o->multi, easy) != CURLM_OK) {
		return -1;
	}
	x->running = true;
	o->running++;
	evtimer_del(o->idle);
	return 0;
}

void
curlev_cancel(struct curlev *o, CURL *easy)
{
	struct curlev_xfer *x = NULL;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
	if (x == NULL || !x->running)
		return;
	if (x->pending) {
		struct curlev_xfer **p = &o->pending;
		while (*p != x)
			p = &(*p)->next_pending;
		*p = x->next_pending;
		if (*p == NULL)
			o->pending_tail = p;
		x->pending = false;
	} else {
		/* curl cannot take a handle out from inside its callbacks */
		SC_ASSERT(!o->in_action);
		curl_multi_remove_handle(o->multi, easy);
	}
	stopped(o, x);
}
