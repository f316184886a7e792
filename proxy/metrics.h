/*
 * Counters, declared once. METRICS_TABLE drives the struct, the /metrics
 * rendering and the documentation; adding a counter is one line.
 */
#ifndef METRICS_H
#define METRICS_H

#include <stdint.h>

struct evbuffer;

/* X(field, type, family, labels, help); rows of one family are adjacent */
#define METRICS_TABLE(X)                                                      \
	X(req_local_hit, counter, "sumcache_requests_total",                 \
	    "result=\"local_hit\"",                                          \
	    "Client requests by where the response came from")               \
	X(req_remote_hit, counter, "sumcache_requests_total",                \
	    "result=\"remote_hit\"", "")                                     \
	X(req_miss, counter, "sumcache_requests_total", "result=\"miss\"", "") \
	X(req_error, counter, "sumcache_requests_total", "result=\"error\"",  \
	    "")                                                              \
	X(peer_served_hit, counter, "sumcache_peer_requests_served_total",   \
	    "result=\"hit\"", "Requests from peers (a peer's address and a " \
	    "Via), not in sumcache_requests_total")                          \
	X(peer_served_miss, counter, "sumcache_peer_requests_served_total",  \
	    "result=\"miss\"", "")                                           \
	X(revalidated_unmodified, counter, "sumcache_revalidations_total",   \
	    "result=\"unmodified\"",                                         \
	    "Stale objects revalidated with the origin")                     \
	X(revalidated_modified, counter, "sumcache_revalidations_total",     \
	    "result=\"modified\"", "")                                       \
	X(revalidate_failed, counter, "sumcache_revalidations_total",        \
	    "result=\"failed\"", "")                                         \
	X(client_connections, counter, "sumcache_client_connections_total",  \
	    "", "Client connections accepted")                               \
	X(accept_errors, counter, "sumcache_accept_errors_total", "",      \
	    "Failed accept() calls (descriptors or memory exhausted)")       \
	X(connection_limit_reached, counter,                                 \
	    "sumcache_connection_limit_reached_total", "",                   \
	    "Times accepting paused at max_connections")                     \
	X(max_connections, gauge, "sumcache_max_connections", "",            \
	    "Client connections and tunnels allowed at once")                \
	X(conn_mem_bound, gauge, "sumcache_connection_memory_bound_bytes",   \
	    "", "The most memory one connection can hold (README, "          \
	    "Reliability)")                                                  \
	X(idle_closed_at_limit, counter,                                     \
	    "sumcache_idle_connections_closed_total", "",                    \
	    "Idle connections closed at max_connections to make room")       \
	X(client_denied, counter, "sumcache_client_denied_total", "",        \
	    "Requests refused by the allow list (403)")                      \
	X(parse_errors, counter, "sumcache_client_parse_errors_total", "",   \
	    "Malformed requests answered with 4xx/5xx and closed")           \
	X(header_timeouts, counter, "sumcache_client_header_timeouts_total", \
	    "", "Clients that did not send a request head in time (408)")    \
	X(client_aborts, counter, "sumcache_client_aborts_total", "",        \
	    "Clients that went away before their response was complete")     \
	X(origin_unreachable, counter, "sumcache_origin_errors_total",       \
	    "cause=\"unreachable\"", "Origin fetches that failed, by cause")  \
	X(origin_timeout, counter, "sumcache_origin_errors_total",           \
	    "cause=\"timeout\"", "")                                         \
	X(origin_protocol, counter, "sumcache_origin_errors_total",          \
	    "cause=\"protocol\"", "")                                        \
	X(origin_requests, counter, "sumcache_origin_requests_total", "",    \
	    "Requests sent to origins")                                      \
	X(tunnels, counter, "sumcache_tunnels_total", "",                    \
	    "CONNECT tunnels opened")                                        \
	X(tunnel_denied, counter, "sumcache_tunnel_denied_total", "",        \
	    "CONNECT requests to ports not in connect_ports")                \
	X(invalidations, counter, "sumcache_invalidations_total", "",        \
	    "Objects removed because an unsafe method changed their URL")    \
	X(digests_served, counter, "sumcache_squid_digests_served_total", "", \
	    "our Squid Cache Digest, sent to a sibling")                     \
	X(forwarding_loops, counter, "sumcache_forwarding_loops_total", "",  \
	    "Requests whose Via already named this node (not sent to peers)") \
	X(client_bytes_out, counter, "sumcache_client_bytes_sent_total", "", \
	    "Bytes sent to clients (heads and bodies)")                      \
	X(cache_objects, gauge, "sumcache_cache_objects", "",                \
	    "Objects in the memory cache")                                   \
	X(cache_bytes, gauge, "sumcache_cache_bytes", "",                    \
	    "Bytes charged to the memory cache budget")                      \
	X(cache_pinned, gauge, "sumcache_cache_pinned_bytes", "",            \
	    "Evicted bodies still being sent, charged to cache_mem too")     \
	X(evictions, counter, "sumcache_evictions_total", "",                \
	    "Objects evicted to make room")                                  \
	X(active_clients, gauge, "sumcache_client_connections", "",          \
	    "Open client connections")                                       \
	X(inflight_bytes, gauge, "sumcache_inflight_copy_bytes", "",         \
	    "inflight_mem reserved by misses being copied for the cache")    \
	X(inflight_refused, counter, "sumcache_inflight_copy_refused_total", \
	    "", "Misses streamed uncached because inflight_mem was taken")   \
	X(heap_trims, counter, "sumcache_heap_trims_total", "",              \
	    "Times freed heap memory was given back to the kernel")

struct metrics {
#define METRICS_FIELD(field, type, family, labels, help) uint64_t field;
	METRICS_TABLE(METRICS_FIELD)
#undef METRICS_FIELD
};

/* Appends the Prometheus text exposition of m to out. */
void metrics_render(const struct metrics *m, struct evbuffer *out);

#endif
