/*
 * The peer table: its storage, its references, whether each peer is up,
 * and which to ask; who the members are (peer lines, reloads, peer_dns,
 * the senders of messages) is members.c's.
 *
 *   - A peer is held (refs) by the table, by every transfer and by every
 *     fetch that uses it, so one that leaves mid-transfer is freed by the
 *     last of them; its traffic is folded into the table's own totals so
 *     counters never go down.
 *   - Up and down: any answer brings a peer up (and sends it our full
 *     summary, which it missed); a failed connect or a timeout takes it
 *     down, empties its queue, and it is probed again with backoff.
 *   - On a miss, the live peers whose summary holds the key are the
 *     candidates, those whose claims have been right first, then the
 *     fastest (smoothed RTT), peers_asked at most.
 *
 * Threads. Every worker calls in: its misses ask for candidates and an
 * owner and report how asking went, the cache's inserts and evictions
 * (under the store's queue lock) change our filter, and peers' messages
 * arrive on whichever worker accepted their connection. One lock, ps->lock,
 * guards the table, each peer's fields, the publisher, the queues and
 * the counters; every peers_* function takes it, for the length of the
 * call. What peers_new sets and a reload changes while the workers are
 * parked (base, curl, key, conf, the events) it does not guard. The
 * timers and the transfers are home's (the base's thread): a transfer
 * asked for on another thread waits in kicked for home's next loop
 * turn, and every transfer's end runs with the lock held.
 *
 * Lock order: the store's queue lock, then this one; so under this lock
 * nothing changes the store (peers_receive_invalidation drops its URLs
 * after letting go). The hit path never takes it. The cost accepted: a
 * worker's miss or insert waits while another holds it: for a lookup,
 * a few hundred nanoseconds; for a summary being decoded or encoded in
 * full, or a step of a filter's rebuild, up to a millisecond or so.
 */
#include "peers_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/util.h>

#include "clock.h"
#include "sc_assert.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

void
note_rtt(struct peer *p, double ms)
{
	p->rtt_ms = p->rtt_ms == 0 ? ms : 0.8 * p->rtt_ms + 0.2 * ms;
}

void
peer_count(struct peer *p, enum ipm_dir d, enum ipm_type t, uint64_t bytes)
{
	p->msgs[d][t]++;
	p->bytes[d][t] += bytes;
}

void
peers_count(struct peer *p, enum ipm_dir d, enum ipm_type t, uint64_t bytes)
{
	struct peers *ps = p->owner;

	peers_enter(ps);
	peer_count(p, d, t, bytes);
	peers_leave(ps);
}

void
peer_mark_down(struct peer *p, const char *why)
{
	if (p->up) {
		p->count.downs++;
		fprintf(stderr, "sumcache: peer %s (%s:%u) down: %s\n",
		    p->spec.name, p->spec.host, p->spec.port, why);
	}
	p->up = false;
	exchange_drop_queue(p);
	uint64_t now = mono_ms();
	p->backoff_ms = p->backoff_ms == 0 ? BACKOFF_MIN_MS :
	    p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    p->backoff_ms * 2;
	p->probe_at_ms = now + p->backoff_ms;
}

/* p answered a pull or sent us a valid summary: it is alive. */
void
peer_mark_up(struct peer *p)
{
	if (p->up)
		return;
	p->up = true;
	p->backoff_ms = 0;
	fprintf(stderr, "sumcache: peer %s (%s:%u) up\n", p->spec.name,
	    p->spec.host, p->spec.port);
	if (!p->owner->conf.summaries)
		return;
	/* it missed whatever we published while it was away */
	struct msg *m = exchange_full_msg(p->owner);
	if (m != NULL) {
		exchange_enqueue(p, m);
		msg_unref(&m);
	}
}

bool
same_addr(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0;
	return false;
}

uint16_t
addr_port(const struct sockaddr_storage *a)
{
	return ntohs(a->ss_family == AF_INET6 ?
	    ((const struct sockaddr_in6 *)a)->sin6_port :
	    ((const struct sockaddr_in *)a)->sin_port);
}

struct peer *
table_by_addr(struct peers *ps, const struct sockaddr *addr)
{
	for (size_t i = 0; i < ps->n; i++)
		if (same_addr(addr, &ps->v[i]->addr))
			return ps->v[i];
	return NULL;
}

struct peer *
peers_by_addr(struct peers *ps, const struct sockaddr *addr)
{
	peers_enter(ps);
	struct peer *p = table_by_addr(ps, addr);
	peers_leave(ps);
	return p;
}

