/*
 * The proxy's counters and gauges, declared once: METRICS_TABLE drives
 * struct metrics, the /metrics rendering and the status page's samples;
 * the families they belong to (name, type, HELP) are families.h's
 * table. Adding a counter is its row here and its increment: the row
 * makes the field of struct metrics, or names the field of the lower
 * room's stats struct that room already keeps (and one row there for a
 * new family). Nothing copies a value from one struct to another.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "curlev.h"
#include "disk.h"
#include "families.h"
#include "leaves.h"
#include "sqdigest.h"
#include "metric.h"
#include "store.h"

struct budget_stats;
struct curlev_stats;
struct disk_stats;
struct evbuffer;
struct leaves_stats;
struct sqdigest_stats;
struct store_stats;

/*
 * X(source, field, family, label value or NULL, status page field or NULL).
 * The source is the struct the value is read from when /metrics is
 * written or the status page samples: OWN rows are this struct metrics'
 * own fields, which the proxy's rooms increment, one struct per worker,
 * summed when read (Varnish's per-worker stats: no counter is a cache
 * line the workers share); NODE rows are the node's own gauges (struct
 * metrics_node), set at start and at a reload; the others are a lower
 * room's stats, which that room keeps and nobody copies (STORE: struct
 * store_stats, BUDGET: budget_stats, DIGEST:
 * sqdigest_stats, DISK: disk_stats, LEAVES: interception's leaf cache,
 * cert/leaves.h, CURL: the upstream connections', peers/base/curlev.h;
 * each read as zero when the node has none).
 * Every field read is a uint64_t (metrics.c checks). The family
 * (families.h) gives the name, type, label key and HELP; rows of one
 * family are adjacent. Rows with a status name are sampled for the
 * status page's charts under that name; adjacent rows of one name are
 * sampled as their sum (a family's total, where the page shows no
 * breakdown).
 */
