/*
 * The summary exchange: publishing our filter, pushing it, pulling
 * peers' summaries, and probing peers that are down.
 *
 * Order and recovery. Deltas only make sense in sequence, so each peer has
 * a queue and at most one push in flight. Nothing is retried blindly: a
 * push that fails marks the peer down and empties its queue; when the peer
 * answers a probe again it gets our full summary, and a receiver that
 * finds a gap pulls the full summary itself. So every path back to
 * agreement goes through a full summary and a checksum.
 *
 * When to publish and what (delta or full, growth, epochs) is the
 * publisher's (summary/publisher.h); this file carries it out: a burst of
 * store events makes one publication at the end of the loop turn, the max
 * interval (and auto's threshold, which time alone can reach) is checked
 * every pub_tick_ms, the requests peers send us are counted for auto
 * (peers_asked), and every message is signed once and shared by the
 * queues of all live peers.
 */
#include "peers_impl.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "clock.h"
#include "inbox.h"
#include "sc_assert.h"

#define PROBE_EVERY_MS 250
#define PUSHQ_MAX 32

static void push_next(struct peer *p);

void
msg_unref(struct msg **mp)
{
	struct msg *m = *mp;

	*mp = NULL;
	if (m == NULL)
		return;
	SC_ASSERT(m->refs > 0);
	if (--m->refs > 0)
		return;
	free(m->buf.p);
	free(m);
}

/* A publication signed as this node; frees its payload. */
static struct msg *
make_msg(struct peers *ps, struct publication *pub)
{
	struct msg *m = calloc(1, sizeof(*m));

	if (m != NULL) {
		m->refs = 1;
		m->type = pub->full ? IPM_SUMMARY_FULL : IPM_SUMMARY_DELTA;
		if (wire_encode_publication(pub, ps->conf.node_name, ps->key,
		    ps->conf.keylen, &m->buf) < 0)
			msg_unref(&m);
	}
	sum_buf_free(&pub->payload);
	return m;
}

/* Whether a full message may be kept and sent again: not a timed one,
 * which says when it was sent (its peers reckon our clock from that, and
 * an old one would make them believe every claim longer). */
static bool
full_keeps(const struct peers *ps)
{
	return ps->conf.publish.claims != PUB_CLAIMS_TIMED;
}

/* The full summary of what was last published, for pulls and for peers
 * that come back. */
struct msg *
exchange_full_msg(struct peers *ps)
{
	if (ps->pull_msg != NULL) {
		ps->pull_msg->refs++;
		return ps->pull_msg;
	}
	struct publication pub = {0};
	struct msg *m = pub_last_full(ps->pub, wall_ms(), &pub) == 0 ?
	    make_msg(ps, &pub) : NULL;
	sum_buf_free(&pub.payload);
	if (m != NULL && full_keeps(ps)) {
		m->refs++;
		ps->pull_msg = m;
	}
	return m;
}

/* Without a write callback curl prints a body to stdout, where the
 * access log may go: a peer could forge its lines. */
static size_t
on_answer_body(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);

	(void)data;
	x->ignored += size * n;
	if (x->ignored > PEER_ANSWER_MAX) {
		x->too_big = true;
		return 0;
	}
	return size * n;
}

const char *
xfer_why(const struct xfer *x, CURLcode rc)
{
	return x->too_big || rc == CURLE_FILESIZE_EXCEEDED ?
	    "its answer's body is over 64 KB" : curl_easy_strerror(rc);
}

struct xfer *
xfer_new(struct peer *p, const char *path)
{
	struct peers *ps = p->owner;
	struct xfer *x = calloc(1, sizeof(*x));
	char url[400];

	if (x == NULL)
		return NULL;
	x->magic = XFER_MAGIC;
	x->ps = ps;
	x->easy = curl_easy_init();
	if (x->easy == NULL) {
		free(x);
		return NULL;
	}
	x->p = p;
	peer_hold(p);
	LIST_INSERT_HEAD(&ps->xfers, x, link);
	snprintf(url, sizeof(url), "%s%s", p->proxy_url, path);
	CURL *e = x->easy;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	if (ps->conf.source[0] != '\0')
		curl_easy_setopt(e, CURLOPT_INTERFACE, ps->conf.source);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)ps->conf.connect_timeout_ms);
	/* a full summary of the largest size still moves in well under
	 * this on any LAN; a peer slower than that is as good as down */
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
	    (long)ps->conf.timeout_ms * 4);
	/* a pull sets its own, with its own bound */
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_answer_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)PEER_ANSWER_MAX);
	return x;
}

