/*
 * sumcache-sim: a trace-driven simulation of a sumcache cluster, for
 * sizing clusters larger than one machine can host.
 *
 *   sumcache-sim [options] TRACE
 *
 * The trace is a Squid native access.log (workload-gen's, or a real one),
 * read as the replayer reads it: client c goes through proxy c mod N. Each
 * proxy is a byte-bounded SIEVE cache, as proxy/store.c is. What a peer
 * knows of another is what sumcache's own code makes of it: every proxy
 * keeps a counting filter (summary/cbf.c) updated on each insert and
 * eviction, sized as sumcache sizes it (cache / 2 KB objects, grown to
 * twice the entries with a full summary in a new epoch when the cache
 * holds more), publishes with sum_publish() when the changes reach the
 * threshold (or the max interval passes with changes pending), and the
 * message is the real Signed envelope (peers/wire.c); the receivers' view
 * is a struct psum fed by psum_load_full / psum_apply_delta. Only the
 * sockets are missing: a message arrives the moment it is sent.
 *
 * Modes, as sumcache's `sharing`:
 *   none     a local miss goes to the origin
 *   icp      a local miss asks every peer (ICP v2 query + reply, bytes as
 *            peers/icp.c encodes them); a peer says HIT for a copy fresh
 *            for 30 s more; the first HIT is fetched, else the origin
 *   summary  a local miss is fetched from the first of at most 4 peers
 *            whose summary claims it (a peer without a fresh copy answers
 *            504: a false hit, and the next is tried), else the origin
 *
 * For each run it prints hit ratios (local, remote, total), false hits
 * (and how many of them found an expired copy: the paper's remote stale
 * hits), false misses (a fresh copy at a peer that the summaries did not
 * show yet),
 * inter-proxy protocol messages and bytes per request, peer fetches per
 * request, and the summaries' false-positive rate measured against the
 * Bloom formula (1 - e^(-kn/m))^k: a probe of a peer's summary for an
 * object that was not in what the peer published is a false positive when
 * the summary says yes.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbf.h"
#include "demo.h"
#include "icp.h"
#include "psum.h"
#include "sumkey.h"
#include "trace.h"
#include "wire.h"

#define MAX_PROXIES 1024
#define MAX_LIST 16
#define MAX_CANDIDATES 4      /* as proxy/fetch.c */
#define ICP_MIN_FRESH 30      /* seconds of freshness an ICP HIT needs */
#define NIL UINT32_MAX

static void
die(const char *what)
{
	fprintf(stderr, "sumcache-sim: %s\n", what);
	exit(1);
}

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (p == NULL)
		die("out of memory");
	return p;
}

/* ---- the trace ---- */

struct object {
	struct sumkey key;
	uint32_t size;
	uint32_t max_age;
	uint16_t icp_query;   /* bytes of an ICP query for its URL */
	uint16_t icp_reply;
	bool nostore;
};

struct request {
	uint32_t obj;
	uint32_t client;      /* in address order once the trace is read */
	double time;
};

/* URL -> object number, open addressing on the URL's 64-bit hash (the
 * full key is compared: URLs are kept until the trace is read) */
struct url_table {
	uint64_t *hash;
	uint32_t *obj;        /* index + 1; 0 is empty */
	char **urls;
	size_t nslots;
};

struct trace {
	struct object *obj;
	size_t nobj, objcap;
	struct request *req;
	size_t nreq, reqcap;
	size_t nclients;
	struct url_table urls;
	struct sumkey_hasher *hasher;
};

static void
urls_grow(struct trace *t)
{
	struct url_table u = {.nslots = t->urls.nslots ? t->urls.nslots * 2 :
	    1 << 16};

	u.hash = xcalloc(u.nslots, sizeof(*u.hash));
	u.obj = xcalloc(u.nslots, sizeof(*u.obj));
	u.urls = t->urls.urls;
	for (size_t i = 0; i < t->urls.nslots; i++) {
		if (t->urls.obj[i] == 0)
			continue;
		size_t s = t->urls.hash[i] & (u.nslots - 1);
		while (u.obj[s] != 0)
			s = (s + 1) & (u.nslots - 1);
		u.hash[s] = t->urls.hash[i];
		u.obj[s] = t->urls.obj[i];
	}
	free(t->urls.hash);
	free(t->urls.obj);
	t->urls = u;
	t->urls.urls = realloc(t->urls.urls, u.nslots / 2 * sizeof(char *));
	if (t->urls.urls == NULL)
		die("out of memory");
}