#define METRICS_TABLE(X)                                                      \
	X(OWN, req_local_hit, REQUESTS, "local_hit", "local_hit")            \
	X(OWN, req_remote_hit, REQUESTS, "remote_hit", "remote_hit")         \
	X(OWN, req_miss, REQUESTS, "miss", "miss")                           \
	X(OWN, req_error, REQUESTS, "error", "error")                        \
	X(OWN, peer_served_hit, PEER_SERVED, "hit", "peer_hit")              \
	X(OWN, peer_served_miss, PEER_SERVED, "miss", "peer_miss")           \
	X(OWN, revalidated_unmodified, REVALIDATIONS, "unmodified", NULL)    \
	X(OWN, revalidated_modified, REVALIDATIONS, "modified", NULL)        \
	X(OWN, revalidate_failed, REVALIDATIONS, "failed", NULL)             \
	X(OWN, stale_while_revalidate, STALE_SERVED, "while_revalidate", \
	    NULL)                                                            \
	X(OWN, stale_if_error, STALE_SERVED, "if_error", NULL)               \
	X(OWN, range_partial, RANGES, "partial", NULL)                       \
	X(OWN, range_unsatisfiable, RANGES, "unsatisfiable", NULL)           \
	X(OWN, range_passed, RANGES, "passed", NULL)                         \
	X(OWN, client_connections, CLIENT_CONNECTIONS, NULL, NULL)           \
	X(OWN, accept_errors, ACCEPT_ERRORS, NULL, NULL)                     \
	X(OWN, connection_limit_reached, CONN_LIMIT_REACHED, NULL, NULL)     \
	X(NODE, max_connections, MAX_CONNECTIONS, NULL, NULL)                \
	X(NODE, connections_peak, CONN_PEAK, NULL, NULL)                     \
	X(NODE, conn_mem_bound, CONN_MEM_BOUND, NULL, NULL)                  \
	X(OWN, idle_closed_at_limit, IDLE_CLOSED, NULL, NULL)                \
	X(OWN, client_denied, CLIENT_DENIED, NULL, NULL)                     \
	X(OWN, parse_errors, PARSE_ERRORS, NULL, NULL)                       \
	X(OWN, header_timeouts, HEADER_TIMEOUTS, NULL, NULL)                 \
	X(OWN, client_aborts, CLIENT_ABORTS, NULL, NULL)                     \
	X(OWN, origin_unreachable, ORIGIN_ERRORS, "unreachable", NULL)       \
	X(OWN, origin_timeout, ORIGIN_ERRORS, "timeout", NULL)               \
	X(OWN, origin_protocol, ORIGIN_ERRORS, "protocol", NULL)             \
	X(OWN, tls_refused_expired, UPSTREAM_TLS_REFUSED, "expired",         \
	    "up_refused")                                                    \
	X(OWN, tls_refused_not_yet_valid, UPSTREAM_TLS_REFUSED,              \
	    "not_yet_valid", "up_refused")                                   \
	X(OWN, tls_refused_self_signed, UPSTREAM_TLS_REFUSED, "self_signed", \
	    "up_refused")                                                    \
	X(OWN, tls_refused_unknown_ca, UPSTREAM_TLS_REFUSED, "unknown_ca",   \
	    "up_refused")                                                    \
	X(OWN, tls_refused_wrong_host, UPSTREAM_TLS_REFUSED, "wrong_host",   \
	    "up_refused")                                                    \
	X(OWN, tls_refused_other, UPSTREAM_TLS_REFUSED, "other",             \
	    "up_refused")                                                    \
	X(OWN, tls_intercepted, TLS_CONNECTS, "intercepted",                 \
	    "tls_intercepted")                                               \
	X(OWN, tls_spliced, TLS_CONNECTS, "spliced", "tls_spliced")          \
	X(OWN, tls_handshake_ok, TLS_HANDSHAKES, "ok", "tls_ok")             \
	X(OWN, tls_handshake_rejected, TLS_HANDSHAKES, "rejected",           \
	    "tls_rejected")                                                  \
	X(OWN, tls_handshake_failed, TLS_HANDSHAKES, "failed", "tls_failed") \
	X(OWN, tls_handshake_closed, TLS_HANDSHAKES, "closed", "tls_closed") \
	X(OWN, link_accepted, PEER_LINKS, "accepted", "links_accepted")      \
	X(OWN, link_refused, PEER_LINKS, "refused", "links_refused")         \
	X(OWN, link_plain_refused, PEER_LINKS, "https_over_plain", NULL)     \
	X(OWN, link_out_refused, PEER_LINKS, "refused_out", NULL)            \
	X(LEAVES, minted, TLS_LEAVES, "minted", "leaves_minted")             \
	X(LEAVES, reused, TLS_LEAVES, "reused", NULL)                        \
	X(LEAVES, evicted, TLS_LEAVES, "evicted", NULL)                      \
	X(LEAVES, refused, TLS_LEAVES, "refused", NULL)                      \
	X(LEAVES, cached, TLS_LEAVES_CACHED, NULL, "leaves_cached")          \
	X(OWN, origin_requests, ORIGIN_REQUESTS, NULL, NULL)                 \
	X(CURL, excess, UPSTREAM_EXCESS, NULL, NULL)                         \
	X(OWN, collapsed_served, COLLAPSED, "served", NULL)                  \
	X(OWN, collapsed_released, COLLAPSED, "released", NULL)              \
	X(OWN, collapsed_timeout, COLLAPSED, "timeout", NULL)                \
	X(OWN, collapsed_failed, COLLAPSED, "failed", NULL)                  \
	X(OWN, collapsed_tee, COLLAPSED_TEES, NULL, NULL)                    \
	X(OWN, tunnels, TUNNELS, NULL, "tunnels")                            \
	X(OWN, tunnel_denied, TUNNEL_DENIED, NULL, NULL)                     \
	X(OWN, invalidations, INVALIDATIONS, NULL, NULL)                     \
	X(OWN, purged, PURGES, "purged", NULL)                               \
	X(OWN, purge_absent, PURGES, "absent", NULL)                         \
	X(OWN, purge_denied, PURGES, "denied", NULL)                         \
	X(OWN, digests_served, DIGESTS_SERVED, NULL, NULL)                   \
	X(DIGEST, entries, DIGEST_ENTRIES, NULL, NULL)                       \
	X(DIGEST, table_bytes, DIGEST_TABLE_BYTES, NULL, NULL)               \
	X(OWN, forwarding_loops, FORWARDING_LOOPS, NULL, NULL)               \
	X(OWN, owner_hit, OWNER_REQUESTS, "hit", NULL)                       \
	X(OWN, owner_miss, OWNER_REQUESTS, "miss", NULL)                     \
	X(OWN, owner_failed, OWNER_REQUESTS, "failed", NULL)                 \
	X(OWN, owner_copy_kept, OWNER_COPIES, "kept", NULL)                  \
	X(OWN, owner_copy_passed, OWNER_COPIES, "passed", NULL)              \
	X(OWN, passed, PASSED, NULL, NULL)                                   \
	X(OWN, client_bytes_out, CLIENT_BYTES_OUT, NULL, NULL)               \
	X(STORE, objects, CACHE_OBJECTS, NULL, "cache_objects")              \
	X(STORE, bytes, CACHE_BYTES, NULL, "cache_bytes")                    \
	X(STORE, pinned, CACHE_PINNED, NULL, NULL)                           \
	X(STORE, evictions, EVICTIONS, NULL, "evictions")                    \
	X(STORE, lock_waits, STORE_LOCK_WAITS, NULL, NULL)                   \
	X(STORE, lock_wait_us, STORE_LOCK_WAIT_SECONDS, NULL, NULL)          \
	X(OWN, active_clients, ACTIVE_CLIENTS, NULL, NULL)                   \
	X(BUDGET, inflight, INFLIGHT_BYTES, NULL, NULL)                      \
	X(BUDGET, inflight_refused, INFLIGHT_REFUSED, NULL, NULL)            \
	X(BUDGET, trims, HEAP_TRIMS, NULL, NULL)                             \
	X(OWN, reloads_applied, RELOADS, "applied", NULL)                    \
	X(OWN, reloads_refused, RELOADS, "refused", NULL)                    \
	X(OWN, hit_memory, HITS_BY_TIER, "memory", "hit_memory")             \
	X(OWN, hit_disk, HITS_BY_TIER, "disk", "hit_disk")                   \
	X(DISK, objects, DISK_OBJECTS, NULL, "disk_objects")                 \
	X(DISK, bytes, DISK_BYTES, NULL, "disk_bytes")                       \
	X(DISK, file_bytes, DISK_FILE_BYTES, NULL, NULL)                     \
	X(DISK, index_bytes, DISK_INDEX_BYTES, NULL, NULL)                   \
	X(DISK, reads, DISK_OPS, "read", NULL)                               \
	X(DISK, writes, DISK_OPS, "write", NULL)                             \
	X(DISK, keys_written, DISK_OPS, "key_file", NULL)                    \
	X(DISK, read_errors, DISK_OP_ERRORS, "read", NULL)                   \
	X(DISK, write_errors, DISK_OP_ERRORS, "write", NULL)                 \
	X(DISK, keys_errors, DISK_OP_ERRORS, "key_file", NULL)               \
	X(DISK, write_refused, DISK_REFUSED, NULL, NULL)                     \
	X(DISK, read_us, DISK_OP_SECONDS, "read", NULL)                      \
	X(DISK, write_us, DISK_OP_SECONDS, "write", NULL)                    \
	X(DISK, dropped[DISK_DROP_TORN], DISK_DROPPED, "torn", NULL)         \
	X(DISK, dropped[DISK_DROP_CHECKSUM], DISK_DROPPED, "checksum", NULL) \
	X(DISK, dropped[DISK_DROP_IO], DISK_DROPPED, "io_error", NULL)       \
	X(DISK, dropped[DISK_DROP_REPLACED], DISK_DROPPED, "replaced", NULL) \
	X(DISK, dropped[DISK_DROP_ABORTED], DISK_DROPPED, "aborted", NULL)   \
	X(DISK, dropped[DISK_DROP_SHORT], DISK_DROPPED, "short", NULL)       \
	X(DISK, segments_changed, DISK_CHANGED, NULL, NULL)                  \
	X(DISK, reads_cached, DISK_READS_CACHED, NULL, NULL)                 \
	X(DISK, streams, DISK_STREAMED, NULL, NULL)                          \
	X(DISK, segments_evicted, DISK_EVICTED, NULL, NULL)                  \
	X(DISK, readmitted, DISK_READMITTED, NULL, NULL)                     \
	X(DISK, scan_segments, DISK_SCAN_SEGMENTS, "found", NULL)            \
	X(DISK, scan_segments_done, DISK_SCAN_SEGMENTS, "scanned", NULL)     \
	X(DISK, scan_from_keys, DISK_SCAN_SEGMENTS, "from_key_file", NULL)   \
	X(DISK, scan_us, DISK_SCAN_SECONDS, NULL, NULL)


