/*
 * See peers.h.
 *
 * Order and recovery. Deltas only make sense in sequence, so each peer has
 * a queue and at most one push in flight. Nothing is retried blindly: a
 * push that fails marks the peer down and empties its queue; when the peer
 * answers a probe again it gets our full summary, and a receiver that
 * finds a gap pulls the full summary itself. So every path back to
 * agreement goes through a full summary and a checksum.
 *
 * Epochs are the wall-clock time in microseconds when this node's filter
 * was made, so a restarted node's messages are newer than anything it sent
 * before, however soon it restarts.
 */
#include "peers.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/util.h>

#include "curlev.h"
#include "digest.h"
#include "ratelog.h"
#include "sc_assert.h"

#define PROBE_EVERY_MS 250
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define PUSHQ_MAX 32
#define SUMMARY_PATH "/sumcache/v1/summary"
/* Squid peers: Squid's own rules for fetching a peer's digest (at
 * Expires + 5 min, never sooner than 5 min after the last); a digest
 * refused or missing (a Squid without a cache_dir has none) is asked for
 * again after a minute, doubling to an hour */
#define DIGEST_PATH "/squid-internal-periodic/store_digest"
#define DIGEST_SLACK_MS (5 * 60 * 1000)
#define DIGEST_RETRY_MIN_MS (60 * 1000)
#define DIGEST_RETRY_MAX_MS (60 * 60 * 1000)
/* a later Expires is not believed: a peer's wrong clock must not freeze
 * the digest we hold of it */
#define DIGEST_EXPIRES_MAX_MS (24 * 60 * 60 * 1000)

/* A signed message shared by every peer's queue. */
struct msg {
	unsigned refs;
	enum ipm_type type;
	struct sum_buf buf;
};

struct pushq {
	struct msg *m;
	struct pushq *next;
};

struct peers {
	struct event_base *base;
	struct curlev *curl;
	struct peers_conf conf;
	uint8_t *key;
	struct peer **v;              /* the table: configured, then found */
	size_t n, cap;
	uint64_t false_hits;
	/* traffic of peers that left the table, so totals never go down */
	uint64_t gone_msgs[2][IPM_NTYPES];
	uint64_t gone_bytes[2][IPM_NTYPES];
	bool any_gone;
	struct cbf *local;
	uint64_t capacity;            /* objects local was sized for */
	struct cbf *next;             /* being rebuilt larger, or NULL */
	uint64_t rebuilds;
	struct sumkey_hasher *hasher;
	struct sumkey_hasher *md5;    /* Squid peers' keys, when not hasher */
	uint64_t seq;                 /* of the last publication */
	struct msg *pull_msg;         /* full summary of seq, made lazily */
	struct event *publish_ev;     /* publish at the end of this turn */
	struct event *interval_timer;
	struct event *probe_timer;
	uint64_t last_publish_ms;
	uint64_t publications[2];     /* [0] delta, [1] full */
	uint64_t rejected[REJ_NREASONS];
	struct ratelog rejlog[REJ_NREASONS];
	struct xfer *xfers;
	uint64_t held;                /* bytes of summary bodies arriving */
};

/* One transfer to a peer: a push or a pull. */
struct xfer {
	struct xfer *prev, *next;  /* in flight, for peers_free */
	struct peers *ps;
	struct peer *p;
	CURL *easy;
	struct curl_slist *hdrs;
	struct curlev_xfer cx;
	struct msg *m;          /* push: what is sent */
	struct sum_buf resp;    /* pull: what comes back */
	bool too_big;
};

static const char *const ipm_names[IPM_NTYPES] = {
	"summary_full", "summary_delta", "summary_pull", "icp_query",
	"icp_reply", "peer_request", "peer_response", "squid_digest",
};

static const char *const reject_names[REJ_NREASONS] = {
	"not_peer", "bad_mac", "malformed", "too_big", "old", "duplicate",
	"params", "gap", "checksum", "busy", "no_room", "slow",
};

static uint64_t
epoch_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- configuration ---- */

/* "HOST:PORT [options]" after a peer's name; expect says what a bad or
 * missing address is called in the error. */
int
peer_target_parse(const char *text, struct peer_spec *ps, const char *expect,
    const char **why)
{
	char buf[512], *save, *tok;

	if (strlen(text) >= sizeof(buf)) {
		*why = "too long";
		return -1;
	}
	strcpy(buf, text);
	tok = strtok_r(buf, " \t", &save);
	char *colon = tok ? strrchr(tok, ':') : NULL;
	char *end = NULL;
	unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon == tok || *end || port == 0 ||
	    port > 65535 || (size_t)(colon - tok) >= sizeof(ps->host)) {
		*why = expect;
		return -1;
	}
	/* [v6]:port */
	const char *h = tok;
	size_t hl = (size_t)(colon - tok);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(ps->host, h, hl);
	ps->host[hl] = '\0';
	ps->port = (uint16_t)port;
	ps->type = PEER_SUMCACHE;
	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		if (strcmp(tok, "proxy_only") == 0) {
			ps->proxy_only = true;
		} else if (strcmp(tok, "type=sumcache") == 0) {
			ps->type = PEER_SUMCACHE;
		} else if (strcmp(tok, "type=squid-digest") == 0) {
			ps->type = PEER_SQUID_DIGEST;
		} else if (strncmp(tok, "icp=", 4) == 0) {
			port = strtoul(tok + 4, &end, 10);
			if (*end || port == 0 || port > 65535) {
				*why = "icp= needs a port";
				return -1;
			}
			ps->icp_port = (uint16_t)port;
		} else if (strncmp(tok, "type=", 5) == 0) {
			*why = "unknown peer type (sumcache, squid-digest)";
			return -1;
		} else {
			*why = "unknown peer option (proxy_only, type=, icp=)";
			return -1;
		}
	}
	return 0;
}

int
peer_spec_parse(const char *text, struct peer_spec *ps, const char **why)
{
	const char *expect = "expected NAME HOST:PORT";
	size_t n = strcspn(text, " \t");

	memset(ps, 0, sizeof(*ps));
	if (n == 0) {
		*why = expect;
		return -1;
	}
	if (n > WIRE_MAX_SENDER) {
		*why = "peer name too long";
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!((text[i] >= 'a' && text[i] <= 'z') ||
		    (text[i] >= 'A' && text[i] <= 'Z') ||
		    (text[i] >= '0' && text[i] <= '9') ||
		    strchr("-._", text[i]))) {
			*why = "peer name may hold only letters, digits, - . _";
			return -1;
		}
	memcpy(ps->name, text, n);
	ps->name[n] = '\0';
	return peer_target_parse(text + n, ps, expect, why);
}

