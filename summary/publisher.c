/*
 * See publisher.h.
 */
#include "publisher.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "sc_assert.h"

/* The filters a key is counted in go by its claim's tag: the parity of
 * the filter that counts it, while it is claimed. */
struct publisher {
	struct pub_conf conf;
	struct cbf *local;       /* counts the claimed keys; is published */
	struct cbf *next;        /* being built larger, or NULL */
	bool rebuilding;         /* a walk is running (next may be NULL) */
	uint8_t parity;          /* the parity of keys local counts */
	size_t walk_at;          /* the rebuild's next slot */
	uint64_t capacity;       /* keys local was sized for */
	uint64_t seq;
	uint64_t last_publish_ms;
	uint64_t interval_ms;    /* mean interval between publications */
	uint64_t deltas, fulls, rebuilds, expired;
	struct claims *claims;   /* every key given, claimed or not */
	/* auto: peers' requests for our claimed keys, and the claimed keys
	 * x the ms they were claimed for, both forgetting (rate_at) as of
	 * rate_ms */
	double asks, exposure;
	/* this node's own clients' requests, and the ms they were counted
	 * over, forgetting alike */
	double requests, span;
	uint64_t rate_ms;
};

static void published(struct publisher *p, uint64_t now_ms);

static const char *const claims_names[PUB_CLAIMS_COUNT] = {
	"timed", "fresh", "evicted",
};

const char *
pub_claims_name(enum pub_claims c)
{
	return c < PUB_CLAIMS_COUNT ? claims_names[c] : "?";
}

bool
pub_claims_parse(const char *name, enum pub_claims *c)
{
	for (int i = 0; i < PUB_CLAIMS_COUNT; i++)
		if (strcmp(name, claims_names[i]) == 0) {
			*c = (enum pub_claims)i;
			return true;
		}
	return false;
}

static bool
timed(const struct publisher *p)
{
	return p->conf.claims == PUB_CLAIMS_TIMED;
}

/* Counts c in f, with its deadline when f is timed. */
static void
count_in(struct cbf *f, const struct claim *c)
{
	if (f->until != NULL)
		cbf_add_until(f, &c->key, c->until_ms);
	else
		cbf_add(f, &c->key);
}

/* Whether c is counted in the new filter of a walk: the walk passed it,
 * or it came after. */
static bool
in_next(const struct publisher *p, const struct claim *c)
{
	return p->rebuilding && p->next != NULL && c->tag != p->parity;
}

/* A key just claimed: counted in the filter, and in the new one during
 * a walk. */
static void
count(struct publisher *p, struct claim *c)
{
	c->tag = p->rebuilding ? !p->parity : p->parity;
	count_in(p->local, c);
	if (p->rebuilding && p->next != NULL)
		count_in(p->next, c);
}

/* A claimed key's deadline moved later: its cells follow. */
static void
extend(struct publisher *p, const struct claim *c)
{
	cbf_extend(p->local, &c->key, c->until_ms);
	if (in_next(p, c))
		cbf_extend(p->next, &c->key, c->until_ms);
}

/* A key no longer claimed: evicted (a change), or lapsed (timed: the
 * peers let it go by themselves). */
static void
uncount(struct publisher *p, const struct claim *c, bool lapsed)
{
	bool (*out)(struct cbf *, const struct sumkey *) = lapsed &&
	    timed(p) ? cbf_lapse : cbf_remove;

	if (in_next(p, c))
		out(p->next, &c->key);
	out(p->local, &c->key);
}

/* A filter for p's policy, made now. */
static struct cbf *
filter_new(const struct publisher *p, uint64_t m, uint64_t epoch,
    uint64_t now_ms)
{
	return timed(p) ? cbf_new_timed(p->conf.scheme, m, p->conf.k, epoch,
	    now_ms) : cbf_new(p->conf.scheme, m, p->conf.k, epoch);
}

/* f is published whole at now_ms: a timed one's peers will hold each
 * cell's deadline, none for those already passed. */
static void
published_whole(struct cbf *f, uint64_t now_ms)
{
	cbf_mark_published(f);
	if (f->until == NULL)
		return;
	for (uint64_t i = 0; i < f->m; i++)
		f->until_pub[i] = cbf_live_until(f, f->until, i, now_ms);
	f->until_pub_sum = sum_checksum_timed(f->until_pub, f->m);
	cbf_timed_published(f);
}

uint64_t
pub_expected_objects(uint64_t cache_bytes, uint64_t object_bytes)
{
	uint64_t n = cache_bytes / (object_bytes ? object_bytes : 1);

	return n < PUB_MIN_OBJECTS ? PUB_MIN_OBJECTS : n;
}