static uint32_t
new_object(struct trace *t, const char *url, unsigned long long bytes)
{
	struct object *o;
	size_t len = strlen(url);

	if (t->nobj == UINT32_MAX - 1)
		die("more than 2^32 objects");
	if (t->nobj == t->objcap) {
		t->objcap = t->objcap ? t->objcap * 2 : 1 << 16;
		t->obj = realloc(t->obj, t->objcap * sizeof(*t->obj));
		if (t->obj == NULL)
			die("out of memory");
	}
	o = &t->obj[t->nobj];
	/* served as the demo origin serves what the replayer asks it for */
	char *target = trace_demo_target(url, bytes);
	struct demo_obj d;
	if (target == NULL)
		die("out of memory");
	demo_parse(target, &d);
	free(target);
	*o = (struct object){
		.size = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes,
		.max_age = d.max_age,
		.nostore = d.nostore,
	};
	if (sumkey_make(t->hasher, SUM_METHOD_GET, url, len, &o->key) < 0)
		die("cannot hash a URL");
	uint8_t dgram[ICP_MAX];
	size_t q = icp_encode(dgram, ICP_OP_QUERY, 1, url, len);
	size_t r = icp_encode(dgram, ICP_OP_HIT, 1, url, len);
	if (q == 0 || r == 0)
		die("a URL too long for ICP");
	o->icp_query = (uint16_t)q;
	o->icp_reply = (uint16_t)r;
	return (uint32_t)t->nobj++;
}

static uint32_t
intern(struct trace *t, const char *url, unsigned long long bytes)
{
	if (t->nobj >= t->urls.nslots / 2)
		urls_grow(t);
	uint64_t h = XXH3_64bits(url, strlen(url));
	size_t s = h & (t->urls.nslots - 1);
	for (; t->urls.obj[s] != 0; s = (s + 1) & (t->urls.nslots - 1)) {
		uint32_t i = t->urls.obj[s] - 1;
		if (t->urls.hash[s] == h && strcmp(t->urls.urls[i], url) == 0)
			return i;
	}
	uint32_t i = new_object(t, url, bytes);
	t->urls.hash[s] = h;
	t->urls.obj[s] = i + 1;
	if ((t->urls.urls[i] = strdup(url)) == NULL)
		die("out of memory");
	return i;
}

static int
keep(void *arg, const struct trace_line *l)
{
	struct trace *t = arg;

	if (t->nreq == t->reqcap) {
		t->reqcap = t->reqcap ? t->reqcap * 2 : 1 << 16;
		t->req = realloc(t->req, t->reqcap * sizeof(*t->req));
		if (t->req == NULL)
			die("out of memory");
	}
	/* Squid logs a request when it ends, so times may go back a little;
	 * they only age copies and pace the max interval */
	t->req[t->nreq++] = (struct request){
		.obj = intern(t, l->url, l->bytes),
		.client = l->client,
		.time = l->time,
	};
	return 0;
}

static void
trace_load(struct trace *t, const char *path)
{
	struct trace_clients c;

	t->hasher = sumkey_hasher_new(SUM_XXH3);
	if (t->hasher == NULL)
		die("out of memory");
	if (trace_read(path, "sumcache-sim", keep, t, &c) < 0)
		exit(1);
	if (t->nreq == 0)
		die("the trace has no GET http:// requests");
	for (size_t i = 0; i < t->nreq; i++)
		t->req[i].client = c.order[t->req[i].client];
	t->nclients = c.n;
	trace_clients_free(&c);
	for (size_t i = 0; i < t->nobj; i++)
		free(t->urls.urls[i]);
	free(t->urls.urls);
	free(t->urls.hash);
	free(t->urls.obj);
	t->urls = (struct url_table){0};
}

/* ---- (proxy, object) -> value: caches and ghosts ---- */

/* Linear probing with backward-shift deletion, so a table that sees
 * millions of inserts and deletes never fills with tombstones. */
struct map {
	uint64_t *key;        /* (proxy << 32 | object) + 1; 0 is empty */
	uint32_t *val;
	size_t nslots, n;
};

static uint64_t
map_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	return k ^ (k >> 33);
}

static void map_put(struct map *m, uint64_t key, uint32_t val);

static void
map_grow(struct map *m)
{
	struct map old = *m;

	m->nslots = old.nslots ? old.nslots * 2 : 1 << 16;
	m->key = xcalloc(m->nslots, sizeof(*m->key));
	m->val = xcalloc(m->nslots, sizeof(*m->val));
	m->n = 0;
	for (size_t i = 0; i < old.nslots; i++)
		if (old.key[i] != 0)
			map_put(m, old.key[i] - 1, old.val[i]);
	free(old.key);
	free(old.val);
}

static uint64_t
map_key(unsigned proxy, uint32_t obj)
{
	return (uint64_t)proxy << 32 | obj;
}

/* slot of key, or of the empty slot where it would go */
static size_t
map_slot(const struct map *m, uint64_t key)
{
	size_t s = map_hash(key) & (m->nslots - 1);

	while (m->key[s] != 0 && m->key[s] != key + 1)
		s = (s + 1) & (m->nslots - 1);
	return s;
}

static uint32_t
map_get(const struct map *m, uint64_t key)
{
	if (m->n == 0)
		return NIL;
	size_t s = map_slot(m, key);
	return m->key[s] != 0 ? m->val[s] : NIL;
}

static void
map_put(struct map *m, uint64_t key, uint32_t val)
{
	if (2 * (m->n + 1) > m->nslots)
		map_grow(m);
	size_t s = map_slot(m, key);
	if (m->key[s] == 0)
		m->n++;
	m->key[s] = key + 1;
	m->val[s] = val;
}