/* ---- messages ---- */

static void
msg_unref(struct msg **mp)
{
	struct msg *m = *mp;

	*mp = NULL;
	if (m == NULL || --m->refs > 0)
		return;
	free(m->buf.p);
	free(m);
}

/* Signs a summary of the local filter: payload as encoded by summary/. */
static struct msg *
make_msg(struct peers *ps, bool full, const struct sum_buf *payload,
    uint64_t checksum)
{
	struct msg *m = calloc(1, sizeof(*m));
	struct wire_summary w = {
		.epoch = ps->local->epoch,
		.seq = ps->seq,
		.scheme = ps->local->scheme,
		.m = ps->local->m,
		.k = ps->local->k,
		.full = full,
		.payload = payload->p,
		.payload_len = payload->len,
		.checksum = checksum,
		.entries = ps->local->entries,
	};

	if (m == NULL)
		return NULL;
	snprintf(w.sender, sizeof(w.sender), "%s", ps->conf.node_name);
	m->refs = 1;
	m->type = full ? IPM_SUMMARY_FULL : IPM_SUMMARY_DELTA;
	if (wire_encode(&w, ps->key, ps->conf.keylen, &m->buf) < 0)
		msg_unref(&m);
	return m;
}

/* The full summary of what was last published, for pulls and for peers
 * that come back. */
static struct msg *
full_msg(struct peers *ps)
{
	if (ps->pull_msg == NULL) {
		struct sum_buf b = {0};
		if (sum_encode_full(ps->local->published, ps->local->m, &b) ==
		    0)
			ps->pull_msg = make_msg(ps, true, &b, sum_checksum(
			    ps->local->published, ps->local->m));
		free(b.p);
	}
	if (ps->pull_msg != NULL)
		ps->pull_msg->refs++;
	return ps->pull_msg;
}

/* ---- transfers ---- */

static void xfer_free(struct xfer **xp);
static void push_next(struct peer *p);
static void pull(struct peer *p);

static struct xfer *
xfer_new(struct peer *p, const char *path)
{
	struct peers *ps = p->owner;
	struct xfer *x = calloc(1, sizeof(*x));
	char url[400];

	if (x == NULL)
		return NULL;
	x->ps = ps;
	x->easy = curl_easy_init();
	if (x->easy == NULL) {
		free(x);
		return NULL;
	}
	x->p = p;
	p->refs++;
	x->next = ps->xfers;
	if (ps->xfers)
		ps->xfers->prev = x;
	ps->xfers = x;
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
	return x;
}

static void
xfer_free(struct xfer **xp)
{
	struct xfer *x = *xp;

	if (x == NULL)
		return;
	*xp = NULL;
	if (x->prev)
		x->prev->next = x->next;
	else
		x->ps->xfers = x->next;
	if (x->next)
		x->next->prev = x->prev;
	curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->hdrs);
	msg_unref(&x->m);
	free(x->resp.p);
	peers_put(&x->p);
	free(x);
}

/* Starts x on the loop; on failure frees it and returns false. */
static bool
xfer_start(struct xfer **xp, curlev_done_f *done)
{
	struct xfer *x = *xp;

	x->cx = (struct curlev_xfer){.done = done, .arg = x};
	if (curlev_start(x->ps->curl, x->easy, &x->cx) == 0)
		return true;
	xfer_free(xp);
	return false;
}

static void
note_rtt(struct peer *p, double ms)
{
	p->rtt_ms = p->rtt_ms == 0 ? ms : 0.8 * p->rtt_ms + 0.2 * ms;
}

static void
count(struct peer *p, enum ipm_dir d, enum ipm_type t, uint64_t bytes)
{
	p->msgs[d][t]++;
	p->bytes[d][t] += bytes;
}

void
peers_count(struct peer *p, enum ipm_dir d, enum ipm_type t, uint64_t bytes)
{
	count(p, d, t, bytes);
}

static void
pushq_clear(struct peer *p)
{
	while (p->pushq != NULL) {
		struct pushq *q = p->pushq;
		p->pushq = q->next;
		msg_unref(&q->m);
		free(q);
	}
}

static void
peer_down(struct peer *p, const char *why)
{
	if (p->up) {
		p->downs++;
		fprintf(stderr, "sumcache: peer %s (%s:%u) down: %s\n",
		    p->spec.name, p->spec.host, p->spec.port, why);
	}
	p->up = false;
	pushq_clear(p);
	uint64_t now = mono_ms();
	p->backoff_ms = p->backoff_ms == 0 ? BACKOFF_MIN_MS :
	    p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS :
	    p->backoff_ms * 2;
	p->probe_at_ms = now + p->backoff_ms;
}

static void enqueue(struct peer *p, struct msg *m);
static struct msg *full_msg(struct peers *ps);

/* p answered a pull or sent us a valid summary: it is alive. */
static void
peer_up(struct peer *p)
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
	struct msg *m = full_msg(p->owner);
	if (m != NULL) {
		enqueue(p, m);
		msg_unref(&m);
	}
}

