/*
 * Invalidations between peers: when this node drops a URL because a
 * client changed or purged it, every live sumcache peer is told to drop
 * its copies too, so no node of the cluster serves the old body.
 *
 *   - Sent to every live sumcache peer, not only those whose summary
 *     claims the URL: a summary lags by up to the publication delay,
 *     and a copy stored since would survive; an invalidation is one
 *     small message per peer.
 *   - Batched: URLs dropped in one loop turn go in one message (at most
 *     WIRE_MAX_URLS of them, INVAL_MAX_BYTES in all).
 *   - Signed with the cluster key like summaries, under a MAC context of
 *     its own (peers/wire.c). A receiver takes one only from a peer's
 *     address that signs with that peer's name, with a time newer than
 *     the last it took from that peer, than its own start, and within an
 *     hour of its own clock, so a recorded message cannot be replayed to
 *     purge again, not even once after a restart (which forgets the last
 *     time taken). The cost: a peer whose clock is behind ours by d has
 *     its invalidations refused for the first d after we start; with
 *     NTP, milliseconds. Refusals are counted and logged, a line a
 *     second.
 *   - Never forwarded: the receiver drops its copies and stops there.
 *   - A peer that is down misses it; its copies age out as they would
 *     have. Counted both ways in the inter-proxy traffic
 *     (type="invalidation") and on arrival by result.
 */
#include "peers_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <event2/util.h>

#include "clock.h"
#include "ratelog.h"
#include "sc_assert.h"

/* An invalidation's arrival is checked against the receiver's clock:
 * older or newer than this, it is refused. */
#define INVAL_CLOCK_SLACK_US (3600ull * 1000000)

static void
on_sent(void *arg, CURLcode rc)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);
	struct peer *p = x->p;
	long status = 0;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK)
		peer_mark_down(p, xfer_why(x, rc));
	else if (status != 204)
		fprintf(stderr, "sumcache: peer %s refused our invalidation: "
		    "HTTP %ld\n", p->spec.name, status);
	xfer_free(&x);  /* may free p, if it has left the table */
}

/* The pending URLs, in one signed message, to every live sumcache peer. */
static void
flush(struct peers *ps)
{
	struct msg *m = calloc(1, sizeof(*m));
	uint64_t now = wall_us();

	/* strictly increasing, whatever the clock does */
	ps->inval_us = now > ps->inval_us ? now : ps->inval_us + 1;
	if (m != NULL) {
		m->refs = 1;
		m->type = IPM_INVALIDATION;
		if (wire_encode_invalidation(ps->conf.node_name, ps->inval_us,
		    (const char *const *)ps->inval_urls, ps->inval_n, ps->key,
		    ps->conf.keylen, &m->buf) < 0)
			msg_unref(&m);
	}
	for (size_t i = 0; i < ps->inval_n; i++)
		free(ps->inval_urls[i]);
	ps->inval_n = 0;
	ps->inval_bytes = 0;
	for (size_t i = 0; m != NULL && i < ps->n; i++) {
		struct peer *p = ps->v[i];
		if (!p->up || p->self || p->spec.type != PEER_SUMCACHE)
			continue;
		struct xfer *x = xfer_new(p, INVALIDATE_PATH);
		if (x == NULL)
			continue;
		m->refs++;
		x->m = m;
		x->hdrs = curl_slist_append(NULL,
		    "Content-Type: application/x-protobuf");
		x->hdrs = curl_slist_append(x->hdrs, "Expect:");
		curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, m->buf.p);
		curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)m->buf.len);
		peer_count(p, IPM_SENT, IPM_INVALIDATION, m->buf.len);
		xfer_start(&x, on_sent);
	}
	msg_unref(&m);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = SC_CAST(struct peers, arg, PEERS_MAGIC);

	(void)fd;
	(void)what;
	peers_enter(ps);
	ps->inval_asked = false;
	if (ps->inval_n > 0)
		flush(ps);
	peers_leave(ps);
}

int
invalidate_init(struct peers *ps)
{
	ps->inval_ev = event_new(ps->base, -1, 0, on_flush, ps);
	return ps->inval_ev != NULL ? 0 : -1;
}

void
invalidate_stop(struct peers *ps)
{
	if (ps->inval_ev != NULL)
		event_free(ps->inval_ev);
	ps->inval_ev = NULL;
	for (size_t i = 0; i < ps->inval_n; i++)
		free(ps->inval_urls[i]);
	ps->inval_n = 0;
}

static void invalidate(struct peers *ps, const char *url, size_t len);