void
xfer_free(struct xfer **xp)
{
	struct xfer *x = *xp;

	if (x == NULL)
		return;
	*xp = NULL;
	LIST_REMOVE(x, link);
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->hdrs);
	msg_unref(&x->m);
	free(x->resp.p);
	peer_put(&x->p);
	x->magic = 0;
	free(x);
}

static void
run_event(void *arg)
{
	event_active(arg, EV_TIMEOUT, 0);
}

void
home_soon(struct peers *ps, struct event *ev, bool *asked)
{
	if (*asked)
		return;
	*asked = true;
	if (pthread_equal(pthread_self(), ps->home))
		event_active(ev, EV_TIMEOUT, 0);
	else if (inbox_post(ps->inbox, run_event, NULL, ev) < 0)
		*asked = false;  /* ENOMEM: the next change asks again */
}

/* curlev's end of a transfer, on home's loop: x's own, locked. */
static void
on_xfer_done(void *arg, CURLcode rc)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);
	struct peers *ps = x->ps;

	peers_enter(ps);
	x->done(x, rc);
	peers_leave(ps);
}

bool
xfer_start(struct xfer **xp, curlev_done_f *done)
{
	struct xfer *x = *xp;
	struct peers *ps = x->ps;

	x->done = done;
	x->cx = (struct curlev_xfer){.done = on_xfer_done, .arg = x};
	if (!pthread_equal(pthread_self(), ps->home)) {
		x->next_kicked = NULL;
		*ps->kicked_tail = x;
		ps->kicked_tail = &x->next_kicked;
		home_soon(ps, ps->kick_ev, &ps->kick_asked);
		return true;
	}
	if (curlev_start(ps->curl, x->easy, &x->cx) == 0)
		return true;
	xfer_free(xp);
	return false;
}

/* Home starts the transfers other threads asked for, in their order
 * (a peer's invalidations must arrive in it). */
static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);
	struct xfer *x;

	(void)fd;
	(void)what;
	peers_enter(ps);
	ps->kick_asked = false;
	while ((x = ps->kicked) != NULL) {
		ps->kicked = x->next_kicked;
		if (ps->kicked == NULL)
			ps->kicked_tail = &ps->kicked;
		if (curlev_start(ps->curl, x->easy, &x->cx) != 0)
			x->done(x, CURLE_FAILED_INIT);
	}
	peers_leave(ps);
}

void
exchange_drop_queue(struct peer *p)
{
	while (p->pushq != NULL) {
		struct pushq *q = p->pushq;
		p->pushq = q->next;
		msg_unref(&q->m);
		free(q);
	}
}

void
exchange_enqueue(struct peer *p, struct msg *m)
{
	size_t n = 0;
	struct pushq **tail = &p->pushq;

	if (p->spec.type != PEER_SUMCACHE)
		return;  /* a Squid reads our digest instead */
	for (; *tail != NULL; tail = &(*tail)->next)
		n++;
	if (n >= PUSHQ_MAX) {
		/* the peer is far behind: it will see the gap and pull */
		exchange_drop_queue(p);
		tail = &p->pushq;
	}
	struct pushq *q = calloc(1, sizeof(*q));
	if (q == NULL)
		return;
	m->refs++;
	q->m = m;
	*tail = q;
	push_next(p);
}

static void
on_push_done(void *arg, CURLcode rc)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);
	struct peer *p = x->p;
	long status = 0;
	double secs = 0;

	p->pushing = false;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME, &secs);
	if (rc != CURLE_OK) {
		peer_mark_down(p, xfer_why(x, rc));
	} else {
		note_rtt(p, secs * 1000);
		peer_count(p, IPM_SENT, x->m->type, x->m->buf.len);
		/* 409: the peer saw a gap and is pulling from us already */
		if (status != 204 && status != 409)
			fprintf(stderr, "sumcache: peer %s refused our "
			    "summary: HTTP %ld\n", p->spec.name, status);
	}
	push_next(p);
	xfer_free(&x);  /* may free p, if it has left the table */
}

