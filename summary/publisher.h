/*
 * The publisher: this node's counting filter over what it caches, and the
 * rules for when and what it tells its peers. The daemon (peers/) and the
 * simulator (deploy/sim) both run it, so the simulator predicts the
 * daemon's policy rather than a copy of it. Pure: no I/O, no clock of its
 * own (times are passed in), no globals.
 *
 * The rules:
 *   - Sizing. A filter is sized for conf.expected_objects at
 *     bits_per_entry (timed: a table of that many keys at CK_LOAD);
 *     pub_expected_objects gives the daemon's guess for a cache of a
 *     given size (PUB_OBJECT_BYTES per object, at least
 *     PUB_MIN_OBJECTS).
 *   - Threshold. A fixed one: a publication is due when the changes
 *     (adds and removes) since the last one reach threshold x entries,
 *     at least 1; timed, x the keys of the cached objects, lapsed or not.
 *     Auto (threshold 0): when what the pending changes have cost the
 *     peers so far, in the requests they would have sent us, is worth a
 *     message to each of them, or when what they cost a millisecond
 *     reaches PUB_AUTO_LOSS of this node's own requests
 *     (pub_threshold_reached; the derivation is in summary/README.md),
 *     between PUB_AUTO_FLOOR and PUB_AUTO_CEILING of the keys.
 *   - Max interval. Pending changes are published once max_interval has
 *     passed since the last publication; the caller checks every
 *     pub_tick_ms.
 *   - Delta or full: whichever encodes smaller (sum_publish, or
 *     ck_publish for a timed table).
 *   - Claims (pub_conf.claims). The filter holds a key while some stored
 *     object has it and the copy is still fresh enough for a peer to be
 *     served it. The publisher keeps each key it was given in a claims
 *     table (claims.h): pub_expire takes keys out of the filter as their
 *     deadline passes, with no walk of the store, and a key comes back
 *     when an object of it is stored again. Three policies:
 *       timed    (the daemon's) the filter is a cuckoo table (cuckoo.h)
 *                whose slots each carry one key's fingerprint and its
 *                own deadline, rounded down (deadline.h), and peers drop
 *                a claim when its deadline passes, so a lapse is not a
 *                change to publish; a deadline moved later (a
 *                revalidation) is. Deadlines are expiry less
 *                PUB_TIMED_SLACK_MS.
 *       fresh    the filter is plain bits; a key leaves at its expiry less
 *                the publication delay (the mean interval between
 *                publications, at most the max interval), since peers see
 *                a lapse only when it is published, and the lapse is a
 *                change like any other.
 *       evicted  a key stays until its last object is evicted (the paper's
 *                summary, and this project's before freshness).
 *     The simulator runs all three on one trace, to show the trade.
 *   - Shifts. A timed table's codes count from a base that moves on
 *     every CK_SHIFT_MS, here and at every peer with no message
 *     (deadline.h); a key whose deadline was beyond the codes' range and
 *     has come within it gets its exact code then, a change.
 *   - Growth. Once the filter claims more keys than it was sized for (or
 *     a timed table had no room for one), a
 *     filter for twice as many is built beside it from a walk over the
 *     publisher's own table (no store or disk walk, no I/O), a step at a
 *     time while objects keep coming and going; it then replaces the old
 *     one in a new epoch, announced with a full summary at sequence 1.
 *     Each key carries the parity of the filter that counts it; a rebuild
 *     flips the parity, so the walk adds each claimed key exactly once
 *     whether it was claimed before or during the walk, and a lapse during
 *     the walk leaves the new filter only if the key was already in it.
 *   - Epochs are the wall-clock time in microseconds a filter was made,
 *     passed in, and at least one more than the previous epoch: a
 *     restarted node's summaries are newer than anything it sent before,
 *     and a clock stepped back cannot make them older.
 */
#ifndef PUBLISHER_H
#define PUBLISHER_H

#include <stdbool.h>
#include <stdint.h>

#include "cbf.h"
#include "claims.h"
#include "psum.h"

/* Filters are sized for cache bytes / PUB_OBJECT_BYTES objects: small
 * objects (the web's median is larger), since an over-sized filter costs
 * 4 bits of memory a counter and about a wire bit a set position per
 * doubling, while an under-sized one must be rebuilt. */
#define PUB_OBJECT_BYTES 2048
/* and a disk tier's bytes / PUB_DISK_OBJECT_BYTES: what a disk keeps is
 * mostly what memory could not, larger objects */
#define PUB_DISK_OBJECT_BYTES 16384
#define PUB_MIN_OBJECTS 1024