static void
map_del(struct map *m, uint64_t key)
{
	if (m->n == 0)
		return;
	size_t mask = m->nslots - 1, s = map_slot(m, key);

	if (m->key[s] == 0)
		return;
	m->n--;
	/* shift back every later entry of the run that may move into the
	 * hole: one whose home slot is not in (hole, j] cyclically */
	for (size_t j = s;;) {
		m->key[s] = 0;
		for (;;) {
			j = (j + 1) & mask;
			if (m->key[j] == 0)
				return;
			size_t home = map_hash(m->key[j] - 1) & mask;
			if (s <= j ? (home <= s || home > j) :
			    (home <= s && home > j))
				break;
		}
		m->key[s] = m->key[j];
		m->val[s] = m->val[j];
		s = j;
	}
}

/* ---- the cluster ---- */

struct entry {
	uint32_t obj;
	uint32_t newer, older;  /* SIEVE queue, by entry number */
	uint32_t pub_seq;       /* publications of the proxy when added;
	                         * 0 when it was in the last one anyway */
	double expires;
	bool visited;
};

struct proxy {
	uint64_t used, cap;     /* bytes */
	uint32_t head, tail, hand;  /* newest, oldest, SIEVE hand */
	struct cbf *local;
	struct psum *view;      /* what every peer holds of this proxy */
	uint64_t capacity;      /* objects the filter is sized for */
	uint64_t seq;           /* of the last publication, in its epoch */
	uint32_t pubs;          /* publications so far */
	double pub_fpr;         /* (1 - e^(-kn/m))^k at that publication */
	double last_pub;
	uint32_t *ghosts;       /* published, evicted since: in the view */
	size_t nghosts, ghostcap;
};

enum mode { MODE_NONE, MODE_ICP, MODE_SUMMARY };
static const char *const mode_names[] = {"none", "icp", "summary"};

struct params {
	enum mode mode;
	unsigned proxies;
	double threshold;       /* share of entries */
	unsigned bits;          /* per entry */
	unsigned k;
	double cache_share;     /* of each proxy's infinite cache; or */
	uint64_t cache_bytes;   /* a fixed size per proxy */
	double max_interval;    /* seconds; 0: never */
	double filter_object_bytes;  /* 0: the proxy's mean object */
};

struct stats {
	uint64_t requests, local_hits, remote_hits, false_hits, false_misses;
	uint64_t stale_false_hits;        /* the peer's copy had expired */
	uint64_t messages, bytes;         /* ICP or summary protocol */
	uint64_t peer_fetches;
	uint64_t publications, fulls;
	uint64_t probes, true_positives, bloom_fp;
	double fp_theory;                 /* expected false positives */
	uint64_t absent_probes, absent_fp;
	double absent_theory;
	uint64_t rebuilds;
	uint64_t mean_entries_sum, mean_entries_n;
	double bits_sum;                  /* m at each publication */
	double seconds;
};

struct sim {
	const struct trace *t;
	struct params p;
	struct proxy *px;
	struct entry *e;
	size_t ne, ecap;
	uint32_t efree;         /* free list through .newer */
	struct map cache;       /* (proxy, object) -> entry */
	struct map ghost;       /* (proxy, object) -> 1 */
	struct stats st;
	struct sum_buf payload, msg;
	uint8_t wire_key[32];
	struct sumkey_hasher *hasher;  /* the trace's */
};

static uint32_t
entry_new(struct sim *s)
{
	if (s->efree != NIL) {
		uint32_t i = s->efree;
		s->efree = s->e[i].newer;
		return i;
	}
	if (s->ne == s->ecap) {
		s->ecap = s->ecap ? s->ecap * 2 : 1 << 16;
		s->e = realloc(s->e, s->ecap * sizeof(*s->e));
		if (s->e == NULL)
			die("out of memory");
	}
	return (uint32_t)s->ne++;
}

/*
 * The trace's own probes repeat: a popular uncacheable object is probed at
 * every request, so one false position counts many times. The formula is
 * checked on independent samples: after each publication, the view is
 * probed for URLs that no trace holds.
 */
#define ABSENT_PROBES 64

static void
probe_absent(struct sim *s, const struct proxy *x)
{
	char url[64];
	struct sumkey k;

	for (int i = 0; i < ABSENT_PROBES; i++) {
		int n = snprintf(url, sizeof(url), "http://absent.invalid/%"
		    PRIu64, s->st.absent_probes++);
		if (sumkey_make(s->hasher, SUM_METHOD_GET, url, (size_t)n,
		    &k) < 0)
			die("cannot hash a URL");
		s->st.absent_fp += psum_contains(x->view, &k);
		s->st.absent_theory += x->pub_fpr;
	}
}

/* Sends a summary of proxy i to each of the other proxies, in the real
 * Signed envelope, and updates what they hold of it. */