static void
digest_served(struct peers *ps, const struct sockaddr *to, uint64_t bytes)
{
	struct peer *p = NULL;

	/* a Squid peer at that address first: peers may share a host */
	for (size_t i = 0; i < ps->n; i++)
		if (same_addr(to, &ps->v[i]->addr) && (p == NULL ||
		    ps->v[i]->spec.type == PEER_SQUID_DIGEST))
			p = ps->v[i];
	if (p == NULL)
		return;
	peer_count(p, IPM_RECEIVED, IPM_SQUID_DIGEST, 0);
	peer_count(p, IPM_SENT, IPM_SQUID_DIGEST, bytes);
}

void
peers_digest_served(struct peers *ps, const struct sockaddr *to,
    uint64_t bytes)
{
	peers_enter(ps);
	digest_served(ps, to, bytes);
	peers_leave(ps);
}

struct peer *
by_name(struct peers *ps, const char *name)
{
	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(ps->v[i]->spec.name, name) == 0)
			return ps->v[i];
	return NULL;
}

/* Room for one more peer in the table. */
int
table_reserve(struct peers *ps, size_t more)
{
	if (ps->n + more <= ps->cap)
		return 0;
	size_t cap = ps->cap ? 2 * ps->cap : 8;
	while (cap < ps->n + more)
		cap *= 2;
	struct peer **v = realloc(ps->v, cap * sizeof(*v));
	if (v == NULL)
		return -1;
	ps->v = v;
	ps->cap = cap;
	return 0;
}

/* A peer of ps's, not yet in its table. */
struct peer *
peer_alloc(struct peers *ps)
{
	struct peer *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->owner = ps;
	p->refs = 1;
	return p;
}

/* Adds p, with room reserved. */
void
table_insert(struct peers *ps, struct peer *p)
{
	SC_ASSERT(ps->n < ps->cap);
	p->serial = ++ps->serials;
	ps->v[ps->n++] = p;
}

struct peer *
table_add(struct peers *ps)
{
	struct peer *p;

	if (table_reserve(ps, 1) < 0 || (p = peer_alloc(ps)) == NULL)
		return NULL;
	table_insert(ps, p);
	return p;
}

/* Moves p's traffic into the table's own counts, so the totals in
 * /metrics never go down when a peer leaves. */
void
fold_traffic(struct peers *ps, struct peer *p)
{
	for (int d = 0; d < 2; d++)
		for (int t = 0; t < IPM_NTYPES; t++) {
			ps->gone_msgs[d][t] += p->msgs[d][t];
			ps->gone_bytes[d][t] += p->bytes[d][t];
			p->msgs[d][t] = p->bytes[d][t] = 0;
		}
	ps->any_gone = true;
}

static bool
in_table(const struct peers *ps, const struct peer *p)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i] == p)
			return true;
	return false;
}

void
peers_put(struct peer **pp)
{
	if (*pp == NULL)
		return;
	struct peers *ps = (*pp)->owner;

	peers_enter(ps);
	peer_put(pp);
	peers_leave(ps);
}

void
peer_put(struct peer **pp)
{
	struct peer *p = *pp;

	*pp = NULL;
	if (p == NULL)
		return;
	SC_ASSERT(p->refs > 0);
	/* the table's reference is the last only once it has left it */
	SC_ASSERT(p->refs > 1 || p->retired || p->owner->n == 0 ||
	    !in_table(p->owner, p));
	if (--p->refs > 0)
		return;
	/* what it did after it left (transfers and fetches in flight) */
	fold_traffic(p->owner, p);
	exchange_drop_queue(p);
	psum_free(&p->sum);
	free(p);
}

size_t
peers_list(struct peers *ps, struct peer **out, size_t max)
{
	size_t n = 0;

	SC_ASSERT(pthread_equal(pthread_self(), ps->home));
	peers_enter(ps);
	for (size_t i = 0; i < ps->n && n < max; i++)
		if (!ps->v[i]->self)
			out[n++] = ps->v[i];
	peers_leave(ps);
	return n;
}

void
peer_hold(struct peer *p)
{
	SC_ASSERT(p->refs > 0);
	p->refs++;
}

void
peers_hold(struct peer *p)
{
	peers_enter(p->owner);
	peer_hold(p);
	peers_leave(p->owner);
}

