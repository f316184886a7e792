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
 * runs the daemon's publisher (summary/publisher.c: its filter sizing,
 * growth, threshold, max interval, and choice of delta or full), fed on
 * each insert and eviction; the message is the real Signed envelope
 * (peers/wire.c); the receivers' view is a struct psum fed by
 * psum_load_full / psum_apply_delta. Only the sockets are missing: a
 * message arrives --delay seconds of trace time after it is sent (0: the
 * moment it is sent), in the order sent. The order claimants are asked in
 * (claim_before, each proxy keeping its own false-hit rate of each peer;
 * no RTT here, so ties keep ring order), their number (--peers-asked, the
 * daemon's peers_asked) and ICP's freshness rule (ICP_HIT_FRESH) are the
 * daemon's too.
 *
 * Modes, as sumcache's `sharing`:
 *   none     a local miss goes to the origin
 *   icp      a local miss asks every peer (ICP v2 query + reply, bytes as
 *            peers/icp.c encodes them); a peer says HIT for a copy fresh
 *            for 30 s more; the first HIT is fetched, else the origin
 *   summary  a local miss is fetched from the first of at most 4 peers
 *            whose summary claims it, best record first (a peer without a
 *            fresh copy answers 504: a false hit, and the next is tried),
 *            else the origin
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
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbf.h"
#include "icp.h"
#include "peers.h"
#include "psum.h"
#include "sim.h"
#include "wire.h"

const char *const mode_names[3] = {"none", "icp", "summary"};

struct entry {
	uint32_t obj;
	uint32_t newer, older;  /* SIEVE queue, by entry number */
	uint32_t pub_seq;       /* publications of the proxy when added;
	                         * 0 when it was in the last one anyway */
	double expires;
	bool visited;
};

/* A queue in an array: entries at..n-1 are in it, oldest first. */
struct fifo {
	char *v;
	size_t size;            /* of an entry */
	size_t at, n, cap;
};

/* Room for one more at the tail: the entries move down to the start when
 * the array is full, or it doubles. */
static void *
fifo_push(struct fifo *q)
{
	if (q->n == q->cap && q->at > 0) {
		q->n -= q->at;
		memmove(q->v, q->v + q->at * q->size, q->n * q->size);
		q->at = 0;
	}
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 256;
		q->v = realloc(q->v, q->cap * q->size);
		if (q->v == NULL)
			die("out of memory");
	}
	return q->v + q->n++ * q->size;
}

/* The oldest entry, or NULL when the queue is empty. */
static void *
fifo_head(const struct fifo *q)
{
	return q->at < q->n ? q->v + q->at * q->size : NULL;
}

static void
fifo_pop(struct fifo *q)
{
	if (++q->at == q->n)
		q->at = q->n = 0;
}

/* An object evicted while the proxy had made `pubs` publications: in the
 * view until publication pubs + 1, which says so, arrives. */
struct ghost {
	uint32_t obj;
	uint32_t pubs;
};

struct proxy {
	uint64_t used, cap;     /* bytes */
	uint32_t head, tail, hand;  /* newest, oldest, SIEVE hand */
	struct publisher *pub;
	struct psum *view;      /* what every peer holds of this proxy */
	uint32_t pubs;          /* publications made so far */
	uint32_t arrived;       /* of them, those in the view */
	double pub_fpr;         /* (1 - e^(-kn/m))^k at the last arrived */
	struct fifo ghosts;     /* of struct ghost, in eviction order */
};

/* A publication on its way: its payload is its own. */
struct flight {
	double at;              /* trace time it arrives */
	unsigned from;
	struct publication pub;
};

struct sim {
	const struct trace *t;
	struct params p;
	struct proxy *px;
	struct entry *e;
	size_t ne, ecap;
	uint32_t efree;         /* free list through .newer */
	struct map cache;       /* (proxy, object) -> entry */
	struct map ghost;       /* (proxy, object) -> its ghost's pubs */
	struct fifo flights;    /* of struct flight, oldest first */
	struct stats st;
	struct sum_buf payload, msg;
	uint8_t wire_key[32];
	double *claim_rate;     /* [asker * proxies + peer]: claim_note's */
	struct sumkey_hasher *hasher;  /* the trace's */
};