static void
send_summary(struct sim *s, unsigned i, double now, bool full,
    uint64_t checksum)
{
	struct proxy *x = &s->px[i];

	s->msg.len = 0;
	struct wire_summary w = {
		.epoch = x->local->epoch,
		.seq = x->seq,
		.scheme = x->local->scheme,
		.m = x->local->m,
		.k = x->local->k,
		.full = full,
		.payload = s->payload.p,
		.payload_len = s->payload.len,
		.checksum = checksum,
		.entries = x->local->entries,
	};
	snprintf(w.sender, sizeof(w.sender), "node%u", i);
	if (wire_encode(&w, s->wire_key, sizeof(s->wire_key), &s->msg) < 0)
		die("out of memory");
	int rc = full ? psum_load_full(x->view, w.scheme, w.m, w.k, w.epoch,
	    w.seq, w.payload, w.payload_len, checksum) :
	    psum_apply_delta(x->view, w.epoch, w.seq, w.payload,
	    w.payload_len, checksum);
	if (rc != 0)
		die("a summary did not decode to what was published");
	x->pubs++;
	double n = (double)x->local->entries, m = (double)x->local->m;
	x->pub_fpr = pow(1 - exp(-(double)x->local->k * n / m),
	    x->local->k);
	x->last_pub = now;
	probe_absent(s, x);
	for (size_t g = 0; g < x->nghosts; g++)
		map_del(&s->ghost, map_key(i, x->ghosts[g]));
	x->nghosts = 0;
	s->st.publications++;
	s->st.fulls += full;
	s->st.messages += s->p.proxies - 1;
	s->st.bytes += (uint64_t)(s->p.proxies - 1) * s->msg.len;
	s->st.mean_entries_sum += x->local->entries;
	s->st.bits_sum += m;
	s->st.mean_entries_n++;
}

/* The smaller of a delta and a full array, as sumcache publishes. */
static void
publish(struct sim *s, unsigned i, double now)
{
	bool full;
	uint64_t checksum;

	s->payload.len = 0;
	if (sum_publish(s->px[i].local, &s->payload, &full, &checksum) < 0)
		die("out of memory");
	s->px[i].seq++;
	send_summary(s, i, now, full, checksum);
}

/* More objects than the filter was sized for: as sumcache does, a filter
 * for twice as many, in a new epoch, announced with a full summary. */
static void
rebuild(struct sim *s, unsigned i, double now)
{
	struct proxy *x = &s->px[i];
	struct cbf *next;

	x->capacity = 2 * x->local->entries;
	next = cbf_new(SUM_XXH3, cbf_size_for(x->capacity, s->p.bits),
	    s->p.k, x->local->epoch + 1);
	if (next == NULL)
		die("out of memory");
	for (uint32_t v = x->tail; v != NIL; v = s->e[v].newer)
		cbf_add(next, &s->t->obj[s->e[v].obj].key);
	cbf_free(&x->local);
	x->local = next;
	cbf_mark_published(next);
	s->payload.len = 0;
	if (sum_encode_full(next->published, next->m, &s->payload) < 0)
		die("out of memory");
	x->seq = 1;
	s->st.rebuilds++;
	send_summary(s, i, now, true, sum_checksum(next->published, next->m));
}

static void
maybe_publish(struct sim *s, unsigned i, double now)
{
	struct proxy *x = &s->px[i];
	double t = s->p.threshold * (double)x->local->entries;

	if (x->local->changes >= (t < 1 ? 1 : (uint64_t)t))
		publish(s, i, now);
}

/* Was obj in what proxy i last published? */
static bool
in_view(const struct sim *s, unsigned i, uint32_t obj)
{
	uint32_t e = map_get(&s->cache, map_key(i, obj));

	if (e != NIL)
		return s->e[e].pub_seq < s->px[i].pubs;
	return map_get(&s->ghost, map_key(i, obj)) != NIL;
}

static void
evict(struct sim *s, unsigned i)
{
	struct proxy *x = &s->px[i];
	uint32_t v = x->hand != NIL ? x->hand : x->tail;

	while (s->e[v].visited) {
		s->e[v].visited = false;
		v = s->e[v].newer != NIL ? s->e[v].newer : x->tail;
	}
	struct entry *d = &s->e[v];
	x->hand = d->newer;
	if (d->newer != NIL)
		s->e[d->newer].older = d->older;
	else
		x->head = d->older;
	if (d->older != NIL)
		s->e[d->older].newer = d->newer;
	else
		x->tail = d->newer;
	x->used -= s->t->obj[d->obj].size;
	map_del(&s->cache, map_key(i, d->obj));
	if (s->p.mode == MODE_SUMMARY)
		cbf_remove(x->local, &s->t->obj[d->obj].key);
	if (s->p.mode == MODE_SUMMARY && d->pub_seq < x->pubs) {
		if (x->nghosts == x->ghostcap) {
			x->ghostcap = x->ghostcap ? 2 * x->ghostcap : 1024;
			x->ghosts = realloc(x->ghosts, x->ghostcap *
			    sizeof(*x->ghosts));
			if (x->ghosts == NULL)
				die("out of memory");
		}
		x->ghosts[x->nghosts++] = d->obj;
		map_put(&s->ghost, map_key(i, d->obj), 1);
	}
	d->newer = s->efree;
	s->efree = v;
}

