/*
 * See icpsock.h.
 *
 * Queries in flight sit in a small hash by request number. A reply is
 * taken only from a peer the query asked, at that peer's ICP address, for
 * the URL byte for byte; anything else is dropped and counted.
 */
#include "icpsock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/util.h>

#include "inbox.h"
#include "metric.h"
#include "ratelog.h"
#include "sc_assert.h"

#define QBUCKETS 1024
#define ASK_MAX PEERS_MAX       /* a query may go to every peer */
#define SILENT_DOWN 3           /* unanswered queries in a row: down */
#define DOWN_PROBE_MS 10000     /* a down peer's query interval */
#define TIMEOUT_MIN_MS 5
#define TIMEOUT_MAX_MS 2000
#define READS_PER_EVENT 64

enum answer_kind { ANS_HIT, ANS_MISS, ANS_ERR, ANS_DENIED, ANS_NKINDS };

#define ICPQ_MAGIC 0xbf0edaabu
struct icpq {
	unsigned magic;         /* ICPQ_MAGIC (SC_CAST) */
	struct icpq *next;          /* in its bucket */
	struct icpsock *is;
	uint32_t reqnum;
	char *url;
	size_t url_len;
	/* held; NULL once it answered. The first nwaited were up when
	 * asked and are waited for; the rest are down peers' probes */
	struct peer **asked;
	size_t nasked, nwaited;
	size_t waiting;             /* of the first nwaited, yet to answer */
	uint64_t sent_us;
	struct event *timer;
	icp_answer_f *answer;
	void *arg;
};

/* What ICP keeps of a peer, by its serial: peers/ owns the peer, this
 * socket its ICP history. */
struct icp_peer {
	uint64_t serial;
	double rtt_ms;           /* smoothed; 0 = not measured */
	unsigned silent;         /* queries in a row it left unanswered */
	uint64_t probe_at_ms;    /* down: next query it gets */
};

#define ICPSOCK_MAGIC 0x581c3dd2u
struct icpsock {
	unsigned magic;         /* ICPSOCK_MAGIC (SC_CAST) */
	struct event_base *base;
	struct peers *ps;
	evutil_socket_t fd;
	struct event *ev;
	uint32_t timeout_ms;
	struct inbox *home;      /* base's: where questions go */
	icp_lookup_f *lookup;
	void *lookup_arg;
	uint32_t next_reqnum;
	struct icpq *q[QBUCKETS];
	/* home's to write; atomic, as /metrics reads them on any worker */
	_Atomic uint64_t dropped[ICP_NERRS + 3]; /* decode errors, then below */
	_Atomic uint64_t answered[ANS_NKINDS];
	_Atomic uint64_t timeouts;
	struct ratelog droplog;
	/* ascending serials, as peers_list lists them (sync_records) */
	struct icp_peer rec[PEERS_MAX];
	size_t nrec;
};

/* drop reasons: the decoder's, then ours */
enum { DROP_UNEXPECTED = ICP_NERRS, DROP_WRONG_URL, DROP_SEND };
static const char *const drop_names[ICP_NERRS + 3] = {
	[ICP_ERR_SHORT] = "short", [ICP_ERR_LENGTH] = "length",
	[ICP_ERR_VERSION] = "version", [ICP_ERR_OPCODE] = "opcode",
	[ICP_ERR_URL] = "url", [DROP_UNEXPECTED] = "unexpected",
	[DROP_WRONG_URL] = "wrong_url", [DROP_SEND] = "send_failed",
};
static const char *const answer_names[ANS_NKINDS] = {
	"hit", "miss", "err", "denied",
};

/* A peer's ICP address: its HTTP address with the ICP port. */
static void
icp_addr(const struct peer *p, struct sockaddr_storage *ss)
{
	uint16_t icp_port = peer_spec(p)->icp_port;
	uint16_t port = htons(icp_port ? icp_port : ICP_PORT);

	*ss = *peer_addr(p);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = port;
	else
		((struct sockaddr_in *)ss)->sin_port = port;
}

