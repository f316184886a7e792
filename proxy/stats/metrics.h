/*
 * The proxy's own counters and gauges, declared once: METRICS_TABLE drives
 * the struct, their /metrics rendering and the status page's samples; the
 * families they belong to (name, type, HELP) are peers/metric.h's table.
 * Adding a counter is one line here (and one there for a new family).
 */
#ifndef METRICS_H
#define METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "metric.h"

struct evbuffer;

/*
 * X(field, family, label value or NULL, status page field or NULL). The
 * family (peers/metric.h) gives the name, type, label key and HELP; rows
 * of one family are adjacent. Rows with a status name are sampled for the
 * status page's charts under that name.
 */
#define METRICS_TABLE(X)                                                      \
	X(req_local_hit, REQUESTS, "local_hit", "local_hit")                 \
	X(req_remote_hit, REQUESTS, "remote_hit", "remote_hit")              \
	X(req_miss, REQUESTS, "miss", "miss")                                \
	X(req_error, REQUESTS, "error", "error")                             \
	X(peer_served_hit, PEER_SERVED, "hit", "peer_hit")                   \
	X(peer_served_miss, PEER_SERVED, "miss", "peer_miss")                \
	X(revalidated_unmodified, REVALIDATIONS, "unmodified", NULL)         \
	X(revalidated_modified, REVALIDATIONS, "modified", NULL)             \
	X(revalidate_failed, REVALIDATIONS, "failed", NULL)                  \
	X(stale_while_revalidate, STALE_SERVED, "while_revalidate", NULL)    \
	X(stale_if_error, STALE_SERVED, "if_error", NULL)                    \
	X(range_partial, RANGES, "partial", NULL)                            \
	X(range_unsatisfiable, RANGES, "unsatisfiable", NULL)                \
	X(range_passed, RANGES, "passed", NULL)                              \
	X(client_connections, CLIENT_CONNECTIONS, NULL, NULL)                \
	X(accept_errors, ACCEPT_ERRORS, NULL, NULL)                          \
	X(connection_limit_reached, CONN_LIMIT_REACHED, NULL, NULL)          \
	X(max_connections, MAX_CONNECTIONS, NULL, NULL)                      \
	X(conn_mem_bound, CONN_MEM_BOUND, NULL, NULL)                        \
	X(idle_closed_at_limit, IDLE_CLOSED, NULL, NULL)                     \
	X(client_denied, CLIENT_DENIED, NULL, NULL)                          \
	X(parse_errors, PARSE_ERRORS, NULL, NULL)                            \
	X(header_timeouts, HEADER_TIMEOUTS, NULL, NULL)                      \
	X(client_aborts, CLIENT_ABORTS, NULL, NULL)                          \
	X(origin_unreachable, ORIGIN_ERRORS, "unreachable", NULL)            \
	X(origin_timeout, ORIGIN_ERRORS, "timeout", NULL)                    \
	X(origin_protocol, ORIGIN_ERRORS, "protocol", NULL)                  \
	X(origin_requests, ORIGIN_REQUESTS, NULL, NULL)                      \
	X(collapsed_served, COLLAPSED, "served", NULL)                       \
	X(collapsed_released, COLLAPSED, "released", NULL)                   \
	X(collapsed_timeout, COLLAPSED, "timeout", NULL)                     \
	X(collapsed_failed, COLLAPSED, "failed", NULL)                       \
	X(tunnels, TUNNELS, NULL, NULL)                                      \
	X(tunnel_denied, TUNNEL_DENIED, NULL, NULL)                          \
	X(invalidations, INVALIDATIONS, NULL, NULL)                          \
	X(purged, PURGES, "purged", NULL)                                    \
	X(purge_absent, PURGES, "absent", NULL)                              \
	X(purge_denied, PURGES, "denied", NULL)                              \
	X(digests_served, DIGESTS_SERVED, NULL, NULL)                        \
	X(digest_entries, DIGEST_ENTRIES, NULL, NULL)                        \
	X(digest_table_bytes, DIGEST_TABLE_BYTES, NULL, NULL)                \
	X(forwarding_loops, FORWARDING_LOOPS, NULL, NULL)                    \
	X(owner_hit, OWNER_REQUESTS, "hit", NULL)                            \
	X(owner_miss, OWNER_REQUESTS, "miss", NULL)                          \
	X(owner_failed, OWNER_REQUESTS, "failed", NULL)                      \
	X(owner_copy_kept, OWNER_COPIES, "kept", NULL)                       \
	X(owner_copy_passed, OWNER_COPIES, "passed", NULL)                   \
	X(client_bytes_out, CLIENT_BYTES_OUT, NULL, NULL)                    \
	X(cache_objects, CACHE_OBJECTS, NULL, "cache_objects")               \
	X(cache_bytes, CACHE_BYTES, NULL, "cache_bytes")                     \
	X(cache_pinned, CACHE_PINNED, NULL, NULL)                            \
	X(evictions, EVICTIONS, NULL, "evictions")                           \
	X(active_clients, ACTIVE_CLIENTS, NULL, NULL)                        \
	X(inflight_bytes, INFLIGHT_BYTES, NULL, NULL)                        \
	X(inflight_refused, INFLIGHT_REFUSED, NULL, NULL)                    \
	X(heap_trims, HEAP_TRIMS, NULL, NULL)                                \
	X(reloads_applied, RELOADS, "applied", NULL)                         \
	X(reloads_refused, RELOADS, "refused", NULL)                         \
	X(hit_memory, HITS_BY_TIER, "memory", "hit_memory")                  \
	X(hit_disk, HITS_BY_TIER, "disk", "hit_disk")                        \
	X(disk_objects, DISK_OBJECTS, NULL, "disk_objects")                  \
	X(disk_bytes, DISK_BYTES, NULL, "disk_bytes")                        \
	X(disk_file_bytes, DISK_FILE_BYTES, NULL, NULL)                      \
	X(disk_index_bytes, DISK_INDEX_BYTES, NULL, NULL)                    \
	X(disk_reads, DISK_OPS, "read", NULL)                                \
	X(disk_writes, DISK_OPS, "write", NULL)                              \
	X(disk_keys_written, DISK_OPS, "key_file", NULL)                     \
	X(disk_read_errors, DISK_OP_ERRORS, "read", NULL)                    \
	X(disk_write_errors, DISK_OP_ERRORS, "write", NULL)                  \
	X(disk_keys_errors, DISK_OP_ERRORS, "key_file", NULL)                \
	X(disk_write_refused, DISK_REFUSED, NULL, NULL)                      \
	X(disk_read_us, DISK_OP_SECONDS, "read", NULL)                       \
	X(disk_write_us, DISK_OP_SECONDS, "write", NULL)                     \
	X(disk_dropped_torn, DISK_DROPPED, "torn", NULL)                     \
	X(disk_dropped_checksum, DISK_DROPPED, "checksum", NULL)             \
	X(disk_dropped_io, DISK_DROPPED, "io_error", NULL)                   \
	X(disk_dropped_replaced, DISK_DROPPED, "replaced", NULL)             \
	X(disk_dropped_aborted, DISK_DROPPED, "aborted", NULL)               \
	X(disk_dropped_short, DISK_DROPPED, "short", NULL)                   \
	X(disk_segments_changed, DISK_CHANGED, NULL, NULL)                   \
	X(disk_reads_cached, DISK_READS_CACHED, NULL, NULL)                  \
	X(disk_streamed, DISK_STREAMED, NULL, NULL)                          \
	X(disk_segments_evicted, DISK_EVICTED, NULL, NULL)                   \
	X(disk_readmitted, DISK_READMITTED, NULL, NULL)                      \
	X(disk_scan_found, DISK_SCAN_SEGMENTS, "found", NULL)                \
	X(disk_scan_done, DISK_SCAN_SEGMENTS, "scanned", NULL)               \
	X(disk_scan_from_keys, DISK_SCAN_SEGMENTS, "from_key_file", NULL)    \
	X(disk_scan_us, DISK_SCAN_SECONDS, NULL, NULL)

struct metrics {
#define METRICS_FIELD(field, family, label, status) uint64_t field;
	METRICS_TABLE(METRICS_FIELD)
#undef METRICS_FIELD
};

/* Appends the Prometheus text exposition of m to out. */
void metrics_render(const struct metrics *m, struct evbuffer *out);

/* The rows with a status page name, in table order: names[i] and
 * values[i] for i below the count returned (at most max). */
size_t metrics_status_fields(const struct metrics *m, const char **names,
    uint64_t *values, size_t max);

#endif