static void
push_next(struct peer *p)
{
	if (p->pushing || p->pushq == NULL || !p->up)
		return;
	struct pushq *q = p->pushq;
	struct xfer *x = xfer_new(p, SUMMARY_PATH);
	if (x == NULL)
		return;
	p->pushq = q->next;
	x->m = q->m;
	free(q);
	x->hdrs = curl_slist_append(NULL,
	    "Content-Type: application/x-protobuf");
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->m->buf.p);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)x->m->buf.len);
	p->pushing = xfer_start(&x, on_push_done);
}

/* Sends m to every live peer, and keeps it for pulls when it is full. */
static void
send_all(struct peers *ps, struct msg *m)
{
	msg_unref(&ps->pull_msg);
	if (m == NULL)
		return;
	if (m->type == IPM_SUMMARY_FULL && full_keeps(ps)) {
		m->refs++;
		ps->pull_msg = m;
	}
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->up)
			exchange_enqueue(ps->v[i], m);
	msg_unref(&m);
}

static void
publish(struct peers *ps)
{
	struct publication pub = {0};

	if (pub_publish(ps->pub, wall_ms(), &pub) < 0) {
		sum_buf_free(&pub.payload);
		return;
	}
	send_all(ps, make_msg(ps, &pub));
}

void
peers_announce(struct peers *ps)
{
	struct publication pub = {0};

	peers_enter(ps);
	if (pub_announce(ps->pub, wall_us(), wall_ms(), &pub) > 0)
		send_all(ps, make_msg(ps, &pub));
	else
		sum_buf_free(&pub.payload);
	peers_leave(ps);
}

void
peers_asked(struct peers *ps)
{
	atomic_fetch_add_explicit(&ps->asked, 1, memory_order_relaxed);
}

void
peers_count_requests(struct peers *ps, uint64_t (*count)(void *arg),
    void *arg)
{
	ps->requests = count;
	ps->requests_arg = arg;
	ps->requests_heard = count(arg);
}

/* Whether the threshold calls for a publication now; the publisher
 * hears of the peers' requests and the clients' since it last did
 * first. */
static bool
threshold_due(struct peers *ps)
{
	uint64_t now = wall_ms();
	uint64_t asked = atomic_exchange_explicit(&ps->asked, 0,
	    memory_order_relaxed);
	unsigned live = 0;

	if (asked > 0)
		pub_asked(ps->pub, asked, now);
	if (ps->requests != NULL) {
		uint64_t total = ps->requests(ps->requests_arg);
		if (total > ps->requests_heard)
			pub_requested(ps->pub, total - ps->requests_heard, now);
		ps->requests_heard = total;
	}
	for (size_t i = 0; i < ps->n; i++)
		live += ps->v[i]->up;
	return pub_threshold_reached(ps->pub, live, now);
}

static void
on_publish(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);

	(void)fd;
	(void)what;
	peers_enter(ps);
	ps->publish_asked = false;
	if (threshold_due(ps))
		publish(ps);
	peers_leave(ps);
}

/* Every tick: the max interval, and auto's threshold, which time alone
 * can reach (what pending changes cost grows while they wait). */
static void
on_interval(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);

	(void)fd;
	(void)what;
	peers_enter(ps);
	if (pub_interval_due(ps->pub, wall_ms()) || threshold_due(ps))
		publish(ps);
	peers_leave(ps);
}

static void
changed(struct peers *ps)
{
	/* checked once at the end of home's loop turn, so a burst of
	 * store events makes one publication */
	if (threshold_due(ps))
		home_soon(ps, ps->publish_ev, &ps->publish_asked);
}

/* Keys of the publisher's table walked per loop turn in a rebuild: about
 * a millisecond of filter updates. */
#define REBUILD_STEP 16384

static void
on_rebuild_step(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);
	struct publication pub = {0};

	(void)fd;
	(void)what;
	peers_enter(ps);
	ps->rebuild_asked = false;
	if (!pub_rebuild_step(ps->pub, REBUILD_STEP))
		home_soon(ps, ps->rebuild_ev, &ps->rebuild_asked);
	else if (pub_rebuild_end(ps->pub, wall_ms(), &pub) > 0)
		send_all(ps, make_msg(ps, &pub));
	sum_buf_free(&pub.payload);
	peers_leave(ps);
}

/* A filter grown full, or (timed) due a new base: rebuilt a step a loop
 * turn at a time. */
static void
maybe_rebuild(struct peers *ps)
{
	if (pub_wants_rebuild(ps->pub)) {
		pub_rebuild_begin(ps->pub, wall_us(), wall_ms());
		home_soon(ps, ps->rebuild_ev, &ps->rebuild_asked);
	}
}