/* The publisher's configuration for a proxy with a cache of cap bytes:
 * the daemon's defaults unless the options change them. */
struct pub_conf
sim_pub_conf(const struct params *p, uint64_t cap)
{
	double per = p->filter_object_bytes;

	return (struct pub_conf){
		.scheme = SUM_XXH3,
		.bits_per_entry = p->bits,
		.k = p->k,
		.threshold = p->threshold,
		.max_interval_ms = (uint64_t)(p->max_interval * 1000),
		.expected_objects = per > 0 ? pub_expected_objects(cap,
		    (uint64_t)per) : 0,
		.max_bits = WIRE_MAX_BITS,
	};
}

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

/* Trace time in the publisher's milliseconds and microseconds. */
static uint64_t
trace_ms(double t)
{
	return t > 0 ? (uint64_t)(t * 1000) : 0;
}

/* Publication pub of proxy i arrives: what the others hold of i is
 * updated, and the ghosts it removes leave the view. */
static void
arrive(struct sim *s, unsigned i, const struct publication *pub)
{
	struct proxy *x = &s->px[i];

	int rc = pub->full ? psum_load_full(x->view, pub->scheme, pub->m,
	    pub->k, pub->epoch, pub->seq, pub->payload.p, pub->payload.len,
	    pub->checksum) : psum_apply_delta(x->view, pub->epoch, pub->seq,
	    pub->payload.p, pub->payload.len, pub->checksum);
	if (rc != 0)
		die("a summary did not decode to what was published");
	x->arrived++;
	double n = (double)pub->entries, m = (double)pub->m;
	x->pub_fpr = pow(1 - exp(-(double)pub->k * n / m), pub->k);
	probe_absent(s, x);
	const struct ghost *g;
	for (; (g = fifo_head(&x->ghosts)) != NULL && g->pubs < x->arrived;
	    fifo_pop(&x->ghosts)) {
		uint64_t gk = map_key(i, g->obj);
		if (map_get(&s->ghost, gk) == g->pubs)
			map_del(&s->ghost, gk);
	}
}

/* The publications whose time has come arrive. */
static void
deliver(struct sim *s, double now)
{
	struct flight *f;

	for (; (f = fifo_head(&s->flights)) != NULL && f->at <= now;
	    fifo_pop(&s->flights)) {
		arrive(s, f->from, &f->pub);
		sum_buf_free(&f->pub.payload);
	}
}

/* Sends publication pub of proxy i to each of the other proxies, in the
 * real Signed envelope; it arrives after the delay. */
static void
send_summary(struct sim *s, unsigned i, struct publication *pub,
    double now)
{
	char sender[16];

	s->msg.len = 0;
	snprintf(sender, sizeof(sender), "node%u", i);
	if (wire_encode_publication(pub, sender, s->wire_key,
	    sizeof(s->wire_key), &s->msg) < 0)
		die("out of memory");
	s->px[i].pubs++;
	if (s->p.delay <= 0) {
		arrive(s, i, pub);
	} else {
		struct flight *f = fifo_push(&s->flights);
		*f = (struct flight){.at = now + s->p.delay, .from = i,
		    .pub = *pub};
		f->pub.payload = (struct sum_buf){0};
		if (sum_buf_put(&f->pub.payload, pub->payload.p,
		    pub->payload.len) < 0)
			die("out of memory");
	}
	pub->payload.len = 0;   /* the buffer is the sim's, reused */
	s->st.publications++;
	s->st.fulls += pub->full;
	s->st.messages += s->p.proxies - 1;
	s->st.bytes += (uint64_t)(s->p.proxies - 1) * s->msg.len;
	s->st.mean_entries_sum += pub->entries;
	s->st.bits_sum += (double)pub->m;
	s->st.mean_entries_n++;
}