static void
enqueue(struct peer *p, struct msg *m)
{
	size_t n = 0;
	struct pushq **tail = &p->pushq;

	if (p->spec.type != PEER_SUMCACHE)
		return;  /* a Squid reads our digest instead */
	for (; *tail != NULL; tail = &(*tail)->next)
		n++;
	if (n >= PUSHQ_MAX) {
		/* the peer is far behind: it will see the gap and pull */
		pushq_clear(p);
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
	struct xfer *x = arg;
	struct peer *p = x->p;
	long status = 0;
	double secs = 0;

	p->pushing = false;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME, &secs);
	if (rc != CURLE_OK) {
		peer_down(p, curl_easy_strerror(rc));
	} else {
		note_rtt(p, secs * 1000);
		count(p, IPM_SENT, x->m->type, x->m->buf.len);
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

/* ---- publishing ---- */

static void
publish(struct peers *ps)
{
	struct sum_buf b = {0};
	bool full;
	uint64_t checksum;

	if (sum_publish(ps->local, &b, &full, &checksum) < 0) {
		free(b.p);
		return;
	}
	ps->seq++;
	ps->last_publish_ms = mono_ms();
	msg_unref(&ps->pull_msg);
	struct msg *m = make_msg(ps, full, &b, checksum);
	free(b.p);
	if (m == NULL)
		return;
	ps->publications[full]++;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->up)
			enqueue(ps->v[i], m);
	msg_unref(&m);
}

static uint64_t
threshold_changes(const struct peers *ps)
{
	double t = ps->conf.threshold * (double)ps->local->entries;

	return t < 1 ? 1 : (uint64_t)t;
}

static void
on_publish(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = arg;

	(void)fd;
	(void)what;
	if (ps->local->changes >= threshold_changes(ps))
		publish(ps);
}

static void
on_interval(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = arg;

	(void)fd;
	(void)what;
	if (ps->local->changes > 0 &&
	    mono_ms() - ps->last_publish_ms >= ps->conf.max_interval_ms)
		publish(ps);
}

static void
changed(struct peers *ps)
{
	/* checked once at the end of the loop turn, so a burst of store
	 * events makes one publication */
	if (ps->local->changes >= threshold_changes(ps) &&
	    !event_pending(ps->publish_ev, EV_TIMEOUT, NULL))
		event_active(ps->publish_ev, EV_TIMEOUT, 0);
}

void
peers_object_added(struct peers *ps, const char *key, size_t len)
{
	struct sumkey k;

	if (sumkey_make(ps->hasher, SUM_METHOD_GET, key, len, &k) < 0)
		return;
	cbf_add(ps->local, &k);
	changed(ps);
}

void
peers_object_removed(struct peers *ps, const char *key, size_t len)
{
	struct sumkey k;

	if (sumkey_make(ps->hasher, SUM_METHOD_GET, key, len, &k) < 0)
		return;
	if (!cbf_remove(ps->local, &k))
		fprintf(stderr, "sumcache: summary: removal of a key it does "
		    "not hold (%.*s)\n", (int)(len > 200 ? 200 : len), key);
	changed(ps);
}

/* ---- growing ---- */

bool
peers_wants_rebuild(const struct peers *ps)
{
	return ps->next == NULL && ps->local->entries > ps->capacity;
}

void
peers_rebuild_begin(struct peers *ps)
{
	/* room to double again before the next rebuild */
	uint64_t cap = 2 * ps->local->entries;
	uint64_t m = cbf_size_for(cap, ps->conf.bits_per_entry);

	if (m > WIRE_MAX_BITS)
		m = WIRE_MAX_BITS;
	ps->next = cbf_new(ps->conf.scheme, m, ps->conf.k, epoch_now());
	if (ps->next != NULL)
		ps->capacity = cap; /* asked once per growth, even on ENOMEM */
	else
		ps->capacity *= 2;
}

static void
rebuild_key(struct peers *ps, const char *key, size_t len, bool add)
{
	struct sumkey k;

	if (ps->next == NULL || sumkey_make(ps->hasher, SUM_METHOD_GET, key,
	    len, &k) < 0)
		return;
	if (add)
		cbf_add(ps->next, &k);
	else
		cbf_remove(ps->next, &k);
}

void
peers_rebuild_add(struct peers *ps, const char *key, size_t len)
{
	rebuild_key(ps, key, len, true);
}

void
peers_rebuild_remove(struct peers *ps, const char *key, size_t len)
{
	rebuild_key(ps, key, len, false);
}

void
peers_rebuild_end(struct peers *ps)
{
	if (ps->next == NULL)
		return;
	cbf_free(&ps->local);
	ps->local = ps->next;
	ps->next = NULL;
	ps->rebuilds++;
	/* a new epoch starts with a full summary at sequence 1: mark it
	 * published so the next delta is relative to it */
	cbf_mark_published(ps->local);
	ps->seq = 1;
	ps->last_publish_ms = mono_ms();
	msg_unref(&ps->pull_msg);
	struct msg *m = full_msg(ps);
	if (m == NULL)
		return;
	ps->publications[1]++;
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->up)
			enqueue(ps->v[i], m);
	msg_unref(&m);
}

/* ---- the table ---- */

static bool
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

static uint16_t
addr_port(const struct sockaddr_storage *a)
{
	return ntohs(a->ss_family == AF_INET6 ?
	    ((const struct sockaddr_in6 *)a)->sin6_port :
	    ((const struct sockaddr_in *)a)->sin_port);
}

struct peer *
peers_by_addr(struct peers *ps, const struct sockaddr *addr)
{
	for (size_t i = 0; i < ps->n; i++)
		if (same_addr(addr, &ps->v[i]->addr))
			return ps->v[i];
	return NULL;
}

void
peers_digest_served(struct peers *ps, const struct sockaddr *to,
    uint64_t bytes)
{
	struct peer *p = NULL;

	/* a Squid peer at that address first: peers may share a host */
	for (size_t i = 0; i < ps->n; i++)
		if (same_addr(to, &ps->v[i]->addr) && (p == NULL ||
		    ps->v[i]->spec.type == PEER_SQUID_DIGEST))
			p = ps->v[i];
	if (p == NULL)
		return;
	count(p, IPM_RECEIVED, IPM_SQUID_DIGEST, 0);
	count(p, IPM_SENT, IPM_SQUID_DIGEST, bytes);
}

static struct peer *
by_name(struct peers *ps, const char *name)
{
	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(ps->v[i]->spec.name, name) == 0)
			return ps->v[i];
	return NULL;
}

/* host, port, addr and proxy_url from a resolved address. */
static void
set_endpoint(struct peer *p, const struct sockaddr *sa, socklen_t len)
{
	memcpy(&p->addr, sa, len);
	p->addrlen = len;
	bool v6 = sa->sa_family == AF_INET6;
	if (p->spec.host[0] == '\0')
		evutil_inet_ntop(sa->sa_family, v6 ?
		    (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr :
		    (const void *)&((const struct sockaddr_in *)sa)->sin_addr,
		    p->spec.host, sizeof(p->spec.host));
	p->spec.port = addr_port(&p->addr);
	v6 = strchr(p->spec.host, ':') != NULL;
	snprintf(p->proxy_url, sizeof(p->proxy_url), "http://%s%s%s:%u",
	    v6 ? "[" : "", p->spec.host, v6 ? "]" : "", p->spec.port);
}

/* A found peer is called by its address until it names itself (node
 * names cannot hold ':' or '[', so this is never somebody's name). */
static void
unname(struct peer *p)
{
	bool v6 = strchr(p->spec.host, ':') != NULL;

	snprintf(p->spec.name, sizeof(p->spec.name), "%s%.46s%s:%u",
	    v6 ? "[" : "", p->spec.host, v6 ? "]" : "", p->spec.port);
	p->named = false;
}

static struct peer *
table_add(struct peers *ps)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 8;
		struct peer **v = realloc(ps->v, cap * sizeof(*v));
		if (v == NULL)
			return NULL;
		ps->v = v;
		ps->cap = cap;
	}
	struct peer *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->owner = ps;
	p->refs = 1;
	ps->v[ps->n++] = p;
	return p;
}