void
peers_alive(struct peer *p)
{
	peers_enter(p->owner);
	if (!p->retired)
		peer_mark_up(p);
	peers_leave(p->owner);
}

void
peers_silent(struct peer *p, const char *why)
{
	peers_enter(p->owner);
	peer_mark_down(p, why);
	peers_leave(p->owner);
}

/*
 * Squid peers are keyed as Squid keys its digest (squid-md5); with
 * another scheme of our own that is a second hash, made only when a Squid
 * peer has a digest to look in.
 */
static size_t candidates(struct peers *ps, const char *key, size_t len,
    const struct peer *owner, struct peer **out, size_t max);

size_t
peers_candidates(struct peers *ps, const char *key, size_t len,
    const struct peer *owner, struct peer **out, size_t max)
{
	peers_enter(ps);
	size_t n = candidates(ps, key, len, owner, out, max);
	peers_leave(ps);
	return n;
}

static size_t
candidates(struct peers *ps, const char *key, size_t len,
    const struct peer *owner, struct peer **out, size_t max)
{
	struct sumkey k, md5;
	bool md5_made = false;
	uint64_t now = mono_ms();
	size_t n = 0;

	if (max == 0 || sumkey_make(ps->hasher, SUM_METHOD_GET, key, len,
	    &k) < 0)
		return 0;
	/* placement: the owner that claims it is asked, as the owner */
	if (owner != NULL && owner->sum != NULL && owner->sum->loaded &&
	    psum_contains(owner->sum, &k, now))
		return 0;
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = ps->v[i];
		bool squid = p->spec.type == PEER_SQUID_DIGEST;
		if (p == owner)
			continue;
		if (squid)
			p->digest_wanted = true;  /* fetched lazily, as Squid */
		if (!p->up || p->sum == NULL || !p->sum->loaded ||
		    claim_skipped(&p->claims, now))
			continue;
		if (squid && ps->md5 != NULL && !md5_made) {
			if (sumkey_make(ps->md5, SUM_METHOD_GET, key, len,
			    &md5) < 0)
				continue;
			md5_made = true;
		}
		if (!psum_contains(p->sum, squid && ps->md5 ? &md5 : &k,
		    now))
			continue;
		/* insertion among the best max so far: all claimants are
		 * seen, the max best kept */
		size_t j = n < max ? n++ : max;
		if (j == max && !claim_before(p->claims.false_rate, p->rtt_ms,
		    out[max - 1]->claims.false_rate, out[max - 1]->rtt_ms))
			continue;
		if (j == max)
			peer_put(&out[--j]);
		peer_hold(p);
		while (j > 0 && claim_before(p->claims.false_rate, p->rtt_ms,
		    out[j - 1]->claims.false_rate, out[j - 1]->rtt_ms)) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = p;
	}
	return n;
}

/* How asking p went; a skip it starts is logged. */
static void
note_claim(struct peer *p, enum claim_outcome o)
{
	if (!claim_note(&p->claims, o, mono_ms()))
		return;
	p->count.claim_skips++;
	fprintf(stderr, "sumcache: peer %s: %s; its claims are not followed "
	    "for %.1f s\n", p->spec.name, o == CLAIM_FAILED ? "a request "
	    "failed" : "its claims keep proving false",
	    p->claims.skip_ms / 1000.0);
}

static void fetch_done(struct peers *ps, struct peer *p,
    enum peer_outcome outcome, double ms, uint64_t req_bytes,
    uint64_t resp_bytes);

void
peers_fetch_done(struct peers *ps, struct peer *p, enum peer_outcome outcome,
    double ms, uint64_t req_bytes, uint64_t resp_bytes)
{
	peers_enter(ps);
	fetch_done(ps, p, outcome, ms, req_bytes, resp_bytes);
	peers_leave(ps);
}

static void
fetch_done(struct peers *ps, struct peer *p, enum peer_outcome outcome,
    double ms, uint64_t req_bytes, uint64_t resp_bytes)
{
	peer_count(p, IPM_SENT, IPM_PEER_REQUEST, req_bytes);
	switch (outcome) {
	case PEER_HIT:
		p->count.remote_hits++;
		note_claim(p, CLAIM_HIT);
		break;
	case PEER_FALSE_HIT:
		ps->count.false_hits++;
		p->count.false_hits++;
		note_claim(p, CLAIM_FALSE);
		break;
	case PEER_FAILED:
		note_claim(p, CLAIM_FAILED);
		peer_mark_down(p, "request failed or timed out");
		return;
	case PEER_OWNER:
		/* its answer says nothing of its summary; it is alive */
		if (!p->owner->conf.summaries)
			peer_mark_up(p);
		break;
	}
	peer_count(p, IPM_RECEIVED, IPM_PEER_RESPONSE, resp_bytes);
	note_rtt(p, ms);
}