void
peers_object_added(struct peers *ps, const char *key, size_t len,
    uint64_t expires_ms)
{
	struct sumkey k;

	/* an unhashable key (none today) is in no filter, and its removal
	 * is refused alike; the key is hashed before the lock */
	if (sumkey_make(ps->hasher, SUM_METHOD_GET, key, len, &k) < 0)
		return;
	peers_enter(ps);
	if (pub_added(ps->pub, &k, expires_ms, wall_ms())) {
		maybe_rebuild(ps);
		changed(ps);
	}
	peers_leave(ps);
}

void
peers_object_removed(struct peers *ps, const char *key, size_t len)
{
	struct sumkey k;

	if (sumkey_make(ps->hasher, SUM_METHOD_GET, key, len, &k) < 0)
		return;
	peers_enter(ps);
	bool held = pub_removed(ps->pub, &k);
	changed(ps);
	peers_leave(ps);
	if (!held)
		fprintf(stderr, "sumcache: summary: removal of a key it does "
		    "not hold (%.*s)\n", (int)(len > 200 ? 200 : len), key);
}

/* Claims whose copies are no longer fresh enough for a peer lapse. */
static void
on_expiry(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);

	(void)fd;
	(void)what;
	peers_enter(ps);
	if (pub_expire(ps->pub, wall_ms()) > 0)
		changed(ps);
	maybe_rebuild(ps);
	peers_leave(ps);
}

static size_t
on_pull_body(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);
	size_t len = size * n;

	if (x->resp.len + len > (x->p->spec.type == PEER_SUMCACHE ?
	    x->ps->conf.max_message : WIRE_MAX_BYTES)) {
		x->too_big = true;
		return 0;
	}
	return sum_buf_put(&x->resp, data, len) < 0 ? 0 : len;
}

/*
 * The end of a pull (a summary or a digest): counts the request, reads
 * its status and time. False when the peer left the table meanwhile; x
 * is freed then.
 */
bool
pull_ended(struct xfer *x, enum ipm_type type, long *status, double *secs)
{
	struct peer *p = x->p;

	p->pulling = false;
	*status = 0;
	*secs = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME, secs);
	peer_count(p, IPM_SENT, type, 0);
	if (p->retired) {
		xfer_free(&x);
		return false;
	}
	return true;
}

static void
on_pull_done(void *arg, CURLcode rc)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);
	struct peers *ps = x->ps;
	struct peer *p = x->p;
	long status;
	double secs;
	const char *why = NULL;

	if (!pull_ended(x, IPM_SUMMARY_PULL, &status, &secs))
		return;
	if (rc != CURLE_OK || status != 200) {
		char detail[160];
		if (rc != CURLE_OK)
			snprintf(detail, sizeof(detail), "pull: %s",
			    curl_easy_strerror(rc));
		else
			snprintf(detail, sizeof(detail), "pull: HTTP %ld",
			    status);
		peer_mark_down(p, detail);
		xfer_free(&x);
		return;
	}
	peer_count(p, IPM_RECEIVED, IPM_SUMMARY_PULL, x->resp.len);
	note_rtt(p, secs * 1000);
	struct wire_summary w;
	enum wire_err we = wire_decode(x->resp.p, x->resp.len, ps->key,
	    ps->conf.keylen, &w);
	if (we == WIRE_VERSION_DIFFERS) {
		receive_version_refused(ps, p->spec.name, &w, 0, &why);
	} else if (we != WIRE_OK) {
		receive_refuse(ps, we == WIRE_BAD_MAC ? REJ_BAD_MAC : we ==
		    WIRE_TOO_BIG ? REJ_TOO_BIG : REJ_MALFORMED, 0,
		    p->spec.name, "in a pulled summary", &why);
	} else if (!w.full || !(p->found ? name_found(ps, p, w.sender) :
	    strcmp(w.sender, p->spec.name) == 0)) {
		if (!p->self)
			receive_refuse(ps, REJ_NOT_PEER, 0, p->spec.name, "pulled "
			    "summary from another sender", &why);
	} else if (p->sum == NULL || !p->sum->loaded ||
	    w.epoch != p->sum->epoch || w.seq != p->sum->seq) {
		receive_apply(ps, p, &w, &why);
	}
	wire_summary_clear(&w);
	if (!p->self)
		peer_mark_up(p);
	xfer_free(&x);
}

