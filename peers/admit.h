/*
 * Admission: whether a node keeps its own copy of an object it does not
 * own (placement.h).
 *
 * Under `placement hash` the owner keeps what it fetches; a node that got
 * an object from the owner or from a peer keeps a copy of its own only
 * when its clients have asked for the object `hits` times recently:
 *
 *   hits = 1   every copy (the cluster then holds popular objects once
 *              per node, as Summary Cache alone does)
 *   hits = N   the Nth request within about a window of requests: the
 *              objects this node's clients ask most are served without a
 *              hop, the rest are held once in the cluster, at the owner
 *   hits = 0   never: every request for another's object is a hop
 *
 * Requests are counted in a count-min sketch (TinyLFU's frequency
 * sketch): 4-bit counters, 8 per key of the window, two per key, the
 * lesser read, only the lesser raised; every `window` requests counted,
 * all counters are halved, so counts are of the last window or two. A
 * collision can only raise a count: a copy may be kept early, never
 * refused one that has its hits.
 */
#ifndef ADMIT_H
#define ADMIT_H

#include <stdbool.h>
#include <stdint.h>

#define ADMIT_HITS_MAX 15
/* On the 8-node replay trace, 5 keeps the duplicates at 14-17 % of what
 * Summary Cache alone keeps at 16 and 64 MB a node; 2 (second hit) keeps
 * 64 % at 16 MB (peers/README.md, "Placement") */
#define ADMIT_HITS_DEFAULT 5

struct admit;

/* NULL on ENOMEM. hits: 0 to ADMIT_HITS_MAX; window: requests counted
 * between halvings, at least 1024. */
struct admit *admit_new(unsigned hits, uint64_t window);
void admit_free(struct admit **a);

/* The window for a cache of cache_bytes: as many requests as it holds
 * objects of ADMIT_OBJECT_BYTES. */
#define ADMIT_OBJECT_BYTES 8192
uint64_t admit_window(uint64_t cache_bytes);

/* This node's client asked for the object of key_hash (place_hash of its
 * URL), which it does not own and has no copy of: whether to keep the
 * copy it gets. Counts the request. */
bool admit_keep(struct admit *a, uint64_t key_hash);

/* Bytes it holds, for the metrics. */
uint64_t admit_bytes(const struct admit *a);

#endif
