/*
 * The proxy's metric families, declared once: X(id, type, name, label keys
 * (comma-separated, "" for none), help). A counter or gauge of the proxy
 * is a row of METRICS_TABLE (metrics.h) naming its family here; the
 * peers' families are peers/peerstats.h's.
 */
#ifndef FAMILIES_H
#define FAMILIES_H

#include "metric.h"

#define PROXY_FAMILIES(X)                                                      \
	/* requests and connections (proxy/) */                               \
	X(REQUESTS, counter, "sumcache_requests_total", "result",             \
	    "Client requests by where the response came from")                \
	X(PEER_SERVED, counter, "sumcache_peer_requests_served_total",        \
	    "result", "Requests from peers (a peer's address and a Via), not " \
	    "in sumcache_requests_total")                                     \
	X(REVALIDATIONS, counter, "sumcache_revalidations_total", "result",   \
	    "Stale objects revalidated with the origin")                      \
	X(STALE_SERVED, counter, "sumcache_stale_served_total", "reason",     \
	    "Stale copies served on purpose: stale-while-revalidate (a "      \
	    "revalidation behind it) or stale-if-error (the origin failing)") \
	X(RANGES, counter, "sumcache_range_requests_total", "answer",         \
	    "Range requests: a 206 from the cache (stored, or fetched whole "  \
	    "for it), a 416, or the range sent on to the origin")             \
	X(CLIENT_CONNECTIONS, counter, "sumcache_client_connections_total",   \
	    "", "Client connections accepted")                                \
	X(ACCEPT_ERRORS, counter, "sumcache_accept_errors_total", "",         \
	    "Failed accept() calls (descriptors or memory exhausted)")        \
	X(CONN_LIMIT_REACHED, counter,                                        \
	    "sumcache_connection_limit_reached_total", "",                    \
	    "Times accepting paused at max_connections")                      \
	X(MAX_CONNECTIONS, gauge, "sumcache_max_connections", "",             \
	    "Client connections and tunnels allowed at once")                 \
	X(CONN_PEAK, gauge, "sumcache_connections_peak", "",                  \
	    "The most client connections and tunnels open at once since start") \
	X(CONN_MEM_BOUND, gauge, "sumcache_connection_memory_bound_bytes", "", \
	    "The most memory one connection can hold (proxy/README.md, Reliability)")  \
	X(IDLE_CLOSED, counter, "sumcache_idle_connections_closed_total", "", \
	    "Idle connections closed at max_connections to make room")       \
	X(CLIENT_DENIED, counter, "sumcache_client_denied_total", "",         \
	    "Requests refused by the allow list (403)")                       \
	X(PARSE_ERRORS, counter, "sumcache_client_parse_errors_total", "",    \
	    "Malformed requests answered with 4xx/5xx and closed")            \
	X(HEADER_TIMEOUTS, counter, "sumcache_client_header_timeouts_total",  \
	    "", "Clients that did not send a request head in time (408)")     \
	X(CLIENT_ABORTS, counter, "sumcache_client_aborts_total", "",         \
	    "Clients that went away before their response was complete")      \
	X(ORIGIN_ERRORS, counter, "sumcache_origin_errors_total", "cause",    \
	    "Origin fetches that failed, by cause")                           \
	X(UPSTREAM_TLS_REFUSED, counter,                                      \
	    "sumcache_upstream_tls_refused_total", "reason",                  \
	    "https origins whose certificate failed verification (nothing "   \
	    "fetched, an error page answered), by why")                       \
	X(TLS_CONNECTS, counter, "sumcache_tls_connects_total", "way",        \
	    "CONNECTs that tls_intercept names: intercepted, or spliced "     \
	    "(tunnelled, a client having refused our certificate lately)")    \
	X(TLS_HANDSHAKES, counter, "sumcache_tls_handshakes_total", "result", \
	    "Intercepted handshakes: done, refused by the client (an alert "  \
	    "about our certificate), closed by it without a word once it "    \
	    "had our certificate (GnuTLS's refusal, or a client giving up), " \
	    "or failed otherwise")                                            \
	X(PEER_LINKS, counter, "sumcache_peer_links_total", "result",         \
	    "Peer links (TLS between cluster members) offered to this "       \
	    "node: accepted, refused (no certificate of the cluster naming "  \
	    "the link), and https requests of peers refused for coming over " \
	    "plain HTTP; links this node opened whose peer's certificate it " \
	    "refused (refused_out)")                                          \
	X(TLS_LEAVES, counter, "sumcache_tls_leaves_total", "outcome",        \
	    "Leaf certificates asked for: minted, reused from the cache, "    \
	    "evicted from it, or refused (a host no leaf may name)")          \
	X(TLS_LEAVES_CACHED, gauge, "sumcache_tls_leaves_cached", "",         \
	    "Leaf certificates held in memory")                               \
	X(ORIGIN_REQUESTS, counter, "sumcache_origin_requests_total", "",     \
	    "Requests sent to origins")                                       \
	X(UPSTREAM_EXCESS, counter, "sumcache_upstream_excess_total", "",     \
	    "Connections to origins closed unused because bytes arrived on "  \
	    "them past the end of an answer (an overlong body, a second "     \
	    "response): never read as the next answer")                       \
	X(COLLAPSED, counter, "sumcache_collapsed_total", "outcome",          \
	    "Requests that found a fetch of their URL running: served from "  \
	    "it, let go to fetch alone, let go at the wait's timeout, or "    \
	    "answered with its failure (or a stale copy) when it failed")     \
	X(COLLAPSED_TEES, counter, "sumcache_collapsed_tees_total", "",       \
	    "Shared fetches of a body of unknown length that outgrew the "    \
	    "memory it may hold: not stored, read by their clients from a "   \
	    "window the slowest of them paces")                               \
	X(TUNNELS, counter, "sumcache_tunnels_total", "",                     \
	    "CONNECT tunnels opened")                                         \
	X(TUNNEL_DENIED, counter, "sumcache_tunnel_denied_total", "",         \
	    "CONNECT requests to ports not in connect_ports")                 \
	X(INVALIDATIONS, counter, "sumcache_invalidations_total", "",         \
	    "Objects removed because an unsafe method changed their URL, "    \
	    "here or at a peer that said so")                                 \
	X(PURGES, counter, "sumcache_purges_total", "result",                 \
	    "PURGE requests, by result (purged, absent, denied)")             \
	X(DIGESTS_SERVED, counter, "sumcache_squid_digests_served_total", "", \
	    "Our Squid Cache Digest, sent to a sibling")                      \
	X(DIGEST_ENTRIES, gauge, "sumcache_squid_digest_entries", "",         \
	    "URLs in our Squid digest's filter: copies fresh for a period more") \
	X(DIGEST_TABLE_BYTES, gauge, "sumcache_squid_digest_table_bytes", "", \
	    "Memory of the Squid digest's table of URLs and deadlines")       \
	X(FORWARDING_LOOPS, counter, "sumcache_forwarding_loops_total", "",   \
	    "Requests whose Via already named this node (not sent to peers)") \
	X(OWNER_REQUESTS, counter, "sumcache_owner_requests_total",           \
	    "outcome", "Misses sent to the key's owner (placement hash): it " \
	    "had a copy, fetched one, or failed (then the next owner, once, " \
	    "or the origin was asked)")                                       \
	X(OWNER_COPIES, counter, "sumcache_owner_copies_total", "decision",   \
	    "Cacheable copies of objects another node owns, got from a peer: " \
	    "kept here (placement_admit_hits) or passed on only")             \
	X(PASSED, counter, "sumcache_passed_total", "",                       \
	    "Misses sent straight to the origin because the URL's last answer " \
	    "could not be stored (no owner, ICP or collapsed wait: pass.h)")  \
	X(CLIENT_BYTES_OUT, counter, "sumcache_client_bytes_sent_total", "",  \
	    "Bytes sent to clients (heads and bodies)")                       \
	X(CACHE_OBJECTS, gauge, "sumcache_cache_objects", "",                 \
	    "Objects in the memory cache")                                    \
	X(CACHE_BYTES, gauge, "sumcache_cache_bytes", "",                     \
	    "Bytes charged to the memory cache budget")                       \
	X(CACHE_PINNED, gauge, "sumcache_cache_pinned_bytes", "",             \
	    "Evicted bodies still being sent, charged to cache_mem too")      \
	X(EVICTIONS, counter, "sumcache_evictions_total", "",                 \
	    "Objects evicted to make room")                                   \
	X(STORE_LOCK_WAITS, counter, "sumcache_store_lock_waits_total", "",   \
	    "Times a worker found a lock of the memory cache held by another")\
	X(STORE_LOCK_WAIT_SECONDS, counter,                                   \
	    "sumcache_store_lock_wait_seconds_total", "",                     \
	    "Time workers spent waiting for the memory cache's locks")        \
	X(ACTIVE_CLIENTS, gauge, "sumcache_client_connections", "",           \
	    "Open client connections")                                        \
	X(INFLIGHT_BYTES, gauge, "sumcache_inflight_copy_bytes", "",          \
	    "inflight_mem reserved by misses being copied for the cache")     \
	X(INFLIGHT_REFUSED, counter, "sumcache_inflight_copy_refused_total",  \
	    "", "Misses streamed uncached because inflight_mem was taken")    \
	X(HEAP_TRIMS, counter, "sumcache_heap_trims_total", "",               \
	    "Times freed heap memory was given back to the kernel")           \
	X(RELOADS, counter, "sumcache_reloads_total", "result",               \
	    "SIGHUP reloads of the configuration: applied, or refused whole") \
	/* the disk tier (proxy/cache/disk/disk.c) */                         \
	X(HITS_BY_TIER, counter, "sumcache_hits_total", "tier",               \
	    "Local hits by the tier that held the object")                    \
	X(DISK_OBJECTS, gauge, "sumcache_disk_objects", "",                   \
	    "Objects in the disk tier (committed records)")                   \
	X(DISK_BYTES, gauge, "sumcache_disk_bytes", "",                       \
	    "Bytes of the disk tier's committed records")                     \
	X(DISK_FILE_BYTES, gauge, "sumcache_disk_file_bytes", "",             \
	    "Bytes of the disk tier's segment files, within cache_dir's size") \
	X(DISK_INDEX_BYTES, gauge, "sumcache_disk_index_bytes", "",           \
	    "Memory of the disk tier's index")                                \
	X(DISK_OPS, counter, "sumcache_disk_operations_total", "op",          \
	    "Disk tier reads and writes finished")                            \
	X(DISK_OP_ERRORS, counter, "sumcache_disk_errors_total", "op",        \
	    "Disk tier reads and writes that failed (I/O errors, ENOSPC)")    \
	X(DISK_REFUSED, counter, "sumcache_disk_writes_refused_total", "",    \
	    "Objects not written: no room yet (the next segment still opening, " \
	    "the oldest still being written), too large, or out of memory")   \
	X(DISK_OP_SECONDS, counter, "sumcache_disk_seconds_total", "op",      \
	    "Time the I/O threads spent in reads and writes")                 \
	X(DISK_DROPPED, counter, "sumcache_disk_dropped_total", "reason",     \
	    "Records dropped: torn, failing a checksum, I/O errors, replaced, " \
	    "written as they arrived and cut short (aborted), their file "    \
	    "ending before them (short)")                                     \
	X(DISK_CHANGED, counter, "sumcache_disk_segments_changed_total", "",  \
	    "Segment files found changed by another hand while the node ran " \
	    "(their records are then checked again)")                         \
	X(DISK_READS_CACHED, counter, "sumcache_disk_reads_cached_total", "", \
	    "Disk tier reads made on the event loop from the page cache "     \
	    "(RWF_NOWAIT), without a thread's round trip")                    \
	X(DISK_STREAMED, counter, "sumcache_disk_streamed_total", "",         \
	    "Records written to disk while their body arrived (objects too "  \
	    "large for memory), committed")                                   \
	X(DISK_EVICTED, counter, "sumcache_disk_segments_evicted_total", "",  \
	    "Segment files evicted whole (FIFO) to keep cache_dir's size")    \
	X(DISK_READMITTED, counter, "sumcache_disk_readmitted_total", "",     \
	    "Records an eviction copied to the newest segment rather than "  \
	    "lose them: read since they were written, or held in memory")     \
	X(DISK_SCAN_SEGMENTS, gauge, "sumcache_disk_scan_segments", "state",  \
	    "Segments found at start-up, those done so far, and those read "  \
	    "from their key file instead of scanned")                         \
	X(DISK_SCAN_SECONDS, gauge, "sumcache_disk_scan_seconds", "",         \
	    "How long the start-up scan took (0 while it runs)")

enum proxy_family {
#define PROXY_FAMILY_ENUM(id, type, name, labels, help) MF_##id,
	PROXY_FAMILIES(PROXY_FAMILY_ENUM)
#undef PROXY_FAMILY_ENUM
	MF_COUNT
};

extern const struct metric_family_info proxy_families[MF_COUNT];
/* The family of id, for the writers (metric.h). */
#define MF(id) (&proxy_families[MF_##id])

#endif