enum pub_claims {
	PUB_CLAIMS_TIMED = 0,
	PUB_CLAIMS_FRESH,
	PUB_CLAIMS_EVICTED,
	PUB_CLAIMS_COUNT
};

/* "timed", "fresh", "evicted"; and back (false: no such policy). */
const char *pub_claims_name(enum pub_claims c);
bool pub_claims_parse(const char *name, enum pub_claims *c);

/* A timed claim ends this long before its copy's expiry: what a peer's
 * reckoning of our clock may lag (a message's transit), and the time a
 * peer's request takes to reach us. */
#define PUB_TIMED_SLACK_MS 1000

/*
 * The update threshold when the configuration leaves it to us: auto
 * (0, the rule below), or 10 % under placement hash. There a miss goes
 * to the key's owner whatever the summaries say, and they only find the
 * copies held elsewhere; on an 8-node replay a tenth of the messages kept
 * the hit ratio (deploy/README.md, Placement). And the owners' requests,
 * which come whatever the summaries say, are no measure of what a
 * summary is worth.
 */
#define PUB_THRESHOLD_AUTO 0.0
static inline double
pub_threshold_default(bool placed)
{
	return placed ? 0.10 : PUB_THRESHOLD_AUTO;
}

/*
 * Auto's constants (summary/README.md, "When to publish"). A peer's
 * request that the pending changes cost (a remote hit it did not know
 * of, or a false hit on a key gone) is worth PUB_AUTO_HIT_MESSAGES
 * messages; by bytes alone it would be about 26 (a 9 KB object fetched
 * again from the origin against a 355-byte delta, on the simulator's
 * traces). Whatever the price, the changes pending may cost the peers at
 * most PUB_AUTO_LOSS of the requests this node's clients send it. Both
 * are fitted, to the goals of 4 to 256 proxies on warming and churning
 * traces (deploy/README.md, "When to publish"): the bound sets the
 * quality of large clusters, the price how much an 8-node one saves. The
 * rates forget with a time constant of PUB_AUTO_RATE_MS. The floor keeps
 * a node whose keys peers ask for all the time from publishing on every
 * change; the ceiling bounds what a summary may miss when nobody asks (a
 * cache warming up, before peers know it has anything).
 */
#define PUB_AUTO_HIT_MESSAGES 128
#define PUB_AUTO_LOSS 0.0035
#define PUB_AUTO_RATE_MS (5ull * 60 * 1000)
#define PUB_AUTO_FLOOR 0.005
#define PUB_AUTO_CEILING 0.10

struct pub_conf {
	enum pub_claims claims;
	enum sum_scheme scheme;
	unsigned bits_per_entry;
	unsigned k;
	double threshold;            /* share of entries, (0, 1]; 0: auto */
	uint64_t max_interval_ms;    /* 0: never on time alone */
	uint64_t expected_objects;   /* the first filter's sizing */
	uint64_t max_bits;           /* ceiling on a filter's m (the wire's) */
	bool fixed_size;             /* never grown */
};

/* What one publication says: the message's fields besides the sender. */
struct publication {
	bool full;
	enum sum_scheme scheme;
	uint64_t m;
	unsigned k;
	uint64_t epoch, seq;
	uint64_t entries;
	uint64_t checksum;           /* of the summary as published */
	struct sum_buf payload;      /* appended to; the caller frees it */
	bool timed;                  /* a cuckoo table (cuckoo.h): m its
	                              * slots, k its fingerprint's bits */
	uint64_t sent_ms;            /* timed: our clock, ms since the
	                              * table was made */
};

struct publisher;

/* A publication as the receiving side takes it (psum_take). */
struct sum_msg pub_msg(const struct publication *pub);
/* The false-positive rate a publication's summary should show, from its
 * size and entries: a Bloom filter's (1 - e^(-kn/m))^k, or the table's
 * (ck_fpr). */
double pub_fpr(const struct publication *pub);

/* Objects a cache of cache_bytes is first sized for, at object_bytes an
 * object (the daemon: PUB_OBJECT_BYTES). */
uint64_t pub_expected_objects(uint64_t cache_bytes, uint64_t object_bytes);
/* How often the caller checks the max interval: a quarter of it, at
 * least 100 ms. */
uint64_t pub_tick_ms(const struct pub_conf *c);

/* A publisher with an empty filter made at now_us, published as sequence
 * 1 at now_ms (the empty summary a pull gets first). NULL on ENOMEM or
 * bad parameters. */
struct publisher *pub_new(const struct pub_conf *c, uint64_t now_us,
    uint64_t now_ms);