static bool
same_endpoint(const struct sockaddr_storage *a, const struct sockaddr *b)
{
	if (a->ss_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port &&
		    x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	    memcmp(&x->sin6_addr, &y->sin6_addr, 16) == 0;
}

/*
 * The peer whose ICP address sent from (peers on one host share an
 * address: the port tells them apart), or NULL.
 */
/* Makes the records those of v[0..n) (ascending serials, as peers_list
 * gives them): records of peers that left are dropped, newcomers start
 * afresh. Then rec[i] is v[i]'s. */
static void
sync_records(struct icpsock *is, struct peer *const *v, size_t n)
{
	struct icp_peer next[PEERS_MAX];
	size_t j = 0;

	SC_ASSERT(n <= PEERS_MAX);
	for (size_t i = 0; i < n; i++) {
		uint64_t serial = peer_serial(v[i]);
		SC_ASSERT(i == 0 || serial > next[i - 1].serial);
		while (j < is->nrec && is->rec[j].serial < serial)
			j++;
		next[i] = j < is->nrec && is->rec[j].serial == serial ?
		    is->rec[j] : (struct icp_peer){.serial = serial};
	}
	memcpy(is->rec, next, n * sizeof(next[0]));
	is->nrec = n;
}

/* p's record, or NULL for a peer that joined since the last query. */
static struct icp_peer *
record(struct icpsock *is, const struct peer *p)
{
	uint64_t serial = peer_serial(p);
	size_t lo = 0, hi = is->nrec;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (is->rec[mid].serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < is->nrec && is->rec[lo].serial == serial ? &is->rec[lo] :
	    NULL;
}

static struct peer *
icp_peer(struct icpsock *is, const struct sockaddr *from)
{
	struct peer *v[ASK_MAX];
	size_t n = peers_list(is->ps, v, ASK_MAX);
	struct sockaddr_storage ss;

	for (size_t i = 0; i < n; i++) {
		icp_addr(v[i], &ss);
		if (same_endpoint(&ss, from))
			return v[i];
	}
	return NULL;
}

static void
drop(struct icpsock *is, int reason, const char *from)
{
	uint64_t skipped;

	is->dropped[reason]++;
	if (ratelog_due(&is->droplog, &skipped))
		fprintf(stderr, "sumcache: ICP datagram from %s dropped: %s "
		    "(%llu more since the last line)\n", from,
		    drop_names[reason], (unsigned long long)skipped);
}

static void
send_to(struct icpsock *is, const uint8_t *buf, size_t len,
    const struct sockaddr *to, socklen_t tolen, const char *who)
{
	if (sendto(is->fd, buf, len, 0, to, tolen) != (ssize_t)len)
		drop(is, DROP_SEND, who);
}

/* ---- server ---- */

static void
serve_query(struct icpsock *is, const struct icp_msg *m, size_t len,
    const struct sockaddr *from, socklen_t fromlen, const char *who)
{
	uint8_t out[ICP_MAX];
	/* a peer asks from its ICP port (Squid does); any port of a peer's
	 * address is still that peer's */
	struct peer *p = icp_peer(is, from);
	if (p == NULL)
		p = peers_by_addr(is->ps, from);
	enum icp_op op;
	enum answer_kind kind;

	if (p == NULL) {
		op = ICP_OP_DENIED;
		kind = ANS_DENIED;
	} else {
		op = is->lookup(is->lookup_arg, m->url, m->url_len);
		kind = op == ICP_OP_HIT ? ANS_HIT : op == ICP_OP_MISS ?
		    ANS_MISS : ANS_ERR;
		peers_count(p, IPM_RECEIVED, IPM_ICP_QUERY, len);
	}
	is->answered[kind]++;
	size_t n = icp_encode(out, op, m->reqnum, m->url, m->url_len);
	if (n == 0)
		return;
	send_to(is, out, n, from, fromlen, who);
	if (p != NULL)
		peers_count(p, IPM_SENT, IPM_ICP_REPLY, n);
}

/* ---- client ---- */

static struct icpq **
bucket(struct icpsock *is, uint32_t reqnum)
{
	return &is->q[reqnum % QBUCKETS];
}

static void
unlink_query(struct icpq *q)
{
	for (struct icpq **pp = bucket(q->is, q->reqnum); *pp != NULL;
	    pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			return;
		}
}

static void
query_free(struct icpq *q)
{
	unlink_query(q);
	for (size_t i = 0; i < q->nasked; i++)
		peers_put(&q->asked[i]);
	if (q->timer != NULL)
		event_free(q->timer);
	free(q->asked);
	free(q->url);
	q->magic = 0;
	free(q);
}

/* Ends q with hit (held for the caller) or NULL. */
static void
finish(struct icpq *q, struct peer *hit)
{
	icp_answer_f *answer = q->answer;
	void *arg = q->arg;

	if (hit != NULL)
		peers_hold(hit);
	query_free(q);
	answer(arg, hit);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct icpq *q = SC_CAST(struct icpq, arg, ICPQ_MAGIC);

	(void)fd;
	(void)what;
	q->is->timeouts++;
	for (size_t i = 0; i < q->nwaited; i++) {
		struct peer *p = q->asked[i];
		struct icp_peer *r = p != NULL ? record(q->is, p) : NULL;
		if (r != NULL && ++r->silent >= SILENT_DOWN)
			peers_silent(p, "no ICP replies");
	}
	finish(q, NULL);
}

static void
take_reply(struct icpsock *is, const struct icp_msg *m, size_t len,
    const struct sockaddr *from, const char *who)
{
	struct icpq *q = *bucket(is, m->reqnum);
	struct peer *p = icp_peer(is, from);

	if (p == NULL) {
		drop(is, DROP_UNEXPECTED, who);
		return;
	}
	while (q != NULL && q->reqnum != m->reqnum)
		q = q->next;
	size_t i = 0;
	while (q != NULL && i < q->nasked && q->asked[i] != p)
		i++;
	bool asked = q != NULL && i < q->nasked;
	if (asked && (m->url_len != q->url_len ||
	    memcmp(m->url, q->url, q->url_len) != 0)) {
		drop(is, DROP_WRONG_URL, who);
		return;
	}
	/* even after the timeout, or a second time, a reply is traffic
	 * and says the peer is alive */
	peers_count(p, IPM_RECEIVED, IPM_ICP_REPLY, len);
	struct icp_peer *r = record(is, p);
	if (r != NULL)
		r->silent = 0;
	peers_alive(p);
	if (!asked)
		return;
	double ms = (double)(mono_us() - q->sent_us) / 1000;
	if (r != NULL)
		r->rtt_ms = r->rtt_ms == 0 ? ms : 0.8 * r->rtt_ms + 0.2 * ms;
	if (m->op == ICP_OP_HIT || m->op == ICP_OP_HIT_OBJ) {
		finish(q, p);
		return;
	}
	peers_put(&q->asked[i]);
	if (i < q->nwaited && --q->waiting == 0)
		finish(q, NULL);
}

/* After sync_records for v[0..n). */
static uint32_t
query_timeout(const struct icpsock *is, struct peer *const *v, size_t n)
{
	double sum = 0;
	size_t k = 0;

	if (is->timeout_ms != 0)
		return is->timeout_ms;
	for (size_t i = 0; i < n; i++)
		if (peer_is_up(v[i]) && is->rec[i].rtt_ms > 0) {
			sum += is->rec[i].rtt_ms;
			k++;
		}
	if (k == 0)
		return TIMEOUT_MAX_MS;
	double ms = 2 * sum / (double)k;
	return ms < TIMEOUT_MIN_MS ? TIMEOUT_MIN_MS : ms > TIMEOUT_MAX_MS ?
	    TIMEOUT_MAX_MS : (uint32_t)ms;
}

/* The query itself, on home's loop: NULL when no live peer is there to
 * wait for; else answer(arg, hit) runs once, later, unless cancelled. */
static struct icpq *
query_start(struct icpsock *is, const char *url, size_t len,
    icp_answer_f *answer, void *arg)
{
	struct peer *v[ASK_MAX];
	size_t n = peers_list(is->ps, v, ASK_MAX);
	uint8_t out[ICP_MAX];
	uint64_t now_ms = mono_us() / 1000;
	struct icpq *q = n > 0 ? calloc(1, sizeof(*q)) : NULL;

	if (q == NULL)
		return NULL;
	q->magic = ICPQ_MAGIC;
	sync_records(is, v, n);
	q->is = is;
	q->reqnum = is->next_reqnum++;
	q->url = malloc(len + 1);
	q->asked = calloc(n, sizeof(*q->asked));
	q->timer = evtimer_new(is->base, on_timeout, q);
	size_t dlen = icp_encode(out, ICP_OP_QUERY, q->reqnum, url, len);
	if (q->url == NULL || q->asked == NULL || q->timer == NULL ||
	    dlen == 0)
		goto none;
	memcpy(q->url, url, len);
	q->url[len] = '\0';
	q->url_len = len;
	q->answer = answer;
	q->arg = arg;
	q->sent_us = mono_us();
	/* live peers first (waited for), then down peers whose probe is due:
	 * a down peer gets a query now and then, and its reply brings it
	 * back, but nobody waits for it */
	for (int live = 1; live >= 0; live--)
		for (size_t i = 0; i < n; i++) {
			struct peer *p = v[i];
			if (peer_is_up(p) != live || (!live &&
			    now_ms < is->rec[i].probe_at_ms))
				continue;
			if (!live)
				is->rec[i].probe_at_ms = now_ms + DOWN_PROBE_MS;
			struct sockaddr_storage ss;
			icp_addr(p, &ss);
			send_to(is, out, dlen, (struct sockaddr *)&ss,
			    ss.ss_family == AF_INET6 ?
			    sizeof(struct sockaddr_in6) :
			    sizeof(struct sockaddr_in), peer_spec(p)->name);
			peers_count(p, IPM_SENT, IPM_ICP_QUERY, dlen);
			peers_hold(p);
			q->asked[q->nasked++] = p;
			if (live)
				q->nwaited++;
		}
	q->waiting = q->nwaited;
	if (q->waiting == 0)
		goto none;
	q->next = *bucket(is, q->reqnum);
	*bucket(is, q->reqnum) = q;
	uint32_t ms = query_timeout(is, v, n);
	struct timeval tv = tv_ms(ms);
	evtimer_add(q->timer, &tv);
	return q;
none:
	query_free(q);
	return NULL;
}

static void
query_cancel(struct icpq **qp)
{
	if (*qp != NULL)
		query_free(*qp);
	*qp = NULL;
}

/* ---- a worker's question, to home and back ---- */

/*
 * The socket and its queries are home's: a worker's question crosses to
 * home's inbox, and the answer back to the asker's (inbox.h). refs: the
 * asker's, until its answer runs or it cancels, and the trip's, home's
 * while the query is out, then the answer note's; a cancel's note holds
 * one more. cancelled is set by the asker and read anywhere; q and hit
 * are home's until the answer is posted, which hands hit over.
 */
#define ICP_ASK_MAGIC 0x2c5b1e07u
struct icp_ask {
	unsigned magic;         /* ICP_ASK_MAGIC (SC_CAST) */
	_Atomic unsigned refs;
	atomic_bool cancelled;
	struct icpsock *is;
	struct inbox *asker;
	icp_answer_f *answer;
	void *arg;
	struct icpq *q;
	struct peer *hit;
	size_t len;
	char url[];
};

static void
ask_unref(struct icp_ask *a)
{
	if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_acq_rel) != 1)
		return;
	peers_put(&a->hit);
	a->magic = 0;
	free(a);
}