#define METRICS_FIELD_OWN(field) _Atomic uint64_t field;
#define METRICS_FIELD_NODE(field)
#define METRICS_FIELD_STORE(field)
#define METRICS_FIELD_BUDGET(field)
#define METRICS_FIELD_DIGEST(field)
#define METRICS_FIELD_DISK(field)
#define METRICS_FIELD_LEAVES(field)
#define METRICS_FIELD_CURL(field)

/* A worker's counters. Only the worker's thread writes them (METRIC_INC,
 * METRIC_ADD); another thread reads them when it sums them for /metrics
 * or the status page (metrics_sum). */
struct metrics {
#define METRICS_FIELD(src, field, family, label, status)                     \
	METRICS_FIELD_##src(field)
	METRICS_TABLE(METRICS_FIELD)
#undef METRICS_FIELD
};

/* One writer, readers elsewhere: a relaxed load and store (a plain add
 * on x86), not a locked add, and no torn value for the reader. */
#define METRIC_ADD(f, n)                                                      \
	atomic_store_explicit(&(f), atomic_load_explicit(&(f),               \
	    memory_order_relaxed) + (uint64_t)(n), memory_order_relaxed)
#define METRIC_INC(f) METRIC_ADD(f, 1)

/* Adds every counter of from to into's (into is the caller's own). */
void metrics_sum(struct metrics *into, const struct metrics *from);
/* The requests m's worker has answered its clients (sumcache_requests_total,
 * every result), read as metrics_sum reads them. */