uint64_t
pub_tick_ms(const struct pub_conf *c)
{
	uint64_t every = c->max_interval_ms / 4;

	return every < 100 ? 100 : every;
}

static uint64_t
filter_bits(const struct publisher *p, uint64_t objects)
{
	uint64_t m = cbf_size_for(objects, p->conf.bits_per_entry);
	uint64_t max = p->conf.max_bits;

	/* a timed filter's peers take fewer cells (psum.h) */
	if (p->conf.claims == PUB_CLAIMS_TIMED && (max == 0 ||
	    max > SUM_MAX_TIMED_CELLS))
		max = SUM_MAX_TIMED_CELLS;
	return max != 0 && m > max ? max : m;
}

struct publisher *
pub_new(const struct pub_conf *c, uint64_t now_us, uint64_t now_ms)
{
	struct publisher *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->conf = *c;
	p->capacity = c->expected_objects;
	p->local = filter_new(p, filter_bits(p, c->expected_objects), now_us,
	    now_ms);
	p->claims = claims_new();
	if (p->local == NULL || p->claims == NULL) {
		pub_free(&p);
		return NULL;
	}
	/* sequence 1 is the empty filter, as made */
	p->seq = 1;
	p->last_publish_ms = now_ms;
	p->rate_ms = now_ms;
	return p;
}

void
pub_free(struct publisher **pp)
{
	struct publisher *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	cbf_free(&p->local);
	cbf_free(&p->next);
	claims_free(&p->claims);
	free(p);
}

void
pub_set_pace(struct publisher *p, double threshold, uint64_t max_interval_ms)
{
	p->conf.threshold = threshold;
	p->conf.max_interval_ms = max_interval_ms;
}

uint64_t
pub_margin_ms(const struct publisher *p)
{
	uint64_t max = p->conf.max_interval_ms;

	switch (p->conf.claims) {
	case PUB_CLAIMS_TIMED:
		return PUB_TIMED_SLACK_MS;
	case PUB_CLAIMS_EVICTED:
		return 0;
	default:
		return max > 0 && p->interval_ms > max ? max : p->interval_ms;
	}
}

bool
pub_added(struct publisher *p, const struct sumkey *k, uint64_t expires_ms,
    uint64_t now_ms)
{
	uint64_t until = p->conf.claims == PUB_CLAIMS_EVICTED ?
	    CLAIMS_FOREVER : claims_until(expires_ms, pub_margin_ms(p));
	struct claim *c;
	int rc = claims_add(p->claims, k, until, now_ms, &c);

	if (rc == 1)
		count(p, c);
	else if (rc == 2 && timed(p))
		extend(p, c);
	return rc >= 0;
}

bool
pub_removed(struct publisher *p, const struct sumkey *k)
{
	struct claim gone;
	int rc = claims_remove(p->claims, k, &gone);

	if (rc < 0) {
		p->local->bad_removes++;
		return false;
	}
	if (rc == 1)
		uncount(p, &gone, false);
	return true;
}

uint64_t
pub_expire(struct publisher *p, uint64_t now_ms)
{
	uint64_t n = 0;
	const struct claim *c;

	while ((c = claims_lapse(p->claims, now_ms)) != NULL) {
		uncount(p, c, true);
		n++;
	}
	p->expired += n;
	return n;
}

static bool
wants_growth(const struct publisher *p)
{
	return !p->conf.fixed_size && p->local->entries > p->capacity;
}

bool
pub_wants_rebuild(const struct publisher *p, uint64_t now_ms)
{
	return !p->rebuilding && (wants_growth(p) || (timed(p) &&
	    now_ms - p->local->base_ms >= PUB_REBASE_MS));
}

bool
pub_rebuilding(const struct publisher *p)
{
	return p->rebuilding;
}

void
pub_rebuild_begin(struct publisher *p, uint64_t now_us, uint64_t now_ms)
{
	SC_ASSERT(!p->rebuilding);
	bool grow = wants_growth(p);
	/* room to double again before the next rebuild; a rebase keeps
	 * the size */
	uint64_t cap = grow ? 2 * p->local->entries : p->capacity;
	uint64_t epoch = now_us > p->local->epoch ? now_us :
	    p->local->epoch + 1;

	p->next = filter_new(p, filter_bits(p, cap), epoch, now_ms);
	/* asked once per growth, even when there is no memory for it */
	if (grow)
		p->capacity = p->next != NULL ? cap : 2 * p->capacity;
	p->rebuilding = true;
	p->walk_at = 0;
}

