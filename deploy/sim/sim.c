/*
 * sumcache-sim: a trace-driven simulation of a sumcache cluster, for
 * sizing clusters larger than one machine can host.
 *
 *   sumcache-sim [options] TRACE
 *
 * The trace is a Squid native access.log (workload-gen's, or a real one),
 * read as the replayer reads it: client c goes through proxy c mod N. Each
 * proxy is a byte-bounded SIEVE cache, as proxy/cache/store.c is. What a peer
 * knows of another is what sumcache's own code makes of it: every proxy
 * runs the daemon's publisher (summary/publisher.c: its filter sizing,
 * growth, threshold, max interval, and choice of delta or full), fed on
 * each insert and eviction; the message is the real Signed envelope
 * (peers/wire.c); the receivers' view is a struct psum fed by
 * psum_load_full / psum_apply_delta. Only the sockets are missing: a
 * message arrives --delay seconds of trace time after it is sent (0: the
 * moment it is sent), in the order sent. The order claimants are asked in
 * (claim_before and claim_skipped, each proxy keeping its own
 * claim_record of each peer; no RTT here, so ties keep ring order), their
 * number (--peers-asked, the
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
 *   carp     placement hash without summaries: a local miss goes to the
 *            key's owner (peers/placement.c over the live nodes' names),
 *            which answers from its cache or fetches from the origin and
 *            keeps the copy; the asker keeps one by peers/admit.c's rule
 *   summary+hash  the owner, unless its summary does not claim the
 *            object and another's does: then the claimants first, as in
 *            summary (after a membership change, the old holders)
 *
 * --membership adds a node with no clients of its own at a third of the
 * trace and takes it away at two thirds; the origin requests in the
 * 10,000 requests after each change are counted in every run, so a run
 * without changes is the baseline of one with. Capacity misses are origin
 * fetches of a cacheable object fetched before; duplicate copies are the
 * copies beyond one per object over the cluster, sampled 100 times.
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
#include "sim_impl.h"

const char *const mode_names[MODE_COUNT] = {"none", "icp", "summary", "carp",
	"summary+hash"};

bool
mode_summaries(enum mode m)
{
	return m == MODE_SUMMARY || m == MODE_SUMMARY_HASH;
}

bool
mode_hashed(enum mode m)
{
	return m == MODE_CARP || m == MODE_SUMMARY_HASH;
}

/* Which peer serves a local miss, or NIL for the origin. */
static unsigned
ask_icp(struct sim *s, unsigned i, uint32_t obj, double now)
{
	const struct object *o = &s->t->obj[obj];
	unsigned n = s->nodes, hit = NIL;

	s->st.messages += 2ull * (s->nlive - 1);
	s->st.bytes += (uint64_t)(s->nlive - 1) * (o->icp_query +
	    o->icp_reply);
	for (unsigned d = 1; d < n && hit == NIL; d++)
		if (s->px[(i + d) % n].live &&
		    fresh_copy(s, (i + d) % n, obj, now, ICP_HIT_FRESH))
			hit = (i + d) % n;
	return hit;
}

/* The live peers whose summaries claim obj, asked best record first: the
 * one with a fresh copy, or NIL. With an owner (not i), none is asked when
 * the owner's summary claims obj, and the owner is not among them: it is
 * asked as the owner after them (placement.h). */
static unsigned
ask_summaries(struct sim *s, unsigned i, uint32_t obj, double now,
    unsigned owner)
{
	const struct object *o = &s->t->obj[obj];
	unsigned n = s->nodes, cand[PEERS_ASKED_MAX], nc = 0;
	unsigned max = s->p.peers_asked;
	struct claim_record *rec = &s->claims[(size_t)i * n];
	uint64_t now_ms = (uint64_t)(now * 1000);

	if (owner != NIL && owner != i && psum_contains(s->px[owner].view,
	    &o->key, now_ms))
		return NIL;

	for (unsigned d = 1; d < n; d++) {
		unsigned j = (i + d) % n;
		struct proxy *y = &s->px[j];
		if (!y->live || j == owner || claim_skipped(&rec[j], now_ms))
			continue;
		s->st.probes++;
		s->st.fp_theory += y->pub_fpr;
		if (!psum_contains(y->view, &o->key, now_ms))
			continue;
		if (in_view(s, j, obj)) {
			s->st.true_positives++;
			s->st.fp_theory -= y->pub_fpr;
		} else {
			s->st.bloom_fp++;
		}
		/* the best max claimants, as peers_candidates keeps them */
		unsigned at = nc < max ? nc++ : max;
		if (at == max && !claim_before(rec[j].false_rate, 0,
		    rec[cand[max - 1]].false_rate, 0))
			continue;
		if (at == max)
			at--;
		while (at > 0 && claim_before(rec[j].false_rate, 0,
		    rec[cand[at - 1]].false_rate, 0)) {
			cand[at] = cand[at - 1];
			at--;
		}
		cand[at] = j;
	}
	for (unsigned c = 0; c < nc; c++) {
		s->st.peer_fetches++;
		pub_asked(s->px[cand[c]].pub, 1, now_ms);
		bool hit = fresh_copy(s, cand[c], obj, now, 0) != NULL;
		claim_note(&rec[cand[c]], hit ? CLAIM_HIT : CLAIM_FALSE,
		    now_ms);
		if (hit)
			return cand[c];
		s->st.false_hits++;
		s->st.stale_false_hits += map_get(&s->cache,
		    map_key(cand[c], obj)) != NIL;
	}
	/* a fresh copy the summaries did not show (yet) */
	for (unsigned d = 1; d < n; d++)
		if ((i + d) % n != owner && s->px[(i + d) % n].live &&
		    fresh_copy(s, (i + d) % n, obj, now, 0)) {
			s->st.false_misses++;
			break;
		}
	return NIL;
}