static void
store(struct sim *s, unsigned i, uint32_t obj, double expires, double now)
{
	struct proxy *x = &s->px[i];
	const struct object *o = &s->t->obj[obj];

	if (o->nostore || o->size > x->cap)
		return;
	while (x->used + o->size > x->cap)
		evict(s, i);
	uint32_t v = entry_new(s);
	s->e[v] = (struct entry){.obj = obj, .newer = NIL, .older = x->head,
	    .pub_seq = x->pubs, .expires = expires};
	if (x->head != NIL)
		s->e[x->head].newer = v;
	else
		x->tail = v;
	x->head = v;
	x->used += o->size;
	map_put(&s->cache, map_key(i, obj), v);
	if (s->p.mode != MODE_SUMMARY)
		return;
	cbf_add(x->local, &o->key);
	/* back in the cache before the next publication: still in the view
	 * as published */
	uint64_t gk = map_key(i, obj);
	if (map_get(&s->ghost, gk) != NIL) {
		map_del(&s->ghost, gk);
		s->e[v].pub_seq = 0;
	}
	if (s->p.filter_object_bytes > 0 && x->local->entries > x->capacity)
		rebuild(s, i, now);
	else
		maybe_publish(s, i, now);
}

/* The fresh copy proxy i holds of obj, fresh for at least `margin` more
 * seconds, or NULL. */
static struct entry *
fresh_copy(struct sim *s, unsigned i, uint32_t obj, double now,
    double margin)
{
	uint32_t v = map_get(&s->cache, map_key(i, obj));

	if (v == NIL || s->e[v].expires - now < margin ||
	    s->e[v].expires <= now)
		return NULL;
	return &s->e[v];
}

/* Which peer serves a local miss, or NIL for the origin. */
static unsigned
ask_icp(struct sim *s, unsigned i, uint32_t obj, double now)
{
	const struct object *o = &s->t->obj[obj];
	unsigned n = s->p.proxies, hit = NIL;

	s->st.messages += 2ull * (n - 1);
	s->st.bytes += (uint64_t)(n - 1) * (o->icp_query + o->icp_reply);
	for (unsigned d = 1; d < n && hit == NIL; d++)
		if (fresh_copy(s, (i + d) % n, obj, now, ICP_MIN_FRESH))
			hit = (i + d) % n;
	return hit;
}

static unsigned
ask_summaries(struct sim *s, unsigned i, uint32_t obj, double now)
{
	const struct object *o = &s->t->obj[obj];
	unsigned n = s->p.proxies, cand[MAX_CANDIDATES], nc = 0;

	for (unsigned d = 1; d < n; d++) {
		unsigned j = (i + d) % n;
		struct proxy *y = &s->px[j];
		s->st.probes++;
		s->st.fp_theory += y->pub_fpr;
		if (!psum_contains(y->view, &o->key))
			continue;
		if (in_view(s, j, obj)) {
			s->st.true_positives++;
			s->st.fp_theory -= y->pub_fpr;
		} else {
			s->st.bloom_fp++;
		}
		if (nc < MAX_CANDIDATES)
			cand[nc++] = j;
	}
	for (unsigned c = 0; c < nc; c++) {
		s->st.peer_fetches++;
		if (fresh_copy(s, cand[c], obj, now, 0))
			return cand[c];
		s->st.false_hits++;
		s->st.stale_false_hits += map_get(&s->cache,
		    map_key(cand[c], obj)) != NIL;
	}
	/* a fresh copy the summaries did not show (yet) */
	for (unsigned d = 1; d < n; d++)
		if (fresh_copy(s, (i + d) % n, obj, now, 0)) {
			s->st.false_misses++;
			break;
		}
	return NIL;
}

static void
request(struct sim *s, const struct request *r)
{
	unsigned i = r->client % s->p.proxies, from = NIL;
	const struct object *o = &s->t->obj[r->obj];
	uint32_t v = map_get(&s->cache, map_key(i, r->obj));

	s->st.requests++;
	if (v != NIL) {
		s->e[v].visited = true;
		if (s->e[v].expires > r->time) {
			s->st.local_hits++;
			return;
		}
		/* stale: revalidated at the origin, as sumcache does */
		s->e[v].expires = r->time + o->max_age;
		return;
	}
	if (s->p.mode == MODE_ICP)
		from = ask_icp(s, i, r->obj, r->time);
	else if (s->p.mode == MODE_SUMMARY)
		from = ask_summaries(s, i, r->obj, r->time);
	double expires = r->time + o->max_age;
	if (from != NIL) {
		struct entry *c = fresh_copy(s, from, r->obj, r->time, 0);
		c->visited = true;
		expires = c->expires;  /* the copy's age travels with it */
		s->st.remote_hits++;
		if (s->p.mode == MODE_ICP)
			s->st.peer_fetches++;
	}
	store(s, i, r->obj, expires, r->time);
}