/* On the asker's loop. */
static void
ask_answered(void *arg)
{
	struct icp_ask *a = SC_CAST(struct icp_ask, arg, ICP_ASK_MAGIC);

	if (!atomic_load(&a->cancelled)) {
		struct peer *hit = a->hit;
		a->hit = NULL;
		a->answer(a->arg, hit);
		ask_unref(a);  /* the asker's: its handle is spent */
	}
	ask_unref(a);
}

/* An answer note dropped (a node stopping: every asker has cancelled). */
static void
ask_answer_dropped(void *arg)
{
	struct icp_ask *a = SC_CAST(struct icp_ask, arg, ICP_ASK_MAGIC);

	if (!atomic_load(&a->cancelled))
		ask_unref(a);
	ask_unref(a);
}

/* Home's query is over: the answer goes to the asker's loop. */
static void
home_answer(void *arg, struct peer *hit)
{
	struct icp_ask *a = SC_CAST(struct icp_ask, arg, ICP_ASK_MAGIC);

	a->q = NULL;
	a->hit = hit;
	if (inbox_post(a->asker, ask_answered, ask_answer_dropped, a) < 0) {
		/* no memory for the note: the asker's request ends by its
		 * client's timeout */
		fprintf(stderr, "sumcache: ICP: an answer was lost (out of "
		    "memory)\n");
		ask_unref(a);
	}
}