/* Moves p's traffic into the table's own counts, so the totals in
 * /metrics never go down when a peer leaves. */
static void
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

void
peers_put(struct peer **pp)
{
	struct peer *p = *pp;

	*pp = NULL;
	if (p == NULL || --p->refs > 0)
		return;
	/* what it did after it left (transfers and fetches in flight) */
	fold_traffic(p->owner, p);
	pushq_clear(p);
	psum_free(&p->sum);
	free(p);
}

static void
retire(struct peers *ps, size_t i, const char *why)
{
	struct peer *p = ps->v[i];

	if (!p->self)
		fprintf(stderr, "sumcache: peer %s (%s:%u) leaves: %s\n",
		    p->spec.name, p->spec.host, p->spec.port, why);
	memmove(&ps->v[i], &ps->v[i + 1], (ps->n - i - 1) * sizeof(*ps->v));
	ps->n--;
	p->retired = true;
	p->up = false;
	pushq_clear(p);
	psum_free(&p->sum);
	fold_traffic(ps, p);
	peers_put(&p);
}

/* Whether p is the found peer at a (address and port). */
static bool
found_at(const struct peer *p, const struct sockaddr_storage *a)
{
	return p->found && same_addr((const struct sockaddr *)a, &p->addr) &&
	    addr_port(a) == p->spec.port;
}