/* The owner of obj among the live nodes (placement.h). */
static unsigned
owner_of(const struct sim *s, uint32_t obj)
{
	return s->live_px[place_owner(s->live, s->nlive, s->t->obj[obj].place)];
}

/* The live set changed: placement's view of it follows. */
static void
set_live(struct sim *s, unsigned i, bool live)
{
	s->px[i].live = live;
	s->nlive = 0;
	for (unsigned j = 0; j < s->nodes; j++) {
		char name[16];
		if (!s->px[j].live)
			continue;
		size_t len = node_name(j, name, sizeof(name));
		s->live[s->nlive] = (struct place_node){place_hash(name, len),
		    PLACE_WEIGHT_DEFAULT};
		s->live_px[s->nlive++] = j;
	}
	if (!live)
		flush(s, i);
}

/* The origin sends obj whole (counted; a capacity miss when it has been
 * fetched before). */
static void
from_origin(struct sim *s, uint32_t obj)
{
	s->st.origin_fetches++;
	if (s->fetched[obj] && !s->t->obj[obj].nostore)
		s->st.capacity_misses++;
	s->fetched[obj] = 1;
}

/* Proxy i's stale copy v is revalidated at the origin, as sumcache does,
 * which stores the refreshed copy in place of the old one (the store
 * tells the new one's arrival first). */
static void
revalidate(struct sim *s, unsigned i, uint32_t v, double now)
{
	const struct object *o = &s->t->obj[s->e[v].obj];
	struct proxy *x = &s->px[i];

	s->st.revalidations++;
	s->e[v].expires = now + o->max_age;
	if (!mode_summaries(s->p.mode))
		return;
	if (!pub_added(x->pub, &o->key, trace_ms(s->e[v].expires),
	    trace_ms(now)))
		die("out of memory");
	pub_removed(x->pub, &o->key);
	if (pub_threshold_reached(x->pub, receivers(s), trace_ms(now)))
		publish(s, i, now);
}

/* A normal proxy request to the key's owner: it answers from its cache,
 * or fetches the object from the origin and keeps it. Returns when the
 * copy sent expires. */
static double
ask_owner(struct sim *s, unsigned owner, uint32_t obj, double now)
{
	uint32_t v = map_get(&s->cache, map_key(owner, obj));

	s->st.owner_requests++;
	s->st.peer_fetches++;
	pub_asked(s->px[owner].pub, 1, trace_ms(now));
	if (v != NIL) {
		s->e[v].visited = true;
		if (s->e[v].expires > now) {
			s->st.owner_hits++;
			s->st.remote_hits++;
		} else {
			revalidate(s, owner, v, now);
		}
		return s->e[v].expires;
	}
	double expires = now + s->t->obj[obj].max_age;
	from_origin(s, obj);
	store(s, owner, obj, expires, now);
	return expires;
}

static void
request(struct sim *s, const struct request *r)
{
	unsigned i = r->client % s->p.proxies, from = NIL;
	const struct object *o = &s->t->obj[r->obj];
	uint32_t v = map_get(&s->cache, map_key(i, r->obj));
	enum mode m = s->p.mode;

	s->st.requests++;
	if (mode_summaries(m))
		pub_requested(s->px[i].pub, 1, trace_ms(r->time));
	if (v != NIL) {
		s->e[v].visited = true;
		if (s->e[v].expires > r->time)
			s->st.local_hits++;
		else
			revalidate(s, i, v, r->time);
		return;
	}
	unsigned owner = mode_hashed(m) ? owner_of(s, r->obj) : NIL;
	if (m == MODE_ICP)
		from = ask_icp(s, i, r->obj, r->time);
	else if (mode_summaries(m))
		from = ask_summaries(s, i, r->obj, r->time, owner);
	double expires = r->time + o->max_age;
	if (from != NIL) {
		struct entry *c = fresh_copy(s, from, r->obj, r->time, 0);
		c->visited = true;
		expires = c->expires;  /* the copy's age travels with it */
		s->st.remote_hits++;
		if (m == MODE_ICP)
			s->st.peer_fetches++;
	} else if (owner != NIL && owner != i) {
		expires = ask_owner(s, owner, r->obj, r->time);
	} else {
		from_origin(s, r->obj);
	}
	/* a copy of an object another node owns is kept by admission */
	if (owner == NIL || owner == i || admit_keep(s->px[i].admit, o->place))
		store(s, i, r->obj, expires, r->time);
}