/* On home's loop: the query goes out, unless the asker has gone. */
static void
ask_on_home(void *arg)
{
	struct icp_ask *a = SC_CAST(struct icp_ask, arg, ICP_ASK_MAGIC);

	if (atomic_load(&a->cancelled)) {
		ask_unref(a);
		return;
	}
	a->q = query_start(a->is, a->url, a->len, home_answer, a);
	if (a->q == NULL)
		home_answer(a, NULL);  /* no live peer: the origin now */
}

/* An ask note dropped: the node is stopping, and its asker with it. */
static void
ask_dropped(void *arg)
{
	ask_unref(SC_CAST(struct icp_ask, arg, ICP_ASK_MAGIC));
}

/* On home's loop: a query still out is cancelled (then no answer comes,
 * and the trip's reference goes here). Also a dropped note's end. */
static void
cancel_on_home(void *arg)
{
	struct icp_ask *a = SC_CAST(struct icp_ask, arg, ICP_ASK_MAGIC);

	if (a->q != NULL) {
		query_cancel(&a->q);
		ask_unref(a);
	}
	ask_unref(a);
}

struct icp_ask *
icpsock_ask(struct icpsock *is, const char *url, size_t len,
    icp_answer_f *answer, void *arg)
{
	struct icp_ask *a = malloc(sizeof(*a) + len + 1);

	if (a == NULL)
		return NULL;
	*a = (struct icp_ask){.magic = ICP_ASK_MAGIC, .is = is,
	    .asker = inbox_here(), .answer = answer, .arg = arg, .len = len};
	atomic_init(&a->refs, 2);
	atomic_init(&a->cancelled, false);
	memcpy(a->url, url, len);
	a->url[len] = '\0';
	SC_ASSERT(a->asker != NULL);
	if (inbox_post(is->home, ask_on_home, ask_dropped, a) < 0) {
		a->magic = 0;
		free(a);
		return NULL;
	}
	return a;
}