bool
pub_rebuild_step(struct publisher *p, size_t max)
{
	SC_ASSERT(p->rebuilding);
	size_t end = claims_slots(p->claims);

	for (; p->walk_at < end && max > 0; p->walk_at++, max--) {
		struct claim *c = claims_slot(p->claims, p->walk_at);
		if (c->objects == 0 || !c->claimed || c->tag != p->parity)
			continue;
		if (p->next != NULL)
			count_in(p->next, c);
		c->tag = !p->parity;
	}
	return p->walk_at >= end;
}

int
pub_rebuild_end(struct publisher *p, uint64_t now_ms,
    struct publication *out)
{
	SC_ASSERT(p->rebuilding);
	p->rebuilding = false;
	p->parity = !p->parity;
	if (p->next == NULL)
		return 0;
	cbf_free(&p->local);
	p->local = p->next;
	p->next = NULL;
	p->rebuilds++;
	/* a new epoch starts with a full summary at sequence 1: marked
	 * published, so the next delta is relative to it */
	published_whole(p->local, now_ms);
	p->seq = 1;
	published(p, now_ms);
	p->fulls++;
	return pub_last_full(p, now_ms, out) < 0 ? -1 : 1;
}

int
pub_announce(struct publisher *p, uint64_t now_us, uint64_t now_ms,
    struct publication *out)
{
	if (p->rebuilding)
		return 0;
	p->local->epoch = now_us > p->local->epoch ? now_us :
	    p->local->epoch + 1;
	published_whole(p->local, now_ms);
	p->seq = 1;
	published(p, now_ms);
	p->fulls++;
	return pub_last_full(p, now_ms, out) < 0 ? -1 : 1;
}

/* A threshold is a share of what the cache holds (the paper's
 * "percentage of the cache's documents"). Timed, a key that lapsed is
 * still a cached object whose return (a revalidation) is a change, so it
 * counts; it did not, and the filter's entries alone made every threshold
 * smaller the more of the cache had lapsed (at 64 proxies, 1.3x the
 * messages of claims until evicted, against 1.004x so). Fresh keeps its
 * rule: its lapses are changes already. */
static uint64_t
share_changes(const struct publisher *p, double share)
{
	double t = share * (double)(timed(p) ? claims_keys(p->claims) :
	    p->local->entries);

	return t < 1 ? 1 : (uint64_t)t;
}

/* The asks, the exposure, the clients' requests and their span brought
 * forward to now_ms: all decay by e^(-dt/tau); the exposure gains the
 * claimed keys over dt, decayed as they came (keys x tau x (1 -
 * e^(-dt/tau))), and the span the ms alike (tau x (1 - e^(-dt/tau))). */
static void
rate_at(const struct publisher *p, uint64_t now_ms, double *asks,
    double *exposure, double *requests, double *span)
{
	double tau = (double)PUB_AUTO_RATE_MS;
	double dt = now_ms > p->rate_ms ? (double)(now_ms - p->rate_ms) : 0;
	double keep = exp(-dt / tau);

	*asks = p->asks * keep;
	*exposure = p->exposure * keep + (double)p->local->entries * tau *
	    (1 - keep);
	*requests = p->requests * keep;
	*span = p->span * keep + tau * (1 - keep);
}

/* The rates as of now_ms, kept: at every ask, every count of the
 * clients' requests, and every publication (when the claimed keys may
 * jump). */
static void
rate_settle(struct publisher *p, uint64_t now_ms)
{
	rate_at(p, now_ms, &p->asks, &p->exposure, &p->requests, &p->span);
	if (now_ms > p->rate_ms)
		p->rate_ms = now_ms;
}

void
pub_asked(struct publisher *p, uint64_t n, uint64_t now_ms)
{
	rate_settle(p, now_ms);
	p->asks += (double)n;
}

void
pub_requested(struct publisher *p, uint64_t n, uint64_t now_ms)
{
	rate_settle(p, now_ms);
	p->requests += (double)n;
}

/* A publication went out at now_ms: what was pending is told. */
static void
published(struct publisher *p, uint64_t now_ms)
{
	rate_settle(p, now_ms);
	p->last_publish_ms = now_ms;
}

/*
 * Auto (summary/README.md, "When to publish"). A pending change costs
 * the peers the requests they would send us for its key, had they been
 * told (a remote hit they miss), or that they send for a key gone (a
 * false hit): a claimed key draws `rate` of them a millisecond, measured
 * over what we claimed, so the changes pending lose rate x changes a
 * millisecond. Publish at the first of two points:
 *   - the price: the changes came about evenly since the last
 *     publication, so what they have cost so far is rate x changes x t /
 *     2; once that is worth a message to each peer, waiting costs more
 *     than publishing (the rent-or-buy point, which is also the interval
 *     that minimises messages plus loss at a steady pace of changes);
 *   - the bound: what they lose a millisecond reaches PUB_AUTO_LOSS of
 *     the requests this node's own clients send it a millisecond. Every
 *     node holding to it holds the cluster's loss to that share of all
 *     requests at any size; the price alone lets it grow with the peers
 *     (a message to each grows dearer, what one node is asked for does
 *     not).
 */
