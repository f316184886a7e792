/*
 * See publisher.h.
 */
#include "publisher.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "claims.h"
#include "cuckoo.h"
#include "sc_assert.h"

/* The filters a key is counted in go by its claim's tag: the parity of
 * the filter that counts it, while it is claimed. Claims fresh or
 * evicted count keys in a counting filter (local, next); timed claims
 * put each key and its deadline in a cuckoo table (table, table_next),
 * and the publisher counts the changes and bad removes itself. */
struct publisher {
	struct pub_conf conf;
	struct cbf *local;       /* counts the claimed keys; is published */
	struct cbf *next;        /* being built larger, or NULL */
	struct ck_table *table;  /* timed: local's place */
	struct ck_table *table_next;
	bool rebuilding;         /* a walk is running (next may be NULL) */
	uint8_t parity;          /* the parity of keys local counts */
	size_t walk_at;          /* the rebuild's next slot */
	uint64_t capacity;       /* keys local was sized for */
	uint64_t epoch;          /* of the filter in use */
	uint64_t next_epoch;     /* of the one being built */
	uint64_t changes;        /* timed: since the last publication */
	uint64_t bad_removes;    /* removes of keys no stored object has */
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
static int publish_whole(struct publisher *p, uint64_t now_ms,
    struct publication *out);

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

/* Keys the filter in use counts, and changes since the last
 * publication. */
static uint64_t
entries(const struct publisher *p)
{
	return timed(p) ? p->table->keys : p->local->entries;
}

static uint64_t
changes(const struct publisher *p)
{
	return timed(p) ? p->changes : p->local->changes;
}

/* Whether a walk has a new filter to count keys in. */
static bool
has_next(const struct publisher *p)
{
	return timed(p) ? p->table_next != NULL : p->next != NULL;
}

/* Counts c in the new filter, or the one in use. A table too full for
 * it (ck_add refused) leaves it out until the growth that follows. */
static void
count_in(struct publisher *p, bool next, const struct claim *c)
{
	if (timed(p))
		(void)ck_add(next ? p->table_next : p->table, &c->key,
		    c->until_ms);
	else
		cbf_add(next ? p->next : p->local, &c->key);
}

/* Whether c is counted in the new filter of a walk: the walk passed it,
 * or it came after. */
static bool
in_next(const struct publisher *p, const struct claim *c)
{
	return p->rebuilding && has_next(p) && c->tag != p->parity;
}

/* A key just claimed: counted in the filter, and in the new one during
 * a walk. */
static void
count(struct publisher *p, struct claim *c)
{
	c->tag = p->rebuilding ? !p->parity : p->parity;
	count_in(p, false, c);
	if (p->rebuilding && has_next(p))
		count_in(p, true, c);
	p->changes += timed(p);  /* a filter of bits counts its own */
}

/* c's deadline was was_ms (UINT64_MAX: its code the top, beyond the
 * range) in t: its slot takes c's; a key not found there (refused, or
 * emptied by a shift a moment before it lapses) goes in afresh. */
static void
retime_in(struct ck_table *t, const struct claim *c, uint64_t was_ms)
{
	if (!ck_retime(t, &c->key, was_ms, c->until_ms))
		(void)ck_add(t, &c->key, c->until_ms);
}

/* A claimed key's deadline moved, from was_ms: its slots follow (timed;
 * a filter of bits has nothing to change). */
static void
retime(struct publisher *p, const struct claim *c, uint64_t was_ms)
{
	if (!timed(p))
		return;
	retime_in(p->table, c, was_ms);
	if (in_next(p, c))
		retime_in(p->table_next, c, was_ms);
	p->changes++;
}

/* A key no longer claimed: evicted (a change), or lapsed (timed: the
 * peers let it go by themselves, its code passed). */
static void
uncount(struct publisher *p, const struct claim *c, bool lapsed)
{
	if (timed(p)) {
		if (in_next(p, c))
			ck_remove(p->table_next, &c->key, c->until_ms);
		ck_remove(p->table, &c->key, c->until_ms);
		p->changes += !lapsed;
		return;
	}
	if (in_next(p, c))
		cbf_remove(p->next, &c->key);
	cbf_remove(p->local, &c->key);
}

/*
 * The tables' bases move on to now_ms's (deadline.h): no message, but a
 * key whose deadline was beyond the range and has come within it gets its
 * exact code, a change to publish. A walk of the claims table once a
 * shift (CK_SHIFT_MS), cheaper than keeping the keys beyond in a heap of
 * their own.
 */
static void
shift(struct publisher *p, uint64_t now_ms)
{
	if (!timed(p))
		return;
	uint64_t n = ck_shift(p->table, now_ms);
	uint64_t nn = p->table_next != NULL ?
	    ck_shift(p->table_next, now_ms) : 0;
	if (n == 0 && nn == 0)
		return;
	size_t end = claims_slots(p->claims);
	for (size_t i = 0; i < end; i++) {
		struct claim *c = claims_slot(p->claims, i);
		if (c->objects == 0 || !c->claimed)
			continue;
		if (n > 0 && ck_came_within(p->table, n, c->until_ms)) {
			retime_in(p->table, c, UINT64_MAX);
			p->changes++;
		}
		if (nn > 0 && in_next(p, c) &&
		    ck_came_within(p->table_next, nn, c->until_ms))
			retime_in(p->table_next, c, UINT64_MAX);
	}
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

	return max != 0 && m > max ? max : m;
}

/* A timed table's buckets for objects keys: at most the wire's m in
 * slots, and CK_MAX_BUCKETS. */
static uint64_t
table_buckets(const struct publisher *p, uint64_t objects)
{
	uint64_t nb = ck_buckets_for(objects), max = CK_MAX_BUCKETS;

	if (p->conf.max_bits != 0 && p->conf.max_bits / CK_BUCKET < max)
		max = p->conf.max_bits / CK_BUCKET;
	return nb > max ? (max ? max : 1) : nb;
}

/* The filter for p's policy, sized for objects, made at now_ms; false
 * on ENOMEM. */
static bool
make_filter(struct publisher *p, bool next, uint64_t objects,
    uint64_t now_ms)
{
	if (timed(p)) {
		struct ck_table *t = ck_new(table_buckets(p, objects), now_ms);
		*(next ? &p->table_next : &p->table) = t;
		return t != NULL;
	}
	struct cbf *f = cbf_new(p->conf.scheme, filter_bits(p, objects),
	    p->conf.k);
	*(next ? &p->next : &p->local) = f;
	return f != NULL;
}

struct publisher *
pub_new(const struct pub_conf *c, uint64_t now_us, uint64_t now_ms)
{
	struct publisher *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->conf = *c;
	p->capacity = c->expected_objects;
	p->epoch = now_us;
	p->claims = claims_new();
	if (!make_filter(p, false, c->expected_objects, now_ms) ||
	    p->claims == NULL) {
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
	ck_free(&p->table);
	ck_free(&p->table_next);
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
	uint64_t was;

	shift(p, now_ms);
	int rc = claims_add(p->claims, k, until, now_ms, &c, &was);
	if (rc == 1)
		count(p, c);
	else if (rc == 2)
		retime(p, c, was);
	return rc >= 0;
}

bool
pub_removed(struct publisher *p, const struct sumkey *k)
{
	struct claim gone;
	int rc = claims_remove(p->claims, k, &gone);

	if (rc < 0) {
		p->bad_removes++;
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

	shift(p, now_ms);
	while ((c = claims_lapse(p->claims, now_ms)) != NULL) {
		uncount(p, c, true);
		n++;
	}
	p->expired += n;
	return n;
}

/* More keys than the filter was sized for, or (timed) a key the table
 * had no room for, unless it is as large as it may be (then the keys
 * it refuses are counted in its saturations, and not claimed). */
static bool
wants_growth(const struct publisher *p)
{
	if (p->conf.fixed_size)
		return false;
	if (!timed(p))
		return entries(p) > p->capacity;
	return p->table->nb < table_buckets(p, UINT64_MAX / 2) &&
	    (entries(p) > p->capacity || p->table->full_adds > 0);
}

bool
pub_wants_rebuild(const struct publisher *p)
{
	return !p->rebuilding && wants_growth(p);
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
	/* room to double again before the next rebuild (a table that
	 * refused a key below its sizing: twice that) */
	uint64_t cap = 2 * (entries(p) > p->capacity ? entries(p) :
	    p->capacity);

	p->next_epoch = now_us > p->epoch ? now_us : p->epoch + 1;
	/* asked once per growth, even when there is no memory for it */
	p->capacity = make_filter(p, true, cap, now_ms) ? cap :
	    2 * p->capacity;
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
		if (has_next(p))
			count_in(p, true, c);
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
	if (!has_next(p))
		return 0;
	if (timed(p)) {
		ck_free(&p->table);
		p->table = p->table_next;
		p->table_next = NULL;
	} else {
		cbf_free(&p->local);
		p->local = p->next;
		p->next = NULL;
	}
	p->epoch = p->next_epoch;
	p->rebuilds++;
	return publish_whole(p, now_ms, out);
}

int
pub_announce(struct publisher *p, uint64_t now_us, uint64_t now_ms,
    struct publication *out)
{
	if (p->rebuilding)
		return 0;
	p->epoch = now_us > p->epoch ? now_us : p->epoch + 1;
	return publish_whole(p, now_ms, out);
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
	    entries(p));

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
	*exposure = p->exposure * keep + (double)entries(p) * tau *
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
	double losing = asks / exposure * (double)changes(p);
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
	uint64_t n = changes(p);

	if (p->conf.threshold > 0)
		return n >= share_changes(p, p->conf.threshold);
	if (n < share_changes(p, PUB_AUTO_FLOOR))
		return false;
	return n >= share_changes(p, PUB_AUTO_CEILING) ||
	    worth_publishing(p, peers, now_ms);
}

bool
pub_interval_due(const struct publisher *p, uint64_t now_ms)
{
	return p->conf.max_interval_ms > 0 && changes(p) > 0 &&
	    now_ms - p->last_publish_ms >= p->conf.max_interval_ms;
}

static void
describe(const struct publisher *p, bool full, uint64_t checksum,
    uint64_t sent_ms, struct publication *out)
{
	out->timed = timed(p);
	out->sent_ms = sent_ms;
	out->full = full;
	out->scheme = p->conf.scheme;
	out->m = timed(p) ? p->table->nb * CK_BUCKET : p->local->m;
	out->k = timed(p) ? CK_FP_BITS : p->local->k;
	out->epoch = p->epoch;
	out->seq = p->seq;
	out->entries = entries(p);
	out->checksum = checksum;
}

/* The filter's delta or whole, whichever is smaller, into out. */
static int
encode_publication(struct publisher *p, uint64_t now_ms,
    struct publication *out)
{
	bool full;
	uint64_t checksum, sent_ms = 0;

	if (timed(p)) {
		shift(p, now_ms);
		if (ck_publish(p->table, now_ms, &out->payload, &full,
		    &sent_ms, &checksum) < 0)
			return -1;
		p->changes = 0;
	} else if (sum_publish(p->local, &out->payload, &full,
	    &checksum) < 0) {
		return -1;
	}
	describe(p, full, checksum, sent_ms, out);
	return 0;
}

/* The filter starts a new epoch (p->epoch set) with a full summary at
 * sequence 1, marked published, so the next delta is relative to it. */
static int
publish_whole(struct publisher *p, uint64_t now_ms, struct publication *out)
{
	p->seq = 1;
	p->fulls++;
	published(p, now_ms);
	if (timed(p)) {
		ck_whole_next(p->table);
		return encode_publication(p, now_ms, out) < 0 ? -1 : 1;
	}
	cbf_mark_published(p->local);
	return pub_last_full(p, now_ms, out) < 0 ? -1 : 1;
}

int
pub_publish(struct publisher *p, uint64_t now_ms, struct publication *out)
{
	/* the delay a change waits to be published: its mean, recent
	 * intervals weighing most */
	uint64_t gap = now_ms > p->last_publish_ms ?
	    now_ms - p->last_publish_ms : 0;

	p->seq++;
	if (encode_publication(p, now_ms, out) < 0) {
		p->seq--;
		return -1;
	}
	p->interval_ms = p->deltas + p->fulls == 0 ? gap :
	    (4 * p->interval_ms + gap) / 5;
	published(p, now_ms);
	if (out->full)
		p->fulls++;
	else
		p->deltas++;
	return 0;
}

int
pub_last_full(const struct publisher *p, uint64_t now_ms,
    struct publication *out)
{
	uint64_t checksum, sent_ms = 0;

	if (timed(p)) {
		if (ck_encode_published(p->table, now_ms, &out->payload,
		    &sent_ms, &checksum) < 0)
			return -1;
	} else {
		if (sum_encode_full(p->local->published, p->local->m,
		    &out->payload) < 0)
			return -1;
		checksum = sum_checksum(p->local->published, p->local->m);
	}
	describe(p, true, checksum, sent_ms, out);
	return 0;
}

const struct cbf *
pub_filter(const struct publisher *p)
{
	return p->local;
}

double
pub_fpr(const struct publication *pub)
{
	double n = (double)pub->entries, m = (double)pub->m;

	return pub->timed ? ck_fpr(pub->entries, pub->m) :
	    pow(1 - exp(-(double)pub->k * n / m), pub->k);
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
		.entries = entries(p),
		.m = timed(p) ? p->table->nb * CK_BUCKET : p->local->m,
		.epoch = p->epoch,
		.pending = changes(p),
		.checksum = timed(p) ? p->table->pub_sum :
		    sum_checksum(p->local->published, p->local->m),
		/* and those a counting filter found no counter for */
		.bad_removes = p->bad_removes + (timed(p) ? 0 :
		    p->local->bad_removes),
		.saturations = timed(p) ? p->table->full_adds :
		    p->local->saturations,
		.filter_bytes = timed(p) ? ck_bytes(p->table) :
		    cbf_bytes(p->local),
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