void
icpsock_cancel(struct icp_ask **ap)
{
	struct icp_ask *a = *ap;

	*ap = NULL;
	if (a == NULL)
		return;
	atomic_store(&a->cancelled, true);
	atomic_fetch_add(&a->refs, 1);
	if (inbox_post(a->is->home, cancel_on_home, cancel_on_home, a) < 0)
		ask_unref(a);  /* the query's answer finds it cancelled */
	ask_unref(a);
}

/* ---- the socket ---- */

static void
on_readable(evutil_socket_t fd, short what, void *arg)
{
	struct icpsock *is = SC_CAST(struct icpsock, arg, ICPSOCK_MAGIC);
	/* one byte more than any message, to see one that is too long */
	uint8_t buf[ICP_MAX + 1];

	(void)what;
	for (int i = 0; i < READS_PER_EVENT; i++) {
		struct sockaddr_storage from;
		socklen_t fromlen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0,
		    (struct sockaddr *)&from, &fromlen);
		if (n < 0)
			return;  /* EAGAIN, or an ICMP error from a send */
		char who[INET6_ADDRSTRLEN + 8] = "?";
		const void *ip = from.ss_family == AF_INET6 ?
		    (const void *)&((struct sockaddr_in6 *)&from)->sin6_addr :
		    (const void *)&((struct sockaddr_in *)&from)->sin_addr;
		evutil_inet_ntop(from.ss_family, ip, who, sizeof(who));
		struct icp_msg m;
		enum icp_err e = (size_t)n > ICP_MAX ? ICP_ERR_LENGTH :
		    icp_decode(buf, (size_t)n, &m);
		if (e != ICP_OK) {
			drop(is, e, who);
			continue;
		}
		if (m.op == ICP_OP_QUERY)
			serve_query(is, &m, (size_t)n,
			    (struct sockaddr *)&from, fromlen, who);
		else
			take_reply(is, &m, (size_t)n,
			    (struct sockaddr *)&from, who);
	}
}