static void
publish(struct sim *s, unsigned i, double now)
{
	struct publication pub = {.payload = s->payload};

	if (pub_publish(s->px[i].pub, trace_ms(now), &pub) < 0)
		die("out of memory");
	send_summary(s, i, &pub, now);
	s->payload = pub.payload;
}

/* More objects than the filter was sized for: the publisher's rebuild,
 * with the walk over the whole cache done at once (the daemon spreads it
 * over loop turns; nothing arrives meanwhile here). */
static void
rebuild(struct sim *s, unsigned i, double now)
{
	struct proxy *x = &s->px[i];
	struct publication pub = {.payload = s->payload};

	pub_rebuild_begin(x->pub, trace_ms(now) * 1000);
	while (!pub_rebuild_step(x->pub, SIZE_MAX))
		;
	int rc = pub_rebuild_end(x->pub, trace_ms(now), &pub);
	if (rc <= 0)
		die("out of memory");
	s->st.rebuilds++;
	send_summary(s, i, &pub, now);
	s->payload = pub.payload;
}

/* Was obj in what proxy i last published? */
static bool
in_view(const struct sim *s, unsigned i, uint32_t obj)
{
	uint32_t e = map_get(&s->cache, map_key(i, obj));

	if (e != NIL && s->e[e].pub_seq < s->px[i].arrived)
		return true;
	/* evicted, or stored again since, with the removal not arrived */
	uint32_t g = map_get(&s->ghost, map_key(i, obj));
	return g != NIL && s->px[i].arrived <= g;
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
		pub_removed(x->pub, &s->t->obj[d->obj].key);
	if (s->p.mode == MODE_SUMMARY && d->pub_seq < x->pubs) {
		*(struct ghost *)fifo_push(&x->ghosts) =
		    (struct ghost){d->obj, x->pubs};
		map_put(&s->ghost, map_key(i, d->obj), x->pubs);
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
	if (!pub_added(x->pub, &o->key, trace_ms(expires), trace_ms(now)))
		die("out of memory");
	/* back in the cache before the next publication: its removal is
	 * never published, and it stays in the view */
	uint64_t gk = map_key(i, obj);
	if (map_get(&s->ghost, gk) == x->pubs) {
		map_del(&s->ghost, gk);
		s->e[v].pub_seq = 0;
	}
	if (s->p.filter_object_bytes > 0 && pub_wants_rebuild(x->pub))
		rebuild(s, i, now);
	else if (pub_threshold_reached(x->pub))
		publish(s, i, now);
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
		if (fresh_copy(s, (i + d) % n, obj, now, ICP_HIT_FRESH))
			hit = (i + d) % n;
	return hit;
}

static unsigned
ask_summaries(struct sim *s, unsigned i, uint32_t obj, double now)
{
	const struct object *o = &s->t->obj[obj];
	unsigned n = s->p.proxies, cand[PEERS_ASKED_MAX], nc = 0;
	unsigned max = s->p.peers_asked;
	double *rate = &s->claim_rate[(size_t)i * n];

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
		/* the best max claimants, as peers_candidates keeps them */
		unsigned at = nc < max ? nc++ : max;
		if (at == max && !claim_before(rate[j], 0, rate[cand[max - 1]],
		    0))
			continue;
		if (at == max)
			at--;
		while (at > 0 && claim_before(rate[j], 0, rate[cand[at - 1]],
		    0)) {
			cand[at] = cand[at - 1];
			at--;
		}
		cand[at] = j;
	}
	for (unsigned c = 0; c < nc; c++) {
		s->st.peer_fetches++;
		bool hit = fresh_copy(s, cand[c], obj, now, 0) != NULL;
		claim_note(&rate[cand[c]], !hit);
		if (hit)
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
		/* stale: revalidated at the origin, as sumcache does, which
		 * stores the refreshed copy in place of the old one (the
		 * store tells the new one's arrival first) */
		s->e[v].expires = r->time + o->max_age;
		if (s->p.mode == MODE_SUMMARY) {
			struct proxy *x = &s->px[i];
			if (!pub_added(x->pub, &o->key,
			    trace_ms(s->e[v].expires), trace_ms(r->time)))
				die("out of memory");
			pub_removed(x->pub, &o->key);
			if (pub_threshold_reached(x->pub))
				publish(s, i, r->time);
		}
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
		/* sized as sumcache sizes it, for cache / --filter-for
		 * objects (publisher.h), grown when the cache holds more;
		 * --filter-for mean sizes it once for the proxy's mean
		 * object, so that bits per entry are about what they say */
		struct pub_conf pc = sim_pub_conf(&s->p, x->cap);
		if (s->p.filter_object_bytes == 0)
			pc.expected_objects = (uint64_t)((double)x->cap /
			    (seen_objs[i] ? (double)seen_bytes[i] /
			    (double)seen_objs[i] : 4096)) + 1;
		x->pub = pub_new(&pc, 1, trace_ms(t->req[0].time));
		if (x->pub == NULL)
			die("out of memory");
		/* every peer starts with the empty summary, as after a pull */
		struct publication pub = {0};
		if (pub_last_full(x->pub, &pub) < 0)
			die("out of memory");
		x->view = psum_new(SUM_XXH3, pub.m, pub.k);
		if (x->view == NULL || psum_load_full(x->view, pub.scheme,
		    pub.m, pub.k, pub.epoch, pub.seq, pub.payload.p,
		    pub.payload.len, pub.checksum) != 0)
			die("cannot load an empty summary");
		sum_buf_free(&pub.payload);
		x->head = x->tail = x->hand = NIL;
		x->ghosts.size = sizeof(struct ghost);
	}
	map_free(&seen);
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

void
run(const struct trace *t, const struct params *p, struct stats *out)
{
	struct sim s = {.t = t, .p = *p, .efree = NIL, .hasher = t->hasher};
	double t0 = monotonic();
	struct pub_conf pc = sim_pub_conf(p, 0);
	uint64_t tick = pub_tick_ms(&pc), last_tick = trace_ms(t->req[0].time);
	uint64_t last_expiry = last_tick;

	memset(s.wire_key, 0x5c, sizeof(s.wire_key));
	s.px = xcalloc(p->proxies, sizeof(*s.px));
	s.flights.size = sizeof(struct flight);
	s.claim_rate = xcalloc((size_t)p->proxies * p->proxies,
	    sizeof(*s.claim_rate));
	size_caches(&s);
	for (size_t r = 0; r < t->nreq; r++) {
		uint64_t now = trace_ms(t->req[r].time);
		deliver(&s, t->req[r].time);
		/* claims lapse as the daemon's expiry timer lets them */
		if (p->mode == MODE_SUMMARY &&
		    now >= last_expiry + PUB_EXPIRE_TICK_MS) {
			last_expiry = now;
			for (unsigned i = 0; i < p->proxies; i++)
				if (pub_expire(s.px[i].pub, now) > 0 &&
				    pub_threshold_reached(s.px[i].pub))
					publish(&s, i, t->req[r].time);
		}
		/* the max interval, checked as often as the daemon does */
		if (p->mode == MODE_SUMMARY && now - last_tick >= tick &&
		    now > last_tick) {
			last_tick = now;
			for (unsigned i = 0; i < p->proxies; i++)
				if (pub_interval_due(s.px[i].pub, now))
					publish(&s, i, t->req[r].time);
		}
		request(&s, &t->req[r]);
	}
	s.st.seconds = monotonic() - t0;
	*out = s.st;
	for (unsigned i = 0; i < p->proxies; i++) {
		pub_free(&s.px[i].pub);
		psum_free(&s.px[i].view);
		free(s.px[i].ghosts.v);
	}
	for (struct flight *f; (f = fifo_head(&s.flights)) != NULL;
	    fifo_pop(&s.flights))
		sum_buf_free(&f->pub.payload);
	free(s.flights.v);
	free(s.px);
	free(s.claim_rate);
	free(s.e);
	map_free(&s.cache);
	map_free(&s.ghost);
	free(s.payload.p);
	free(s.msg.p);
}