void pub_free(struct publisher **p);
/* A reload: publish at this threshold and max interval from now on. */
void pub_set_pace(struct publisher *p, double threshold,
    uint64_t max_interval_ms);

/*
 * The store took in an object with key k that stays fresh until
 * expires_ms (CLAIMS_FOREVER: never), at now_ms on the same clock. Returns
 * false on ENOMEM (the object is then in no summary; its removal is a
 * bad remove).
 */
bool pub_added(struct publisher *p, const struct sumkey *k,
    uint64_t expires_ms, uint64_t now_ms);
/* The store let go of an object with key k. False when no stored object
 * has it (a caller's mistake, counted in the filter's bad_removes). */
bool pub_removed(struct publisher *p, const struct sumkey *k);
/* Keys whose deadline has passed at now_ms (pub_added's clock) leave
 * the filter (timed: as the peers already dropped them, not a change).
 * Returns how many. */
uint64_t pub_expire(struct publisher *p, uint64_t now_ms);
/* How often the caller runs pub_expire: a key lapses at most this late. */
#define PUB_EXPIRE_TICK_MS 1000
/* How long before expiry a key leaves the filter, now; 0 for evicted. */
uint64_t pub_margin_ms(const struct publisher *p);

/* Growth: the caller starts a rebuild when it is wanted, calls
 * pub_rebuild_step until it returns true (with adds, removes and expiry
 * between the calls), then ends it. */
bool pub_wants_rebuild(const struct publisher *p);
bool pub_rebuilding(const struct publisher *p);
void pub_rebuild_begin(struct publisher *p, uint64_t now_us,
    uint64_t now_ms);
/* Walks at most max keys of the table into the new filter; true once
 * every key has been walked. */
bool pub_rebuild_step(struct publisher *p, size_t max);
/* The new filter takes over: out is the full summary that announces it.
 * Returns 1 (out filled), 0 when no new filter could be made (out
 * untouched, the old one stays), -1 on ENOMEM encoding it. */
int pub_rebuild_end(struct publisher *p, uint64_t now_ms,
    struct publication *out);

/*
 * The filter as it stands starts a new epoch (at least the last + 1):
 * out is its full summary, at sequence 1. For a cache restored from disk,
 * whose peers must drop what they held of it and take this. Returns 1
 * (out filled), 0 while a rebuild runs (its end announces a new epoch
 * anyway), -1 on ENOMEM.
 */
int pub_announce(struct publisher *p, uint64_t now_us, uint64_t now_ms,
    struct publication *out);

/* Peers asked this node n times at now_ms for keys its summary claimed
 * (served or not): auto's measure of what a claim is worth. */
void pub_asked(struct publisher *p, uint64_t n, uint64_t now_ms);
/* This node's clients sent it n requests at now_ms. */
void pub_requested(struct publisher *p, uint64_t n, uint64_t now_ms);
/* Whether a publication is due at now_ms, to `peers` receivers: by the
 * threshold, or by the max interval. */
bool pub_threshold_reached(const struct publisher *p, unsigned peers,
    uint64_t now_ms);
bool pub_interval_due(const struct publisher *p, uint64_t now_ms);
/* Publishes now: out gets the smaller of a delta and a full summary.
 * Returns 0, or -1 on ENOMEM with nothing published. */
int pub_publish(struct publisher *p, uint64_t now_ms,
    struct publication *out);
/* The full summary of the last publication (for a pull, or a peer that
 * comes back), sent at now_ms. Returns 0 or -1 (ENOMEM). */
int pub_last_full(const struct publisher *p, uint64_t now_ms,
    struct publication *out);

/* The counting filter in use (claims fresh or evicted; NULL when
 * timed), and what the status page shows of either kind. */
const struct cbf *pub_filter(const struct publisher *p);
struct pub_stats {
	uint64_t seq;                /* of the last publication */
	uint64_t deltas, fulls;      /* publications of each kind */
	uint64_t rebuilds;
	uint64_t last_publish_ms;
	uint64_t expired;            /* keys that lapsed out of the filter */
	uint64_t keys;               /* in the claims table: claimed or not */
	uint64_t table_bytes;        /* the claims table's memory */
	uint64_t entries;            /* keys the filter counts */
	uint64_t m;                  /* its bits (timed: slots) */
	uint64_t epoch;
	uint64_t pending;            /* changes not yet published */
	uint64_t checksum;           /* of the summary as last published */
	uint64_t bad_removes;        /* removes of keys no object had */
	uint64_t saturations;        /* counters at their top; timed: keys
	                              * the table had no room for */
	uint64_t filter_bytes;       /* the filter's memory */
};
void pub_stats(const struct publisher *p, struct pub_stats *out);

#endif
