/*
 * What the simulator's files share: the trace as read (objects and
 * requests), the (proxy, object) map, a run's parameters and results.
 *
 *   sim.c        a run over the trace: ICP, summary and owner lookups
 *                (sim_impl.h: the cluster's state, with sim_cache.c
 *                and sim_publish.c)
 *   sim_trace.c  reading the trace into objects and requests
 *   sim_map.c    the (proxy, object) -> value table
 *   sim_main.c   options, the policy line, the table and CSV output
 */
#ifndef SIM_H
#define SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admit.h"
#include "publisher.h"
#include "sumkey.h"

#define MAX_PROXIES 1024
#define NIL UINT32_MAX

/* Exits with a message: the simulator has no partial result to keep. */
void die(const char *what);
void *xcalloc(size_t n, size_t size);

/* ---- the trace (sim_trace.c) ---- */

struct object {
	struct sumkey key;
	uint64_t place;       /* place_hash of its URL (placement.h) */
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

/* Reads a trace (exits with its file and line when it is malformed). */
void trace_load(struct trace *t, const char *path);

/* ---- (proxy, object) -> value: caches and ghosts (sim_map.c) ---- */

/* Linear probing with backward-shift deletion, so a table that sees
 * millions of inserts and deletes never fills with tombstones. */
struct map {
	uint64_t *key;        /* (proxy << 32 | object) + 1; 0 is empty */
	uint32_t *val;
	size_t nslots, n;
};

uint64_t map_key(unsigned proxy, uint32_t obj);
uint32_t map_get(const struct map *m, uint64_t key);  /* NIL: absent */
void map_put(struct map *m, uint64_t key, uint32_t val);
void map_del(struct map *m, uint64_t key);
void map_free(struct map *m);

/* ---- a run (sim.c) ---- */

/* sumcache's sharing, and with placement hash: carp is sharing none,
 * summary+hash is sharing summary */
enum mode { MODE_NONE, MODE_ICP, MODE_SUMMARY, MODE_CARP, MODE_SUMMARY_HASH,
	MODE_COUNT };
extern const char *const mode_names[MODE_COUNT];

/* Whether a mode publishes summaries, and whether keys have owners. */
bool mode_summaries(enum mode m);
bool mode_hashed(enum mode m);

struct params {
	enum mode mode;
	enum pub_claims claims; /* what a summary claims (publisher.h) */
	unsigned proxies;
	double threshold;       /* share of entries */
	unsigned bits;          /* per entry */
	unsigned k;
	double cache_share;     /* of each proxy's infinite cache; or */
	uint64_t cache_bytes;   /* a fixed size per proxy */
	double max_interval;    /* seconds; 0: never */
	double filter_object_bytes;  /* 0: the proxy's mean object, once */
	unsigned peers_asked;   /* claimants asked on a miss, at most */
	double delay;           /* seconds a summary takes to arrive */
	unsigned admit_hits;    /* copies a node that is not the owner keeps */
	/* a node (number `proxies`, with no clients of its own) joins at a
	 * third of the trace and leaves at two thirds */
	bool membership;
};

/* The origin requests counted after each membership change (whether or
 * not the run makes one, so that a run without is the baseline). */
#define SIM_CHANGE_WINDOW 10000

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
	uint64_t origin_fetches;          /* whole objects */
	uint64_t revalidations;           /* of stale copies, at the origin */
	/* origin fetches of a cacheable object fetched before: what the
	 * cluster had and lost, or never kept (placement can change them;
	 * an object's first fetch it cannot) */
	uint64_t capacity_misses;
	uint64_t owner_requests, owner_hits;  /* hops to a key's owner */
	uint64_t origin_after[2];         /* join, leave: SIM_CHANGE_WINDOW */
	/* copies beyond one per object, over the cluster, sampled */
	double duplicates_sum, copies_sum;
	uint64_t samples;
	uint64_t mean_entries_sum, mean_entries_n;
	double bits_sum;                  /* m at each publication */
	double view_bytes_sum;            /* what a peer holds of the
	                                   * sender, at each arrival */
	double seconds;
};

/* The publisher's configuration for a proxy with a cache of cap bytes. */
struct pub_conf sim_pub_conf(const struct params *p, uint64_t cap);
/* Runs the cluster over the trace. */
void run(const struct trace *t, const struct params *p, struct stats *out);

#endif