uint64_t metrics_requests(const struct metrics *m);

/* The node's gauges: what a worker would only copy. */
struct metrics_node {
	uint64_t max_connections;
	uint64_t connections_peak; /* node->conns_peak when read */
	uint64_t conn_mem_bound;
};

/* Where the rows' values are read from; any but own may be NULL (its
 * rows read zero). Every pointer is borrowed for the one call; a value
 * that is a copy taken for the read (the store's counters, taken under
 * its lock; the workers' counters, summed) is kept in taken, which the
 * view's pointer then names. */
struct metrics_view {
	struct {
		struct store_stats store;
		struct budget_stats budget;
		struct curlev_stats curl;
		struct sqdigest_stats digest;
		struct leaves_stats leaves;
		struct disk_stats disk;
		struct metrics own;   /* the workers' summed */
		struct metrics_node node;
	} taken;
	const struct metrics *own;
	const struct metrics_node *node;
	const struct store_stats *store;
	const struct budget_stats *budget;
	const struct sqdigest_stats *digest;
	const struct disk_stats *disk;
	const struct leaves_stats *leaves;
	const struct curlev_stats *curl;
};

/* Appends the Prometheus text exposition of v to out. */
void metrics_render(const struct metrics_view *v, struct evbuffer *out);

/* The rows with a status page name, in table order, adjacent rows of one
 * name summed: names[i] and values[i] for i below the count returned (at
 * most max). */
size_t metrics_status_fields(const struct metrics_view *v,
    const char **names, uint64_t *values, size_t max);

/* proxy/README.md's metric reference (sumcache --metrics-list): every
 * family, the proxy's then the peers' (peers/peerstats.h). */
void metrics_reference(struct evbuffer *out);

#endif