/* Each proxy's infinite cache: the bytes of the distinct cacheable
 * objects its clients ask for. */
static void
size_caches(struct sim *s)
{
	const struct trace *t = s->t;
	unsigned n = s->p.proxies;
	uint64_t *seen_bytes = xcalloc(n, sizeof(*seen_bytes));
	uint64_t *seen_objs = xcalloc(n, sizeof(*seen_objs));
	struct map seen = {0};

	for (size_t r = 0; r < t->nreq; r++) {
		unsigned i = t->req[r].client % n;
		const struct object *o = &t->obj[t->req[r].obj];
		if (o->nostore || map_get(&seen, map_key(i, t->req[r].obj)) !=
		    NIL)
			continue;
		map_put(&seen, map_key(i, t->req[r].obj), 1);
		seen_bytes[i] += o->size;
		seen_objs[i]++;
	}
	for (unsigned i = 0; i < n; i++) {
		struct proxy *x = &s->px[i];
		x->cap = s->p.cache_bytes ? s->p.cache_bytes :
		    (uint64_t)(s->p.cache_share * (double)seen_bytes[i]);
		if (x->cap < 65536)
			x->cap = 65536;
		/* sumcache sizes its filter for cache_mem / 2 KB objects
		 * (at least 1,024) and grows it when the cache holds more;
		 * --filter-for mean sizes it once for the proxy's mean
		 * object, so that bits per entry are about what they say */
		double per = s->p.filter_object_bytes;
		if (per == 0)
			per = seen_objs[i] ? (double)seen_bytes[i] /
			    (double)seen_objs[i] : 4096;
		x->capacity = (uint64_t)((double)x->cap / per) + 1;
		if (s->p.filter_object_bytes > 0 && x->capacity < 1024)
			x->capacity = 1024;
		x->local = cbf_new(SUM_XXH3, cbf_size_for(x->capacity,
		    s->p.bits), s->p.k, 1);
		x->view = psum_new(SUM_XXH3, x->local->m, s->p.k);
		if (x->local == NULL || x->view == NULL)
			die("out of memory");
		/* every peer starts with the empty summary, as after a pull */
		struct sum_buf b = {0};
		uint64_t sum;
		bool full;
		if (sum_publish(x->local, &b, &full, &sum) < 0 ||
		    psum_load_full(x->view, SUM_XXH3, x->local->m, s->p.k,
		    x->local->epoch, 0, b.p, b.len, sum) != 0)
			die("cannot load an empty summary");
		free(b.p);
		x->head = x->tail = x->hand = NIL;
	}
	free(seen.key);
	free(seen.val);
	free(seen_bytes);
	free(seen_objs);
}