void
peers_found(struct peers *ps, const struct peer_spec *tmpl,
    const struct sockaddr_storage *addrs, size_t n)
{
	/* leavers first, so their places go to newcomers */
	for (size_t i = ps->n; i-- > 0;) {
		bool listed = false;
		for (size_t j = 0; j < n && !listed; j++)
			listed = found_at(ps->v[i], &addrs[j]);
		if (ps->v[i]->found && !listed)
			retire(ps, i, "no longer in DNS");
	}
	for (size_t j = 0; j < n; j++) {
		bool known = false;
		for (size_t i = 0; i < ps->n && !known; i++)
			known = found_at(ps->v[i], &addrs[j]);
		if (known)
			continue;
		if (ps->n == PEERS_MAX) {
			fprintf(stderr, "sumcache: peer_dns: %zu addresses, "
			    "room for %d peers; the rest are left out\n", n,
			    PEERS_MAX);
			return;
		}
		struct peer *p = table_add(ps);
		if (p == NULL)
			return;
		p->spec = *tmpl;
		p->spec.host[0] = '\0';
		p->found = true;
		set_endpoint(p, (const struct sockaddr *)&addrs[j],
		    addrs[j].ss_family == AF_INET6 ?
		    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
		unname(p);
		fprintf(stderr, "sumcache: peer %s found through DNS\n",
		    p->spec.name);
		/* pulled on the next probe */
	}
}

/*
 * A found peer's signed message says who it is: this node itself (DNS
 * lists every member, us included), or a name it keeps from now on. A
 * name held by another found peer moves here: the node behind it has a
 * new address. A configured peer's name is refused. False when p is not
 * a peer to use under that name.
 */
static bool
name_found(struct peers *ps, struct peer *p, const char *sender)
{
	if (strcmp(sender, ps->conf.node_name) == 0) {
		if (!p->self)
			fprintf(stderr, "sumcache: peer %s is this node; left "
			    "out\n", p->spec.name);
		p->self = true;
		p->up = false;
		pushq_clear(p);
		return false;
	}
	if (p->named && strcmp(p->spec.name, sender) == 0)
		return true;
	struct peer *holder = by_name(ps, sender);
	if (holder != NULL && !holder->found)
		return false;
	if (holder != NULL)
		unname(holder);
	fprintf(stderr, "sumcache: peer %s is %s\n", p->spec.name, sender);
	snprintf(p->spec.name, sizeof(p->spec.name), "%s", sender);
	p->named = true;
	return true;
}

/*
 * The peer at from that signed as sender. A configured peer must use its
 * peer line's name (peers on one host share an address, so the name
 * decides); a found one is known by its address and names itself.
 */
static struct peer *
sender_peer(struct peers *ps, const struct sockaddr *from,
    const char *sender)
{
	struct peer *p = by_name(ps, sender);

	if (p != NULL && same_addr(from, &p->addr))
		return p->spec.type == PEER_SUMCACHE ? p : NULL;
	for (size_t i = 0; i < ps->n; i++) {
		p = ps->v[i];
		if (p->found && same_addr(from, &p->addr))
			return name_found(ps, p, sender) ? p : NULL;
	}
	return NULL;
}

/* ---- receiving ---- */

static int
refuse(struct peers *ps, enum reject r, int status, const char *who,
    const char *detail, const char **why)
{
	ps->rejected[r]++;
	*why = reject_names[r];
	uint64_t skipped;
	if (!ratelog_due(&ps->rejlog[r], &skipped))
		return status;
	fprintf(stderr, "sumcache: summary from %s refused: %s%s%s", who,
	    reject_names[r], detail ? ": " : "", detail ? detail : "");
	if (skipped > 0)
		fprintf(stderr, " (and %llu more since the last line)",
		    (unsigned long long)skipped);
	fputc('\n', stderr);
	return status;
}

void
peers_refused(struct peers *ps, enum reject r, const char *who)
{
	const char *why;

	refuse(ps, r, 0, who, NULL, &why);
}

/*
 * Applies a decoded summary from p to what we hold. Returns an HTTP
 * status; on anything but 204 the held summary is unchanged.
 */
static int
apply(struct peers *ps, struct peer *p, const struct wire_summary *w,
    const char **why)
{
	struct psum *s = p->sum;
	int rc;

	if (w->scheme != ps->conf.scheme)
		return refuse(ps, REJ_PARAMS, 422, p->spec.name,
		    "hash scheme differs from ours", why);
	if (s != NULL && s->loaded && w->full && w->epoch == s->epoch &&
	    w->seq == s->seq && w->checksum == s->checksum) {
		/* the full summary we already hold (it reached us by a pull
		 * and a push at once): changes nothing, so no alarm */
		ps->rejected[REJ_DUPLICATE]++;
		*why = reject_names[REJ_DUPLICATE];
		return 409;
	}
	if (s != NULL && s->loaded && (w->epoch < s->epoch ||
	    (w->epoch == s->epoch && w->seq <= s->seq)))
		return refuse(ps, REJ_OLD, 409, p->spec.name,
		    "not newer than what we hold", why);
	if (w->full) {
		if (s == NULL && (s = psum_new(w->scheme, w->m, w->k)) == NULL)
			return 503;
		rc = psum_load_full(s, w->scheme, w->m, w->k, w->epoch, w->seq,
		    w->payload, w->payload_len, w->checksum);
		if (p->sum == NULL) {
			if (rc == 0)
				p->sum = s;
			else
				psum_free(&s);
		}
	} else {
		rc = s == NULL ? SUM_ERR_GAP : psum_apply_delta(s, w->epoch,
		    w->seq, w->payload, w->payload_len, w->checksum);
	}
	switch (rc) {
	case 0:
		p->sum_entries = w->entries;
		p->sum_updated_ms = mono_ms();
		return 204;
	case SUM_ERR_GAP:
		pull(p);
		return refuse(ps, REJ_GAP, 409, p->spec.name, "pulling the "
		    "full summary", why);
	case SUM_ERR_CHECKSUM:
		pull(p);
		return refuse(ps, REJ_CHECKSUM, 409, p->spec.name, "pulling "
		    "the full summary", why);
	case SUM_ERR_PARAMS:
		return refuse(ps, REJ_PARAMS, 422, p->spec.name, NULL, why);
	case SUM_ERR_NOMEM:
		*why = "out of memory";
		return 503;
	default:
		return refuse(ps, REJ_MALFORMED, 400, p->spec.name,
		    "bad payload", why);
	}
}

int
peers_receive(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, const char **why)
{
	struct wire_summary w;
	char who[sizeof(((struct peer_spec *)0)->host)];

	struct peer *p = peers_by_addr(ps, from);
	if (p == NULL || ps->conf.keylen == 0)
		return refuse(ps, REJ_NOT_PEER, 403, p == NULL ? "an unknown "
		    "address" : p->spec.host, p == NULL ? NULL : "no cluster "
		    "key: only Squid peers here", why);
	snprintf(who, sizeof(who), "%s", p->spec.host);
	switch (wire_decode(in, len, ps->key, ps->conf.keylen, &w)) {
	case WIRE_OK:
		break;
	case WIRE_TOO_BIG:
		return refuse(ps, REJ_TOO_BIG, 413, who, NULL, why);
	case WIRE_BAD_MAC:
		return refuse(ps, REJ_BAD_MAC, 403, who, NULL, why);
	case WIRE_NOMEM:
		*why = "out of memory";
		return 503;
	default:
		return refuse(ps, REJ_MALFORMED, 400, who, NULL, why);
	}
	p = sender_peer(ps, from, w.sender);
	if (p == NULL) {
		wire_summary_clear(&w);
		return refuse(ps, REJ_NOT_PEER, 403, who, "unknown sender",
		    why);
	}
	count(p, IPM_RECEIVED, w.full ? IPM_SUMMARY_FULL : IPM_SUMMARY_DELTA,
	    len);
	int status = apply(ps, p, &w, why);
	wire_summary_clear(&w);
	if (status == 204)
		peer_up(p);
	return status;
}

int
peers_receive_begin(struct peers *ps, const struct sockaddr *from,
    const char *who, uint64_t len, const char **why)
{
	struct peer *slot = NULL;

	for (size_t i = 0; i < ps->n && slot == NULL; i++)
		if (same_addr(from, &ps->v[i]->addr) && !ps->v[i]->receiving)
			slot = ps->v[i];
	if (peers_by_addr(ps, from) == NULL)
		return refuse(ps, REJ_NOT_PEER, 403, who, NULL, why);
	if (len > ps->conf.max_message)
		return refuse(ps, REJ_TOO_BIG, 413, who, "over summary_max_size",
		    why);
	if (slot == NULL)
		return refuse(ps, REJ_BUSY, 503, who, "one summary from that "
		    "address is still arriving", why);
	if (ps->held + len > ps->conf.max_held)
		return refuse(ps, REJ_NO_ROOM, 503, who, "summaries arriving "
		    "hold the most allowed at once", why);
	slot->receiving = true;
	ps->held += len;
	return 0;
}

void
peers_receive_end(struct peers *ps, const struct sockaddr *from,
    uint64_t len)
{
	/* the slot's peer may have left the table meanwhile: any peer at
	 * the address marked receiving gives its slot back */
	for (size_t i = 0; i < ps->n; i++)
		if (same_addr(from, &ps->v[i]->addr) && ps->v[i]->receiving) {
			ps->v[i]->receiving = false;
			break;
		}
	SC_ASSERT(ps->held >= len);
	ps->held -= len;
}

void
peers_receive_slow(struct peers *ps, const char *who)
{
	const char *why;

	refuse(ps, REJ_SLOW, 0, who, "body not received within "
	    "peer_timeout", &why);
}

int
peers_pull_response(struct peers *ps, const struct sockaddr *from,
    struct sum_buf *out)
{
	struct peer *p = peers_by_addr(ps, from);

	/* no cluster key: only Squid peers, which never pull */
	if (p == NULL || ps->conf.keylen == 0) {
		ps->rejected[REJ_NOT_PEER]++;
		return 403;
	}
	struct msg *m = full_msg(ps);
	if (m == NULL)
		return 503;
	int rc = sum_buf_put(out, m->buf.p, m->buf.len) < 0 ? 503 : 200;
	/* as the puller counts it: a request in, a summary out */
	count(p, IPM_RECEIVED, IPM_SUMMARY_PULL, 0);
	if (rc == 200)
		count(p, IPM_SENT, IPM_SUMMARY_PULL, m->buf.len);
	msg_unref(&m);
	return rc;
}

/* ---- pulling ---- */

static size_t
on_pull_body(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
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
static bool
pull_ended(struct xfer *x, enum ipm_type type, long *status, double *secs)
{
	struct peer *p = x->p;

	p->pulling = false;
	*status = 0;
	*secs = 0;
	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME, secs);
	count(p, IPM_SENT, type, 0);
	if (p->retired) {
		xfer_free(&x);
		return false;
	}
	return true;
}

static void
on_pull_done(void *arg, CURLcode rc)
{
	struct xfer *x = arg;
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
		peer_down(p, detail);
		xfer_free(&x);
		return;
	}
	count(p, IPM_RECEIVED, IPM_SUMMARY_PULL, x->resp.len);
	note_rtt(p, secs * 1000);
	struct wire_summary w;
	enum wire_err we = wire_decode(x->resp.p, x->resp.len, ps->key,
	    ps->conf.keylen, &w);
	if (we != WIRE_OK) {
		refuse(ps, we == WIRE_BAD_MAC ? REJ_BAD_MAC : we ==
		    WIRE_TOO_BIG ? REJ_TOO_BIG : REJ_MALFORMED, 0,
		    p->spec.name, "in a pulled summary", &why);
	} else if (!w.full || !(p->found ? name_found(ps, p, w.sender) :
	    strcmp(w.sender, p->spec.name) == 0)) {
		if (!p->self)
			refuse(ps, REJ_NOT_PEER, 0, p->spec.name, "pulled "
			    "summary from another sender", &why);
	} else if (p->sum == NULL || !p->sum->loaded ||
	    w.epoch != p->sum->epoch || w.seq != p->sum->seq) {
		apply(ps, p, &w, &why);
	}
	wire_summary_clear(&w);
	if (!p->self)
		peer_up(p);
	xfer_free(&x);
}