void
icpsock_set_timeout(struct icpsock *is, uint32_t timeout_ms)
{
	is->timeout_ms = timeout_ms;
}

struct icpsock *
icpsock_new(struct event_base *base, struct inbox *home, struct peers *ps,
    const struct sockaddr *addr, socklen_t addrlen, uint32_t timeout_ms,
    icp_lookup_f *lookup, void *lookup_arg, char *err, size_t elen)
{
	struct icpsock *is = calloc(1, sizeof(*is));

	if (is == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	is->magic = ICPSOCK_MAGIC;
	is->base = base;
	is->home = home;
	is->ps = ps;
	is->timeout_ms = timeout_ms;
	is->lookup = lookup;
	is->lookup_arg = lookup_arg;
	is->next_reqnum = (uint32_t)mono_us();
	is->fd = socket(addr->sa_family, SOCK_DGRAM, 0);
	if (is->fd < 0 || evutil_make_socket_nonblocking(is->fd) < 0 ||
	    evutil_make_socket_closeonexec(is->fd) < 0 ||
	    bind(is->fd, addr, addrlen) < 0) {
		snprintf(err, elen, "ICP socket: %s", strerror(errno));
		goto fail;
	}
	is->ev = event_new(base, is->fd, EV_READ | EV_PERSIST, on_readable,
	    is);
	if (is->ev == NULL || event_add(is->ev, NULL) < 0) {
		snprintf(err, elen, "out of memory");
		goto fail;
	}
	return is;
fail:
	icpsock_free(&is);
	return NULL;
}

void
icpsock_free(struct icpsock **isp)
{
	struct icpsock *is = *isp;

	if (is == NULL)
		return;
	*isp = NULL;
	/* queries end with their fetches, which are gone by now (their
	 * cancels ran when home's inbox was emptied) */
	for (size_t b = 0; b < QBUCKETS; b++)
		while (is->q[b] != NULL)
			query_free(is->q[b]);
	if (is->ev != NULL)
		event_free(is->ev);
	if (is->fd >= 0)
		close(is->fd);
	is->magic = 0;
	free(is);
}

void
icpsock_render_metrics(const struct icpsock *is, struct evbuffer *out)
{
	metric_head(out, PF(ICP_DROPPED));
	for (int r = 1; r < ICP_NERRS + 3; r++)
		metric_u64(out, PF(ICP_DROPPED), &drop_names[r], is->dropped[r]);
	metric_head(out, PF(ICP_ANSWERS));
	for (int k = 0; k < ANS_NKINDS; k++)
		metric_u64(out, PF(ICP_ANSWERS), &answer_names[k],
		    is->answered[k]);
	metric_single_u64(out, PF(ICP_TIMEOUTS), is->timeouts);
}