void
peers_invalidate(struct peers *ps, const char *url, size_t len)
{
	if (ps->conf.keylen == 0 || len == 0)
		return;  /* no key: no sumcache peer could check it */
	peers_enter(ps);
	invalidate(ps, url, len);
	peers_leave(ps);
}

static void
invalidate(struct peers *ps, const char *url, size_t len)
{
	uint64_t skipped;

	if (len > WIRE_MAX_URL) {
		if (ratelog_due(&ps->inval_log, &skipped))
			fprintf(stderr, "sumcache: a URL of %zu bytes dropped "
			    "here is not sent to peers (at most %d; %llu more "
			    "since the last line)\n", len, WIRE_MAX_URL,
			    (unsigned long long)skipped);
		return;
	}
	if (ps->inval_n == WIRE_MAX_URLS ||
	    ps->inval_bytes + len > INVAL_MAX_BYTES - 1024)
		flush(ps);
	char *u = strndup(url, len);
	if (u == NULL)
		return;
	ps->inval_urls[ps->inval_n++] = u;
	ps->inval_bytes += len;
	/* sent at the end of home's loop turn, with whatever else is
	 * dropped by then */
	home_soon(ps, ps->inval_ev, &ps->inval_asked);
}

/* Counts and logs (a line a second) an invalidation refused; returns
 * status. */
static int
refuse(struct peers *ps, const struct sockaddr *from, int status,
    const char *why)
{
	char who[INET6_ADDRSTRLEN] = "?";
	uint64_t skipped;

	ps->count.inval_refused++;
	if (!ratelog_due(&ps->inval_refuse_log, &skipped))
		return status;
	evutil_inet_ntop(from->sa_family, from->sa_family == AF_INET6 ?
	    (const void *)&((const struct sockaddr_in6 *)from)->sin6_addr :
	    (const void *)&((const struct sockaddr_in *)from)->sin_addr,
	    who, sizeof(who));
	fprintf(stderr, "sumcache: invalidation from %s refused: %s (%llu "
	    "more since the last line)\n", who, why,
	    (unsigned long long)skipped);
	return status;
}

/* Why an invalidation at time t from p is not to be taken, or NULL. */
static const char *
stale_time(const struct peers *ps, const struct peer *p, uint64_t t)
{
	uint64_t now = wall_us();

	if (t <= p->inval_us)
		return "not newer than the last one taken from this peer "
		    "(a replay)";
	if (t < ps->started_us)
		return "older than this node's start (a replay, or the "
		    "sender's clock is behind)";
	if (t + INVAL_CLOCK_SLACK_US < now || t > now + INVAL_CLOCK_SLACK_US)
		return "more than an hour from this node's clock";
	return NULL;
}

/* The checks of peers_receive_invalidation, with the lock held: 204 and
 * w decoded, or the refusal. */
static int
receive_checked(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, struct wire_invalidation *wp,
    const char **why)
{
	struct wire_invalidation w;
	struct peer *p = table_by_addr(ps, from);

	if (p == NULL || ps->conf.keylen == 0) {
		*why = "not a sumcache peer";
		return refuse(ps, from, 403, *why);
	}
	switch (wire_decode_invalidation(in, len, ps->key, ps->conf.keylen,
	    &w)) {
	case WIRE_OK:
		break;
	case WIRE_NOMEM:
		*why = "out of memory";
		return 503;
	case WIRE_BAD_MAC:
		*why = "bad MAC";
		return refuse(ps, from, 403, *why);
	default:
		*why = "malformed invalidation";
		return refuse(ps, from, 400, *why);
	}
	p = sender_peer(ps, from, w.sender);
	*why = p == NULL ? "unknown sender" : stale_time(ps, p, w.time_us);
	if (*why != NULL) {
		wire_invalidation_clear(&w);
		return refuse(ps, from, 403, *why);
	}
	p->inval_us = w.time_us;
	peer_count(p, IPM_RECEIVED, IPM_INVALIDATION, len);
	*wp = w;
	return 204;
}

int
peers_receive_invalidation(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, peers_drop_f *drop, void *arg,
    const char **why)
{
	struct wire_invalidation w;
	uint64_t bad = 0;

	peers_enter(ps);
	int status = receive_checked(ps, from, in, len, &w, why);
	peers_leave(ps);
	if (status != 204)
		return status;
	/* the store's changes tell this table (the lock order) */
	for (size_t i = 0; i < w.nurls; i++)
		if (!drop(arg, w.urls[i], strlen(w.urls[i])))
			bad++;
	wire_invalidation_clear(&w);
	peers_enter(ps);
	ps->count.inval_bad_urls += bad;
	ps->count.inval_applied++;
	peers_leave(ps);
	return 204;
}