/*
 * A Squid peer's digest did not come (an HTTP error) or was refused:
 * Squid drops the digest it held then, and so do we, rather than forward
 * on a picture that can no longer be refreshed.
 */
static void
digest_failed(struct peer *p, const char *why)
{
	uint64_t now = mono_ms();

	psum_free(&p->sum);
	p->sum_entries = 0;
	p->digest_retry_ms = p->digest_retry_ms == 0 ? DIGEST_RETRY_MIN_MS :
	    p->digest_retry_ms * 2 > DIGEST_RETRY_MAX_MS ?
	    DIGEST_RETRY_MAX_MS : p->digest_retry_ms * 2;
	p->digest_due_ms = now + p->digest_retry_ms;
	fprintf(stderr, "sumcache: peer %s: no usable digest (%s); asking "
	    "again in %u s\n", p->spec.name, why, p->digest_retry_ms / 1000);
}

/* When a digest that expires at the Expires header of e (if any) is
 * fetched again: 5 min after it expires (a day at the latest), and no
 * sooner than 5 min. */
static uint64_t
digest_refetch_in_ms(CURL *e)
{
	struct curl_header *h;
	int64_t in_ms = 0;

	if (curl_easy_header(e, "Expires", 0, CURLH_HEADER, -1, &h) ==
	    CURLHE_OK) {
		time_t at = curl_getdate(h->value, NULL);
		if (at != -1)
			in_ms = ((int64_t)at - (int64_t)time(NULL)) * 1000;
	}
	if (in_ms > DIGEST_EXPIRES_MAX_MS)
		in_ms = DIGEST_EXPIRES_MAX_MS;
	return in_ms > 0 ? (uint64_t)in_ms + DIGEST_SLACK_MS :
	    DIGEST_SLACK_MS;
}

static void
on_digest_done(void *arg, CURLcode rc)
{
	struct xfer *x = arg;
	struct peers *ps = x->ps;
	struct peer *p = x->p;
	long status;
	double secs;
	char detail[160];
	const char *why = NULL;

	if (!pull_ended(x, IPM_SQUID_DIGEST, &status, &secs))
		return;
	if (rc != CURLE_OK && !x->too_big) {
		snprintf(detail, sizeof(detail), "digest: %s",
		    curl_easy_strerror(rc));
		peer_down(p, detail);
		xfer_free(&x);
		return;
	}
	count(p, IPM_RECEIVED, IPM_SQUID_DIGEST, x->resp.len);
	note_rtt(p, secs * 1000);
	peer_up(p);
	struct psum *s = NULL;
	struct digest_info info;
	int prc;
	/* refusals are counted as a summary's; digest_failed logs them */
	if (x->too_big) {
		ps->rejected[REJ_TOO_BIG]++;
		digest_failed(p, "refused: larger than 64 MB");
	} else if (status != 200) {
		snprintf(detail, sizeof(detail), "HTTP %ld", status);
		digest_failed(p, detail);
	} else if ((prc = digest_parse(x->resp.p, x->resp.len, &s, &info,
	    &why)) != 0) {
		/* why says which of Squid's checks failed */
		if (prc == SUM_ERR_MALFORMED)
			ps->rejected[REJ_MALFORMED]++;
		snprintf(detail, sizeof(detail), "refused: %s", why);
		digest_failed(p, detail);
	} else {
		psum_free(&p->sum);
		p->sum = s;
		p->sum_entries = info.count;
		p->sum_updated_ms = mono_ms();
		p->digest_retry_ms = 0;
		p->digest_due_ms = p->sum_updated_ms +
		    digest_refetch_in_ms(x->easy);
	}
	xfer_free(&x);
}

/* A sumcache peer's full summary, or a Squid peer's digest. */
static void
pull(struct peer *p)
{
	bool squid = p->spec.type == PEER_SQUID_DIGEST;

	if (p->pulling)
		return;
	struct xfer *x = xfer_new(p, squid ? DIGEST_PATH : SUMMARY_PATH);
	if (x == NULL)
		return;
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_pull_body);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	p->pulling = xfer_start(&x, squid ? on_digest_done : on_pull_done);
}

static void
on_probe(evutil_socket_t fd, short what, void *arg)
{
	struct peers *ps = arg;
	uint64_t now = mono_ms();

	(void)fd;
	(void)what;
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = ps->v[i];
		if (p->pulling || p->self)
			continue;
		if (p->up ? p->digest_wanted && now >= p->digest_due_ms :
		    now >= p->probe_at_ms)
			pull(p);
	}
}

/* ---- forwarding ---- */

size_t
peers_list(struct peers *ps, struct peer **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < ps->n && n < max; i++)
		if (!ps->v[i]->self)
			out[n++] = ps->v[i];
	return n;
}

void
peers_hold(struct peer *p)
{
	p->refs++;
}

void
peers_alive(struct peer *p)
{
	if (!p->retired)
		peer_up(p);
}

void
peers_silent(struct peer *p, const char *why)
{
	peer_down(p, why);
}

/*
 * Squid peers are keyed as Squid keys its digest (squid-md5); with
 * another scheme of our own that is a second hash, made only when a Squid
 * peer has a digest to look in.
 */
size_t
peers_candidates(struct peers *ps, const char *key, size_t len,
    struct peer **out, size_t max)
{
	struct sumkey k, md5;
	bool md5_made = false;
	size_t n = 0;

	if (max == 0 || sumkey_make(ps->hasher, SUM_METHOD_GET, key, len,
	    &k) < 0)
		return 0;
	for (size_t i = 0; i < ps->n && n < max; i++) {
		struct peer *p = ps->v[i];
		bool squid = p->spec.type == PEER_SQUID_DIGEST;
		if (squid)
			p->digest_wanted = true;  /* fetched lazily, as Squid */
		if (!p->up || p->sum == NULL || !p->sum->loaded)
			continue;
		if (squid && ps->md5 != NULL && !md5_made) {
			if (sumkey_make(ps->md5, SUM_METHOD_GET, key, len,
			    &md5) < 0)
				continue;
			md5_made = true;
		}
		if (!psum_contains(p->sum, squid && ps->md5 ? &md5 : &k))
			continue;
		/* insertion by RTT: a handful of peers */
		peers_hold(p);
		size_t j = n++;
		while (j > 0 && out[j - 1]->rtt_ms > p->rtt_ms) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = p;
	}
	return n;
}