/* A sumcache peer's full summary, or a Squid peer's digest. */
void
exchange_pull(struct peer *p)
{
	bool squid = p->spec.type == PEER_SQUID_DIGEST;

	if (p->pulling)
		return;
	struct xfer *x = xfer_new(p, squid ? DIGEST_PATH : SUMMARY_PATH);
	if (x == NULL)
		return;
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_pull_body);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)0);
	p->pulling = xfer_start(&x, squid ? sqpeer_digest_done : on_pull_done);
}

static void
probe(struct peers *ps)
{
	uint64_t now = mono_ms();

	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = ps->v[i];
		if (p->pulling || p->self)
			continue;
		if (p->up ? p->digest_wanted && now >= p->digest_due_ms :
		    now >= p->probe_at_ms)
			exchange_pull(p);
	}
}

static void
on_probe(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);

	(void)fd;
	(void)what;
	peers_enter(ps);
	probe(ps);
	peers_leave(ps);
}

int
exchange_init(struct peers *ps)
{
	LIST_INIT(&ps->xfers);
	ps->kicked = NULL;
	ps->kicked_tail = &ps->kicked;
	ps->kick_ev = event_new(ps->base, -1, 0, on_kick, ps);
	ps->publish_ev = event_new(ps->base, -1, 0, on_publish, ps);
	ps->interval_timer = event_new(ps->base, -1, EV_PERSIST, on_interval,
	    ps);
	ps->probe_timer = event_new(ps->base, -1, EV_PERSIST, on_probe, ps);
	ps->rebuild_ev = event_new(ps->base, -1, 0, on_rebuild_step, ps);
	ps->expiry_timer = event_new(ps->base, -1, EV_PERSIST, on_expiry, ps);
	return ps->kick_ev && ps->publish_ev && ps->interval_timer &&
	    ps->probe_timer &&
	    ps->rebuild_ev && ps->expiry_timer ? 0 : -1;
}

void
exchange_start(struct peers *ps)
{
	/* the publisher starts at seq 1, the empty summary, so a pull
	 * always has something */
	struct timeval iv = tv_ms(pub_tick_ms(&ps->conf.publish));
	event_add(ps->interval_timer, &iv);
	struct timeval pv = tv_ms(PROBE_EVERY_MS);
	event_add(ps->probe_timer, &pv);
	struct timeval ev = tv_ms(PUB_EXPIRE_TICK_MS);
	event_add(ps->expiry_timer, &ev);
	probe(ps);
}

void
exchange_set_pace(struct peers *ps, double threshold, uint64_t max_interval_ms)
{
	struct pub_conf *c = &ps->conf.publish;

	if (c->threshold == threshold && c->max_interval_ms == max_interval_ms)
		return;
	c->threshold = threshold;
	c->max_interval_ms = max_interval_ms;
	pub_set_pace(ps->pub, threshold, max_interval_ms);
	if (ps->conf.summaries && event_pending(ps->interval_timer, EV_TIMEOUT,
	    NULL)) {
		struct timeval iv = tv_ms(pub_tick_ms(c));
		event_add(ps->interval_timer, &iv);
	}
}

void
exchange_stop(struct peers *ps)
{
	struct xfer *x;

	/* never started: nothing of curl's to cancel */
	while ((x = ps->kicked) != NULL) {
		ps->kicked = x->next_kicked;
		xfer_free(&x);
	}
	ps->kicked_tail = &ps->kicked;
	while ((x = LIST_FIRST(&ps->xfers)) != NULL) {
		curlev_cancel(ps->curl, x->easy);
		xfer_free(&x);
	}
	if (ps->kick_ev)
		event_free(ps->kick_ev);
	if (ps->publish_ev)
		event_free(ps->publish_ev);
	if (ps->interval_timer)
		event_free(ps->interval_timer);
	if (ps->probe_timer)
		event_free(ps->probe_timer);
	if (ps->rebuild_ev)
		event_free(ps->rebuild_ev);
	if (ps->expiry_timer)
		event_free(ps->expiry_timer);
	ps->kick_ev = ps->publish_ev = ps->interval_timer = NULL;
	ps->probe_timer = NULL;
	ps->rebuild_ev = ps->expiry_timer = NULL;
	msg_unref(&ps->pull_msg);
}