struct peers *
peers_new(struct event_base *base, struct curlev *curl, struct inbox *inbox,
    const struct peers_conf *conf, const struct peer_spec *specs, size_t n,
    char *err, size_t elen)
{
	struct peers *ps = calloc(1, sizeof(*ps));

	if (ps == NULL)
		goto nomem;
	ps->magic = PEERS_MAGIC;
	pthread_mutex_init(&ps->lock, NULL);
	ps->home = pthread_self();
	ps->base = base;
	ps->curl = curl;
	ps->inbox = inbox;
	ps->conf = *conf;
	ps->started_us = wall_us();
	/* unset: the protocol's own ceiling */
	if (ps->conf.max_message == 0 || ps->conf.max_message > WIRE_MAX_BYTES)
		ps->conf.max_message = WIRE_MAX_BYTES;
	if (ps->conf.max_held < ps->conf.max_message)
		ps->conf.max_held = ps->conf.max_message;
	ps->key = malloc(conf->keylen ? conf->keylen : 1); /* ICP: none */
	if (ps->key == NULL)
		goto nomem;
	if (conf->keylen > 0)
		memcpy(ps->key, conf->key, conf->keylen);
	ps->conf.key = ps->key;
	if (check_specs(conf->node_name, specs, n, err, elen) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		struct peer *p = table_add(ps);
		if (p == NULL)
			goto nomem;
		p->spec = specs[i];
		if (resolve(p, err, elen) < 0)
			goto fail;
	}
	ps->pub = pub_new(&conf->publish, wall_us(), wall_ms());
	ps->hasher = sumkey_hasher_new(conf->publish.scheme);
	if (want_md5(ps, specs, n) < 0)
		goto nomem;
	if (ps->pub == NULL || ps->hasher == NULL || exchange_init(ps) < 0 ||
	    invalidate_init(ps) < 0)
		goto nomem;
	return ps;
nomem:
	snprintf(err, elen, "out of memory");
fail:
	peers_free(&ps);
	return NULL;
}

void
peers_start(struct peers *ps)
{
	peers_enter(ps);
	if (!ps->conf.summaries) {
		/* ICP: peers are taken as up until they stop answering */
		for (size_t i = 0; i < ps->n; i++)
			ps->v[i]->up = true;
	} else {
		/* a Squid is taken as up until a fetch from it fails; its
		 * digest is fetched when a lookup first wants it */
		for (size_t i = 0; i < ps->n; i++)
			if (ps->v[i]->spec.type == PEER_SQUID_DIGEST)
				ps->v[i]->up = true;
		exchange_start(ps);
	}
	peers_leave(ps);
}

void
peers_free(struct peers **psp)
{
	struct peers *ps = *psp;

	if (ps == NULL)
		return;
	*psp = NULL;
	/* transfers hold peers: they go first */
	exchange_stop(ps);
	invalidate_stop(ps);
	for (size_t i = 0; i < ps->n; i++)
		peer_put(&ps->v[i]);
	pub_free(&ps->pub);
	sumkey_hasher_free(&ps->hasher);
	sumkey_hasher_free(&ps->md5);
	free(ps->v);
	free(ps->key);
	pthread_mutex_destroy(&ps->lock);
	ps->magic = 0;
	free(ps);
}

const struct peer_spec *
peer_spec(const struct peer *p)
{
	return &p->spec;
}

void
peer_spec_copy(const struct peer *p, struct peer_spec *out)
{
	peers_enter(p->owner);
	*out = p->spec;
	peers_leave(p->owner);
}

const char *
peer_proxy_url(const struct peer *p)
{
	return p->proxy_url;
}

const char *
peer_authority(const struct peer *p)
{
	return p->proxy_url + sizeof(PEER_URL_SCHEME) - 1;
}

const struct sockaddr_storage *
peer_addr(const struct peer *p)
{
	return &p->addr;
}

bool
peer_is_up(const struct peer *p)
{
	peers_enter(p->owner);
	bool up = p->up;
	peers_leave(p->owner);
	return up;
}

uint64_t
peer_serial(const struct peer *p)
{
	return p->serial;
}