void
peers_fetch_done(struct peers *ps, struct peer *p, enum peer_outcome outcome,
    double ms, uint64_t req_bytes, uint64_t resp_bytes)
{
	count(p, IPM_SENT, IPM_PEER_REQUEST, req_bytes);
	switch (outcome) {
	case PEER_HIT:
		p->remote_hits++;
		break;
	case PEER_FALSE_HIT:
		ps->false_hits++;
		break;
	case PEER_FAILED:
		peer_down(p, "request failed or timed out");
		return;
	}
	count(p, IPM_RECEIVED, IPM_PEER_RESPONSE, resp_bytes);
	note_rtt(p, ms);
}

/* ---- set-up ---- */

static int
resolve(struct peer *p, char *err, size_t elen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	char port[8];

	snprintf(port, sizeof(port), "%u", p->spec.port);
	int rc = getaddrinfo(p->spec.host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, elen, "peer %s: cannot resolve %s: %s",
		    p->spec.name, p->spec.host, gai_strerror(rc));
		return -1;
	}
	set_endpoint(p, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

struct peers *
peers_new(struct event_base *base, struct curlev *curl,
    const struct peers_conf *conf, const struct peer_spec *specs, size_t n,
    char *err, size_t elen)
{
	struct peers *ps = calloc(1, sizeof(*ps));

	if (ps == NULL)
		goto nomem;
	ps->base = base;
	ps->curl = curl;
	ps->conf = *conf;
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
	for (size_t i = 0; i < n; i++) {
		struct peer *p = table_add(ps);
		if (p == NULL)
			goto nomem;
		p->spec = specs[i];
		if (strcmp(p->spec.name, conf->node_name) == 0) {
			snprintf(err, elen, "peer %s has this node's own name",
			    p->spec.name);
			goto fail;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(specs[j].name, p->spec.name) == 0) {
				snprintf(err, elen, "peer %s listed twice",
				    p->spec.name);
				goto fail;
			}
		if (resolve(p, err, elen) < 0)
			goto fail;
	}
	uint64_t m = cbf_size_for(conf->expected_objects,
	    conf->bits_per_entry);
	ps->local = cbf_new(conf->scheme, m, conf->k, epoch_now());
	ps->capacity = conf->expected_objects;
	ps->hasher = sumkey_hasher_new(conf->scheme);
	for (size_t i = 0; i < n && conf->scheme != SUM_SQUID_MD5; i++)
		if (specs[i].type == PEER_SQUID_DIGEST && ps->md5 == NULL &&
		    (ps->md5 = sumkey_hasher_new(SUM_SQUID_MD5)) == NULL)
			goto nomem;
	ps->publish_ev = event_new(base, -1, 0, on_publish, ps);
	ps->interval_timer = event_new(base, -1, EV_PERSIST, on_interval, ps);
	ps->probe_timer = event_new(base, -1, EV_PERSIST, on_probe, ps);
	if (ps->local == NULL || ps->hasher == NULL || ps->publish_ev == NULL ||
	    ps->interval_timer == NULL || ps->probe_timer == NULL)
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
	if (!ps->conf.summaries) {
		/* ICP: peers are taken as up until they stop answering */
		for (size_t i = 0; i < ps->n; i++)
			ps->v[i]->up = true;
		return;
	}
	/* a Squid is taken as up until a fetch from it fails; its digest
	 * is fetched when a lookup first wants it */
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i]->spec.type == PEER_SQUID_DIGEST)
			ps->v[i]->up = true;
	/* seq 1: the empty summary, so a pull always has something */
	ps->seq = 1;
	ps->last_publish_ms = mono_ms();
	uint32_t every = ps->conf.max_interval_ms / 4;
	struct timeval iv = {every / 1000, (every % 1000) * 1000};
	if (every < 100)
		iv = (struct timeval){0, 100000};
	event_add(ps->interval_timer, &iv);
	struct timeval pv = {0, PROBE_EVERY_MS * 1000};
	event_add(ps->probe_timer, &pv);
	on_probe(-1, 0, ps);
}

void
peers_free(struct peers **psp)
{
	struct peers *ps = *psp;

	if (ps == NULL)
		return;
	*psp = NULL;
	while (ps->xfers != NULL) {
		struct xfer *x = ps->xfers;
		curlev_cancel(ps->curl, x->easy);
		xfer_free(&x);
	}
	for (size_t i = 0; i < ps->n; i++)
		peers_put(&ps->v[i]);
	if (ps->publish_ev)
		event_free(ps->publish_ev);
	if (ps->interval_timer)
		event_free(ps->interval_timer);
	if (ps->probe_timer)
		event_free(ps->probe_timer);
	msg_unref(&ps->pull_msg);
	cbf_free(&ps->local);
	cbf_free(&ps->next);
	sumkey_hasher_free(&ps->hasher);
	sumkey_hasher_free(&ps->md5);
	free(ps->v);
	free(ps->key);
	free(ps);
}

/* ---- observability ---- */

const char *
ipm_type_name(enum ipm_type t)
{
	return ipm_names[t];
}

void
peer_view(const struct peer *p, uint64_t now_ms, struct peer_view *v)
{
	const struct psum *s = p->sum && p->sum->loaded ? p->sum : NULL;

	*v = (struct peer_view){
		.up = p->up,
		.has_summary = s != NULL,
		.epoch = s ? s->epoch : 0,
		.seq = s ? s->seq : 0,
		.entries = p->sum_entries,
		.checksum = s ? s->checksum >> 11 : 0,
		.fill = s ? psum_fill(s) : 0,
		.fpr = s ? psum_fpr(s) : 0,
		.age_s = p->sum_updated_ms ?
		    (double)(now_ms - p->sum_updated_ms) / 1000 : -1,
		.rtt_s = p->rtt_ms / 1000,
	};
}

void
peers_traffic(const struct peers *ps, uint64_t msgs[2][IPM_NTYPES],
    uint64_t bytes[2][IPM_NTYPES])
{
	memcpy(msgs, ps->gone_msgs, sizeof(ps->gone_msgs));
	memcpy(bytes, ps->gone_bytes, sizeof(ps->gone_bytes));
	for (size_t i = 0; i < ps->n; i++)
		for (int d = 0; d < 2 && !ps->v[i]->self; d++)
			for (int t = 0; t < IPM_NTYPES; t++) {
				msgs[d][t] += ps->v[i]->msgs[d][t];
				bytes[d][t] += ps->v[i]->bytes[d][t];
			}
}