static double
monotonic(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
run(const struct trace *t, const struct params *p, struct stats *out)
{
	struct sim s = {.t = t, .p = *p, .efree = NIL, .hasher = t->hasher};
	double t0 = monotonic(), last_tick = t->req[0].time;

	memset(s.wire_key, 0x5c, sizeof(s.wire_key));
	s.px = xcalloc(p->proxies, sizeof(*s.px));
	size_caches(&s);
	for (unsigned i = 0; i < p->proxies; i++)
		s.px[i].last_pub = t->req[0].time;
	for (size_t r = 0; r < t->nreq; r++) {
		double now = t->req[r].time;
		/* the max interval, checked once a trace second */
		if (p->mode == MODE_SUMMARY && p->max_interval > 0 &&
		    now - last_tick >= 1) {
			last_tick = now;
			for (unsigned i = 0; i < p->proxies; i++)
				if (s.px[i].local->changes > 0 && now -
				    s.px[i].last_pub >= p->max_interval)
					publish(&s, i, now);
		}
		request(&s, &t->req[r]);
	}
	s.st.seconds = monotonic() - t0;
	*out = s.st;
	for (unsigned i = 0; i < p->proxies; i++) {
		cbf_free(&s.px[i].local);
		psum_free(&s.px[i].view);
		free(s.px[i].ghosts);
	}
	free(s.px);
	free(s.e);
	free(s.cache.key);
	free(s.cache.val);
	free(s.ghost.key);
	free(s.ghost.val);
	free(s.payload.p);
	free(s.msg.p);
}

/* ---- output ---- */

static double
pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* share of probes that said yes wrongly, and what the formula expected */
struct fp_rates {
	double absent, absent_theory, probe, probe_theory;
};

static struct fp_rates
fp_rates(const struct stats *st)
{
	struct fp_rates r = {0};
	uint64_t neg = st->probes - st->true_positives;

	if (st->absent_probes > 0) {
		r.absent = (double)st->absent_fp / (double)st->absent_probes;
		r.absent_theory = st->absent_theory /
		    (double)st->absent_probes;
	}
	if (neg > 0) {
		r.probe = (double)st->bloom_fp / (double)neg;
		r.probe_theory = st->fp_theory / (double)neg;
	}
	return r;
}

static void
print_row(const struct params *p, const struct stats *st, bool csv)
{
	double req = (double)st->requests;
	double entries = st->mean_entries_n ? (double)st->mean_entries_sum /
	    (double)st->mean_entries_n : 0;
	struct fp_rates fp = fp_rates(st);
	bool sum = p->mode == MODE_SUMMARY;

	if (csv) {
		printf("%s,%u,%g,%u,%u,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f,%.4f,"
		    "%.5f,%.2f,%.5f,%" PRIu64 ",%" PRIu64 ",%.0f,%.6f,%.6f,"
		    "%.6f,%.6f,%.2f,%.4f,%.1f,%" PRIu64 "\n",
		    mode_names[p->mode], p->proxies,
		    sum ? p->threshold * 100 : 0, sum ? p->bits : 0,
		    sum ? p->k : 0, st->requests,
		    pct(st->local_hits, st->requests),
		    pct(st->remote_hits, st->requests),
		    pct(st->local_hits + st->remote_hits, st->requests),
		    pct(st->false_hits, st->requests),
		    pct(st->false_misses, st->requests),
		    (double)st->messages / req, (double)st->bytes / req,
		    (double)st->peer_fetches / req, st->publications,
		    st->fulls, entries, fp.absent * 100,
		    fp.absent_theory * 100, fp.probe * 100,
		    fp.probe_theory * 100, st->seconds,
		    pct(st->stale_false_hits, st->requests),
		    st->mean_entries_sum ? st->bits_sum /
		    (double)st->mean_entries_sum : 0,
		    st->rebuilds);
		return;
	}
	char what[48];
	if (sum)
		snprintf(what, sizeof(what), "summary %g%% %ub", p->threshold *
		    100, p->bits);
	else
		snprintf(what, sizeof(what), "%s", mode_names[p->mode]);
	printf("%-18s %5u %7.2f %7.2f %7.2f %7.3f %7.3f %9.4f %9.1f %8.4f",
	    what, p->proxies, pct(st->local_hits, st->requests),
	    pct(st->remote_hits, st->requests),
	    pct(st->local_hits + st->remote_hits, st->requests),
	    pct(st->false_hits, st->requests),
	    pct(st->false_misses, st->requests),
	    (double)st->messages / req, (double)st->bytes / req,
	    (double)st->peer_fetches / req);
	if (sum)
		printf(" %8.4f %8.4f %8.4f", fp.absent * 100,
		    fp.absent_theory * 100, fp.probe * 100);
	else
		printf(" %8s %8s %8s", "-", "-", "-");
	printf(" %6.1f\n", st->seconds);
}

static const char csv_header[] =
    "mode,proxies,threshold_pct,bits_per_entry,hash_functions,requests,"
    "local_hit_pct,remote_hit_pct,total_hit_pct,false_hit_pct,"
    "false_miss_pct,messages_per_request,bytes_per_request,"
    "peer_fetches_per_request,publications,full_publications,"
    "mean_published_entries,bloom_fp_pct,bloom_fp_theory_pct,"
    "probe_fp_pct,probe_fp_theory_pct,seconds,stale_false_hit_pct,"
    "effective_bits_per_entry,rebuilds\n";

/* percentages of requests, except the three false-positive rates, which
 * are of summary probes */
static const char table_header[] =
    "                                     hit %                    "
    "        per request            false positive %\n"
    "run                proxies   local  remote   total  falseh  falsem"
    "  messages     bytes  fetches   absent  formula   trace      s\n";

/* ---- options ---- */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: sumcache-sim [options] TRACE\n"
	    "  --proxies N          proxies; client c uses proxy c mod N (4)\n"
	    "  --modes LIST         none,icp,summary (all three)\n"
	    "  --thresholds LIST    summary update thresholds in %% (1)\n"
	    "  --bits LIST          summary bits per entry (16)\n"
	    "  --hash-functions K   (4)\n"
	    "  --cache SIZE         per proxy: P%% of its infinite cache, or bytes\n"
	    "                       with K, M or G (10%%)\n"
	    "  --max-interval S     publish pending changes at least every S\n"
	    "                       trace seconds; 0: never (60)\n"
	    "  --filter-for BYTES   size each filter for cache / BYTES objects,\n"
	    "                       and grow it, as sumcache does (2048); mean:\n"
	    "                       once, for the proxy's mean object size\n"
	    "  --csv                CSV rows instead of the table\n");
	exit(2);
}

static void
bad_option(const char *name, const char *value, const char *want)
{
	fprintf(stderr, "sumcache-sim: --%s %s: want %s\n", name, value, want);
	exit(2);
}