static bool
worth_publishing(const struct publisher *p, unsigned peers, uint64_t now_ms)
{
	double asks, exposure, requests, span;

	/* with no peer to tell, nobody is waiting either */
	if (peers == 0)
		return false;
	rate_at(p, now_ms, &asks, &exposure, &requests, &span);
	if (exposure <= 0)
		return false;
	double changes = (double)p->local->changes;
	double losing = asks / exposure * changes;
	double t = now_ms > p->last_publish_ms ?
	    (double)(now_ms - p->last_publish_ms) : 0;

	/* the price; then the bound, losing >= LOSS x requests / span
	 * multiplied out (the span is 0 until the first ms has passed) */
	return losing * t / 2 * PUB_AUTO_HIT_MESSAGES >= (double)peers ||
	    (losing > 0 && losing * span >= PUB_AUTO_LOSS * requests);
}

bool
pub_threshold_reached(const struct publisher *p, unsigned peers,
    uint64_t now_ms)
{
	uint64_t changes = p->local->changes;

	if (p->conf.threshold > 0)
		return changes >= share_changes(p, p->conf.threshold);
	if (changes < share_changes(p, PUB_AUTO_FLOOR))
		return false;
	return changes >= share_changes(p, PUB_AUTO_CEILING) ||
	    worth_publishing(p, peers, now_ms);
}

bool
pub_interval_due(const struct publisher *p, uint64_t now_ms)
{
	return p->conf.max_interval_ms > 0 && p->local->changes > 0 &&
	    now_ms - p->last_publish_ms >= p->conf.max_interval_ms;
}

static void
describe(const struct publisher *p, bool full, uint64_t checksum,
    uint64_t now_ms, struct publication *out)
{
	const struct cbf *f = p->local;

	out->timed = f->until != NULL;
	out->sent_ms = out->timed && now_ms > f->base_ms ? now_ms - f->base_ms :
	    0;
	out->full = full;
	out->scheme = f->scheme;
	out->m = f->m;
	out->k = f->k;
	out->epoch = f->epoch;
	out->seq = p->seq;
	out->entries = f->entries;
	out->checksum = checksum;
}

int
pub_publish(struct publisher *p, uint64_t now_ms, struct publication *out)
{
	bool full;
	uint64_t checksum;

	if ((timed(p) ? sum_publish_timed(p->local, now_ms, &out->payload,
	    &full, &checksum) : sum_publish(p->local, &out->payload, &full,
	    &checksum)) < 0)
		return -1;
	/* the delay a change waits to be published: its mean, recent
	 * intervals weighing most */
	uint64_t gap = now_ms > p->last_publish_ms ?
	    now_ms - p->last_publish_ms : 0;
	p->interval_ms = p->deltas + p->fulls == 0 ? gap :
	    (4 * p->interval_ms + gap) / 5;
	p->seq++;
	published(p, now_ms);
	if (full)
		p->fulls++;
	else
		p->deltas++;
	describe(p, full, checksum, now_ms, out);
	return 0;
}

int
pub_last_full(const struct publisher *p, uint64_t now_ms,
    struct publication *out)
{
	const struct cbf *f = p->local;

	if ((f->until != NULL ? sum_encode_timed_full(f->until_pub, f->m,
	    &out->payload) : sum_encode_full(f->published, f->m,
	    &out->payload)) < 0)
		return -1;
	describe(p, true, sum_published_checksum(f), now_ms, out);
	return 0;
}

const struct cbf *
pub_filter(const struct publisher *p)
{
	return p->local;
}

void
pub_stats(const struct publisher *p, struct pub_stats *out)
{
	*out = (struct pub_stats){
		.seq = p->seq,
		.deltas = p->deltas,
		.fulls = p->fulls,
		.rebuilds = p->rebuilds,
		.last_publish_ms = p->last_publish_ms,
		.expired = p->expired,
		.keys = claims_keys(p->claims),
		.table_bytes = claims_bytes(p->claims),
	};
}

struct sum_msg
pub_msg(const struct publication *pub)
{
	return (struct sum_msg){
		.timed = pub->timed,
		.full = pub->full,
		.scheme = pub->scheme,
		.m = pub->m,
		.k = pub->k,
		.epoch = pub->epoch,
		.seq = pub->seq,
		.payload = pub->payload.p,
		.len = pub->payload.len,
		.checksum = pub->checksum,
		.sent_ms = pub->sent_ms,
	};
}