/* One inter-proxy traffic family (what = "messages" or "bytes"), by
 * peer; peers that left are summed under peer="_left". */
static void
render_traffic(const struct peers *ps, struct evbuffer *out,
    const char *what)
{
	bool msgs = what[0] == 'm';

	evbuffer_add_printf(out, "# TYPE sumcache_interproxy_%s_total "
	    "counter\n", what);
	for (size_t i = 0; i <= ps->n; i++) {
		const struct peer *p = i < ps->n ? ps->v[i] : NULL;
		if (p != NULL ? p->self : !ps->any_gone)
			continue;
		for (int d = 0; d < 2; d++)
			for (int t = 0; t < IPM_NTYPES; t++) {
				uint64_t v = p != NULL ? (msgs ?
				    p->msgs[d][t] : p->bytes[d][t]) : (msgs ?
				    ps->gone_msgs[d][t] : ps->gone_bytes[d][t]);
				evbuffer_add_printf(out,
				    "sumcache_interproxy_%s_total{direction="
				    "\"%s\",type=\"%s\",peer=\"%s\"} %llu\n",
				    what, d ? "received" : "sent",
				    ipm_names[t], p ? p->spec.name : "_left",
				    (unsigned long long)v);
			}
	}
}

void
peers_render_metrics(const struct peers *ps, struct evbuffer *out)
{
	const struct cbf *f = ps->local;

	evbuffer_add_printf(out,
	    "# TYPE sumcache_summary_publications_total counter\n"
	    "sumcache_summary_publications_total{kind=\"full\"} %llu\n"
	    "sumcache_summary_publications_total{kind=\"delta\"} %llu\n",
	    (unsigned long long)ps->publications[1],
	    (unsigned long long)ps->publications[0]);
	evbuffer_add_printf(out,
	    "# TYPE sumcache_summary_rejected_total counter\n");
	for (int r = 0; r < REJ_NREASONS; r++)
		evbuffer_add_printf(out, "sumcache_summary_rejected_total"
		    "{reason=\"%s\"} %llu\n", reject_names[r],
		    (unsigned long long)ps->rejected[r]);
	evbuffer_add_printf(out,
	    "# TYPE sumcache_summary_receiving_bytes gauge\n"
	    "sumcache_summary_receiving_bytes %llu\n"
	    "# TYPE sumcache_summary_max_size_bytes gauge\n"
	    "sumcache_summary_max_size_bytes %llu\n",
	    (unsigned long long)ps->held,
	    (unsigned long long)ps->conf.max_message);
	evbuffer_add_printf(out,
	    "# TYPE sumcache_summary_entries gauge\n"
	    "sumcache_summary_entries %llu\n"
	    "# TYPE sumcache_summary_bits gauge\n"
	    "sumcache_summary_bits %llu\n"
	    "# TYPE sumcache_summary_epoch gauge\n"
	    "sumcache_summary_epoch %llu\n"
	    "# TYPE sumcache_summary_sequence gauge\n"
	    "sumcache_summary_sequence %llu\n"
	    /* the top 53 bits of the XXH64, exact as a float */
	    "# TYPE sumcache_summary_checksum gauge\n"
	    "sumcache_summary_checksum %llu\n"
	    "# TYPE sumcache_summary_pending_changes gauge\n"
	    "sumcache_summary_pending_changes %llu\n"
	    "# TYPE sumcache_summary_rebuilds_total counter\n"
	    "sumcache_summary_rebuilds_total %llu\n"
	    "# TYPE sumcache_summary_saturations_total counter\n"
	    "sumcache_summary_saturations_total %llu\n"
	    "# TYPE sumcache_summary_bad_removes_total counter\n"
	    "sumcache_summary_bad_removes_total %llu\n",
	    (unsigned long long)f->entries, (unsigned long long)f->m,
	    (unsigned long long)f->epoch, (unsigned long long)ps->seq,
	    (unsigned long long)(sum_checksum(f->published, f->m) >> 11),
	    (unsigned long long)f->changes,
	    (unsigned long long)ps->rebuilds,
	    (unsigned long long)f->saturations,
	    (unsigned long long)f->bad_removes);

	render_traffic(ps, out, "messages");
	render_traffic(ps, out, "bytes");

	uint64_t now = mono_ms();
	static const char *const gauges[] = {"up", "summary_epoch",
	    "summary_sequence", "summary_fill_ratio",
	    "summary_false_positive_rate", "summary_age_seconds",
	    "summary_entries", "summary_checksum", "rtt_seconds"};
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
		evbuffer_add_printf(out, "# TYPE sumcache_peer_%s gauge\n",
		    gauges[g]);
		for (size_t i = 0; i < ps->n; i++) {
			const struct peer *p = ps->v[i];
			struct peer_view pv;
			double v;

			if (p->self)
				continue;
			peer_view(p, now, &pv);
			switch (g) {
			case 0: v = pv.up; break;
			case 1: v = (double)pv.epoch; break;
			case 2: v = (double)pv.seq; break;
			case 3: v = pv.fill; break;
			case 4: v = pv.fpr; break;
			case 5: v = pv.age_s; break;
			case 6: v = (double)pv.entries; break;
			case 7: v = (double)pv.checksum; break;
			default: v = pv.rtt_s; break;
			}
			evbuffer_add_printf(out, "sumcache_peer_%s{peer=\"%s\"} "
			    "%.17g\n", gauges[g], p->spec.name, v);
		}
	}
	evbuffer_add_printf(out,
	    "# TYPE sumcache_peer_remote_hits_total counter\n");
	for (size_t i = 0; i < ps->n; i++)
		if (!ps->v[i]->self)
			evbuffer_add_printf(out, "sumcache_peer_remote_hits_total"
		    "{peer=\"%s\"} %llu\n", ps->v[i]->spec.name,
		    (unsigned long long)ps->v[i]->remote_hits);
	evbuffer_add_printf(out,
	    "# TYPE sumcache_peer_downs_total counter\n");
	for (size_t i = 0; i < ps->n; i++)
		if (!ps->v[i]->self)
			evbuffer_add_printf(out, "sumcache_peer_downs_total"
		    "{peer=\"%s\"} %llu\n", ps->v[i]->spec.name,
		    (unsigned long long)ps->v[i]->downs);
	evbuffer_add_printf(out,
	    "# TYPE sumcache_peer_false_hits_total counter\n");
	evbuffer_add_printf(out, "sumcache_peer_false_hits_total %llu\n",
	    (unsigned long long)ps->false_hits);
}