/* Comma-separated positive numbers; the count, or 0 when malformed. */
static unsigned
parse_list(const char *s, double *v)
{
	unsigned n = 0;

	for (;;) {
		char *end;
		errno = 0;
		double x = strtod(s, &end);
		if (end == s || errno != 0 || !(x > 0) || n == MAX_LIST)
			return 0;
		v[n++] = x;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
}

static int
parse_cache(const char *s, struct params *p)
{
	char *end;
	double x = strtod(s, &end);

	if (end == s || !(x > 0))
		return -1;
	p->cache_bytes = 0;
	p->cache_share = 0;
	if (strcmp(end, "%") == 0 && x <= 100) {
		p->cache_share = x / 100;
		return 0;
	}
	double mult = strcmp(end, "") == 0 ? 1 : strcmp(end, "K") == 0 ?
	    1024 : strcmp(end, "M") == 0 || strcmp(end, "MB") == 0 ?
	    1048576 : strcmp(end, "G") == 0 || strcmp(end, "GB") == 0 ?
	    1073741824.0 : 0;
	if (mult == 0)
		return -1;
	p->cache_bytes = (uint64_t)(x * mult);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longs[] = {
		{"proxies", 1, 0, 'n'}, {"modes", 1, 0, 'm'},
		{"thresholds", 1, 0, 't'}, {"bits", 1, 0, 'b'},
		{"hash-functions", 1, 0, 'k'}, {"cache", 1, 0, 'c'},
		{"max-interval", 1, 0, 'i'}, {"csv", 0, 0, 'v'},
		{"filter-for", 1, 0, 'f'},
		{0, 0, 0, 0},
	};
	struct params p = {.proxies = 4, .k = 4, .cache_share = 0.1,
	    .max_interval = 60, .filter_object_bytes = 2048};
	double thresholds[MAX_LIST] = {1}, bits[MAX_LIST] = {16};
	unsigned nthr = 1, nbits = 1;
	bool modes[3] = {true, true, true}, csv = false;
	int c, li = 0;

	while ((c = getopt_long(argc, argv, "", longs, &li)) != -1) {
		const char *name = longs[li].name;
		char *end;
		switch (c) {
		case 'n':
			p.proxies = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || p.proxies < 2 ||
			    p.proxies > MAX_PROXIES)
				bad_option(name, optarg, "2 to 1024 proxies");
			break;
		case 'm':
			memset(modes, 0, sizeof(modes));
			for (char *m = strtok(optarg, ","); m != NULL;
			    m = strtok(NULL, ",")) {
				int i = 0;
				while (i < 3 && strcmp(m, mode_names[i]) != 0)
					i++;
				if (i == 3)
					bad_option(name, m, "none, icp or summary");
				modes[i] = true;
			}
			break;
		case 't':
			nthr = parse_list(optarg, thresholds);
			for (unsigned i = 0; i < nthr; i++)
				if (thresholds[i] > 100)
					nthr = 0;
			if (nthr == 0)
				bad_option(name, optarg, "percentages over 0, "
				    "at most 100, comma-separated");
			break;
		case 'b':
			nbits = parse_list(optarg, bits);
			for (unsigned i = 0; i < nbits; i++)
				if (bits[i] < 4 || bits[i] > 64 ||
				    bits[i] != floor(bits[i]))
					nbits = 0;
			if (nbits == 0)
				bad_option(name, optarg, "whole numbers 4 to 64, "
				    "comma-separated");
			break;
		case 'k':
			p.k = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || p.k < 1 || p.k > CBF_MAX_K)
				bad_option(name, optarg, "1 to 16");
			break;
		case 'c':
			if (parse_cache(optarg, &p) < 0)
				bad_option(name, optarg, "a share (10%) or a "
				    "size (64MB)");
			break;
		case 'i':
			p.max_interval = strtod(optarg, &end);
			if (*end != '\0' || !(p.max_interval >= 0))
				bad_option(name, optarg, "seconds, 0 or more");
			break;
		case 'f':
			if (strcmp(optarg, "mean") == 0) {
				p.filter_object_bytes = 0;
				break;
			}
			p.filter_object_bytes = strtod(optarg, &end);
			if (*end != '\0' || !(p.filter_object_bytes >= 64))
				bad_option(name, optarg, "bytes (64 or more), "
				    "or mean");
			break;
		case 'v': csv = true; break;
		default: usage();
		}
	}
	if (optind != argc - 1)
		usage();

	struct trace t = {0};
	trace_load(&t, argv[optind]);
	if (t.nclients < p.proxies)
		fprintf(stderr, "sumcache-sim: warning: %zu clients for %u "
		    "proxies: some proxies get no requests\n", t.nclients,
		    p.proxies);
	if (!csv)
		printf("sumcache-sim: %s: %zu requests, %zu objects, %zu "
		    "clients, %u proxies, k = %u\n\n%s", argv[optind],
		    t.nreq, t.nobj, t.nclients, p.proxies, p.k,
		    table_header);
	else
		fputs(csv_header, stdout);
	for (int m = 0; m < 3; m++) {
		if (!modes[m])
			continue;
		p.mode = (enum mode)m;
		for (unsigned a = 0; a < (m == MODE_SUMMARY ? nthr : 1); a++)
			for (unsigned b = 0; b < (m == MODE_SUMMARY ? nbits :
			    1); b++) {
				struct stats st;
				p.threshold = thresholds[a] / 100;
				p.bits = (unsigned)bits[b];
				run(&t, &p, &st);
				print_row(&p, &st, csv);
				fflush(stdout);
			}
	}
	sumkey_hasher_free(&t.hasher);
	free(t.obj);
	free(t.req);
	return 0;
}