/* Each proxy's infinite cache: the bytes of the distinct cacheable
 * objects its clients ask for. */
static void
size_caches(struct sim *s)
{
	const struct trace *t = s->t;
	unsigned n = s->p.proxies;
	uint64_t *seen_bytes = xcalloc(s->nodes, sizeof(*seen_bytes));
	uint64_t *seen_objs = xcalloc(s->nodes, sizeof(*seen_objs));
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
	/* the node that joins has no clients: it is sized as the mean */
	for (unsigned i = n; i < s->nodes; i++)
		for (unsigned j = 0; j < n; j++) {
			seen_bytes[i] += seen_bytes[j] / n;
			seen_objs[i] += seen_objs[j] / n;
		}
	for (unsigned i = 0; i < s->nodes; i++) {
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
		uint64_t t0 = trace_ms(t->req[0].time);
		if (pub_last_full(x->pub, t0, &pub) < 0)
			die("out of memory");
		struct sum_msg msg = pub_msg(&pub);
		if (psum_take(&x->view, &msg, t0) != 0)
			die("cannot load an empty summary");
		sum_buf_free(&pub.payload);
		x->head = x->tail = x->hand = NIL;
		x->ghosts.size = sizeof(struct ghost);
		x->admit = admit_new(s->p.admit_hits, admit_window(x->cap));
		if (x->admit == NULL)
			die("out of memory");
	}
	map_free(&seen);
	free(seen_bytes);
	free(seen_objs);
}

static uint64_t
origin_requests(const struct sim *s)
{
	return s->st.origin_fetches + s->st.revalidations;
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

	bool summaries = mode_summaries(p->mode);
	/* the membership changes, and the windows after them */
	size_t change[2] = {t->nreq / 3, 2 * t->nreq / 3};
	size_t window = t->nreq / 3 < SIM_CHANGE_WINDOW ? t->nreq / 3 :
	    SIM_CHANGE_WINDOW, sample = t->nreq / 100 + 1;

	memset(s.wire_key, 0x5c, sizeof(s.wire_key));
	s.nodes = p->proxies + p->membership;
	s.px = xcalloc(s.nodes, sizeof(*s.px));
	s.flights.size = sizeof(struct flight);
	s.claims = xcalloc((size_t)s.nodes * s.nodes, sizeof(*s.claims));
	s.copies = xcalloc(t->nobj, sizeof(*s.copies));
	s.fetched = xcalloc(t->nobj, sizeof(*s.fetched));
	size_caches(&s);
	for (unsigned i = 0; i < p->proxies; i++)
		set_live(&s, i, true);
	for (size_t r = 0; r < t->nreq; r++) {
		uint64_t now = trace_ms(t->req[r].time);
		deliver(&s, t->req[r].time);
		for (unsigned c = 0; c < 2; c++) {
			if (r == change[c] + window)
				s.st.origin_after[c] += origin_requests(&s);
			if (r != change[c])
				continue;
			s.st.origin_after[c] -= origin_requests(&s);
			if (p->membership)
				set_live(&s, p->proxies, c == 0);
		}
		/* claims lapse as the daemon's expiry timer lets them */
		if (summaries && now >= last_expiry + PUB_EXPIRE_TICK_MS) {
			last_expiry = now;
			for (unsigned i = 0; i < s.nodes; i++)
				if (s.px[i].live &&
				    pub_expire(s.px[i].pub, now) > 0 &&
				    pub_threshold_reached(s.px[i].pub,
				    receivers(&s), now))
					publish(&s, i, t->req[r].time);
		}
		/* the max interval, and auto's threshold, which time alone
		 * can reach, checked as often as the daemon does */
		if (summaries && now - last_tick >= tick && now > last_tick) {
			last_tick = now;
			for (unsigned i = 0; i < s.nodes; i++)
				if (s.px[i].live &&
				    (pub_interval_due(s.px[i].pub, now) ||
				    pub_threshold_reached(s.px[i].pub,
				    receivers(&s), now)))
					publish(&s, i, t->req[r].time);
		}
		request(&s, &t->req[r]);
		if (r % sample == sample - 1) {
			s.st.duplicates_sum += (double)(s.entries - s.distinct);
			s.st.copies_sum += (double)s.entries;
			s.st.samples++;
		}
	}
	for (unsigned c = 0; c < 2; c++)
		if (change[c] + window == t->nreq)
			s.st.origin_after[c] += origin_requests(&s);
	s.st.seconds = monotonic() - t0;
	*out = s.st;
	for (unsigned i = 0; i < s.nodes; i++) {
		pub_free(&s.px[i].pub);
		psum_free(&s.px[i].view);
		free(s.px[i].ghosts.v);
		admit_free(&s.px[i].admit);
	}
	free(s.copies);
	free(s.fetched);
	for (struct flight *f; (f = fifo_head(&s.flights)) != NULL;
	    fifo_pop(&s.flights))
		sum_buf_free(&f->pub.payload);
	free(s.flights.v);
	free(s.px);
	free(s.claims);
	free(s.e);
	map_free(&s.cache);
	map_free(&s.ghost);
	free(s.payload.p);
	free(s.msg.p);
}

