/*
 * The peers' metrics, declared once. PEER_FAMILIES: the families of
 * peers/ (name, type, label keys, HELP), as proxy/stats/families.h's for
 * the proxy. Then the counters, each a row that makes its field and its
 * sample in /metrics, so a new one is its row and its increment:
 *   PEERS_COUNTERS   the table's own (struct peers: ps->count.FIELD)
 *   PEER_COUNTERS    each peer's (struct peer: p->count.FIELD), labelled
 *                    with the peer's name
 *   SUMMARY_REJECTS  the reasons a summary is refused: enum reject, its
 *                    label values (reject_names) and ps->rejected[]
 */
#ifndef PEERSTATS_H
#define PEERSTATS_H

#include <stdint.h>

#include "metric.h"

/* X(id, type, name, label keys (comma-separated, "" for none), help) */
#define PEER_FAMILIES(X)                                                       \
	/* this node's summary (peers/) */                                    \
	X(SUM_PUBLICATIONS, counter, "sumcache_summary_publications_total",   \
	    "kind", "Summaries this node published, full or delta")           \
	X(SUM_REJECTED, counter, "sumcache_summary_rejected_total", "reason", \
	    "Summary messages and Squid digests refused, by reason")          \
	X(SUM_RECEIVING, gauge, "sumcache_summary_receiving_bytes", "",       \
	    "Bytes of summary bodies being received, not yet authenticated")  \
	X(SUM_MAX_SIZE, gauge, "sumcache_summary_max_size_bytes", "",         \
	    "Largest summary message taken from a peer (summary_max_size)")   \
	X(SUM_ENTRIES, gauge, "sumcache_summary_entries", "",                 \
	    "Keys in this node's summary")                                    \
	X(SUM_BITS, gauge, "sumcache_summary_bits", "",                       \
	    "Size of this node's summary: slots of its table (timed), or "    \
	    "bits of its filter")                                             \
	X(SUM_MEMORY, gauge, "sumcache_summary_memory_bytes", "",             \
	    "Memory of this node's own summary, as kept and as last "         \
	    "published")                                                      \
	X(SUM_EPOCH, gauge, "sumcache_summary_epoch", "",                     \
	    "Epoch of this node's filter (microseconds when it was made)")    \
	X(SUM_SEQUENCE, gauge, "sumcache_summary_sequence", "",               \
	    "Sequence of this node's last publication in its epoch")          \
	X(SUM_CHECKSUM, gauge, "sumcache_summary_checksum", "",               \
	    "Top 53 bits of the checksum of the summary last published")      \
	X(SUM_PENDING, gauge, "sumcache_summary_pending_changes", "",         \
	    "Adds and removes since the last publication")                    \
	X(SUM_REBUILDS, counter, "sumcache_summary_rebuilds_total", "",       \
	    "Filters rebuilt larger in a new epoch")                          \
	X(SUM_EXPIRED, counter, "sumcache_summary_expired_total", "",         \
	    "Keys that left the summary because their copies stopped being "  \
	    "fresh enough for a peer")                                        \
	X(SUM_KEYS, gauge, "sumcache_summary_keys", "",                       \
	    "URLs the summary keeps, claimed or lapsed")                      \
	X(SUM_TABLE_BYTES, gauge, "sumcache_summary_table_bytes", "",         \
	    "Memory of the summary's table of URLs and deadlines")            \
	X(SUM_SATURATIONS, counter, "sumcache_summary_saturations_total", "", \
	    "Keys the summary had no room for: a table's adds refused, or "   \
	    "counter increments lost at the counters' maximum")               \
	X(SUM_BAD_REMOVES, counter, "sumcache_summary_bad_removes_total", "", \
	    "Removals of keys the filter could not hold (a bug if not 0)")    \
	/* inter-proxy traffic and peers (peers/) */                          \
	X(IPM_MESSAGES, counter, "sumcache_interproxy_messages_total",        \
	    "direction,type,peer", "Inter-proxy messages, by direction, "     \
	    "type and peer (peers that left: peer=\"_left\")")                \
	X(IPM_BYTES, counter, "sumcache_interproxy_bytes_total",              \
	    "direction,type,peer", "Inter-proxy bytes, as the messages")      \
	X(PEER_UP, gauge, "sumcache_peer_up", "peer",                         \
	    "1 while the peer answers")                                       \
	X(PEER_SUM_EPOCH, gauge, "sumcache_peer_summary_epoch", "peer",       \
	    "Epoch of the summary held of the peer")                          \
	X(PEER_SUM_SEQUENCE, gauge, "sumcache_peer_summary_sequence", "peer", \
	    "Sequence of the summary held of the peer")                       \
	X(PEER_SUM_FILL, gauge, "sumcache_peer_summary_fill_ratio", "peer",   \
	    "Share of the peer's summary slots (or bits) set")                \
	X(PEER_SUM_FPR, gauge, "sumcache_peer_summary_false_positive_rate",   \
	    "peer", "False-positive rate the peer's summary gives")           \
	X(PEER_SUM_AGE, gauge, "sumcache_peer_summary_age_seconds", "peer",   \
	    "Since the peer's summary last changed; -1 never")                \
	X(PEER_SUM_ENTRIES, gauge, "sumcache_peer_summary_entries", "peer",   \
	    "Keys the peer said its summary holds")                           \
	X(PEER_SUM_MEMORY, gauge, "sumcache_peer_summary_memory_bytes",       \
	    "peer", "Memory this node holds for the peer's summary: "         \
	    "everything a lookup reads")                                      \
	X(PEER_SUM_CHECKSUM, gauge, "sumcache_peer_summary_checksum", "peer", \
	    "Top 53 bits of the checksum of the peer's summary as held")      \
	X(PEER_RTT, gauge, "sumcache_peer_rtt_seconds", "peer",               \
	    "Smoothed round-trip time of requests to the peer; 0 unmeasured") \
	X(PEER_REMOTE_HITS, counter, "sumcache_peer_remote_hits_total",       \
	    "peer", "Objects the peer served us from its cache")              \
	X(PEER_CLAIM_FALSE_HITS, counter,                                     \
	    "sumcache_peer_claim_false_hits_total", "peer", "Times the peer " \
	    "was asked because its summary claimed an object it lacked")      \
	X(PEER_CLAIM_FALSE_RATE, gauge, "sumcache_peer_claim_false_rate",     \
	    "peer", "Recent share of the peer's claims that were false (its " \
	    "candidates' order)")                                             \
	X(PEER_CLAIMS_SKIPPED, gauge, "sumcache_peer_claims_skipped", "peer", \
	    "1 while the peer's claims are not followed (false hits in a "    \
	    "row, or a failed request)")                                      \
	X(PEER_CLAIM_SKIPS, counter, "sumcache_peer_claim_skips_total",       \
	    "peer", "Times the peer's claims stopped being followed for a "   \
	    "while")                                                          \
	X(PEER_INVALIDATIONS, counter,                                        \
	    "sumcache_peer_invalidations_received_total", "result",           \
	    "Invalidations from peers, by result (applied, refused; bad_url: " \
	    "a URL in an applied one that does not parse)")                    \
	X(PEER_DOWNS, counter, "sumcache_peer_downs_total", "peer",           \
	    "Times the peer was marked down")                                 \
	X(PEER_FALSE_HITS, counter, "sumcache_peer_false_hits_total", "",     \
	    "Peers asked because their summary claimed an object they lacked") \
	/* peer_dns (peers/discover.c) */                                     \
	X(DNS_LOOKUPS, counter, "sumcache_peer_dns_lookups_total", "result",  \
	    "peer_dns lookups, by result")                                    \
	X(DNS_ADDRESSES, gauge, "sumcache_peer_dns_addresses", "",            \
	    "Addresses peer_dns listed at its last answer")                   \
	/* ICP (peers/icpsock.c) */                                           \
	X(ICP_DROPPED, counter, "sumcache_icp_dropped_total", "reason",       \
	    "ICP datagrams dropped, by reason")                               \
	X(ICP_ANSWERS, counter, "sumcache_icp_answers_total", "result",       \
	    "ICP queries answered, by answer")                                \
	X(ICP_TIMEOUTS, counter, "sumcache_icp_timeouts_total", "",           \
	    "ICP rounds that ended at icp_timeout with replies missing")

enum peer_family {
#define PEER_FAMILY_ENUM(id, type, name, labels, help) PF_##id,
	PEER_FAMILIES(PEER_FAMILY_ENUM)
#undef PEER_FAMILY_ENUM
	PF_COUNT
};

extern const struct metric_family_info peer_families[PF_COUNT];
/* The family of id, for the writers (metric.h). */
#define PF(id) (&peer_families[PF_##id])

/* X(field, family, label value or NULL); rows of one family adjacent. */
#define PEERS_COUNTERS(X)                                                      \
	X(false_hits, PEER_FALSE_HITS, NULL)                                   \
	X(inval_applied, PEER_INVALIDATIONS, "applied")                        \
	X(inval_refused, PEER_INVALIDATIONS, "refused")                        \
	X(inval_bad_urls, PEER_INVALIDATIONS, "bad_url") /* in applied ones */

/* X(field, family): a counter of each peer, its sample labelled peer */
#define PEER_COUNTERS(X)                                                       \
	X(remote_hits, PEER_REMOTE_HITS)                                       \
	X(false_hits, PEER_CLAIM_FALSE_HITS) /* asked for what it claimed */   \
	X(claim_skips, PEER_CLAIM_SKIPS)     /* claims stopped being followed */ \
	X(downs, PEER_DOWNS)

/* X(id, label value): why a summary message was refused (the reason
 * label of sumcache_summary_rejected_total) */
#define SUMMARY_REJECTS(X)                                                     \
	X(NOT_PEER, "not_peer")   /* source or sender is no configured peer */ \
	X(BAD_MAC, "bad_mac")                                                  \
	X(MALFORMED, "malformed") /* envelope, fields or payload */            \
	X(TOO_BIG, "too_big")                                                  \
	X(OLD, "old")             /* (epoch, seq) not newer than what we hold */ \
	X(DUPLICATE, "duplicate") /* exactly the full summary we hold */       \
	X(PARAMS, "params")       /* hash scheme differs from ours */          \
	X(GAP, "gap")             /* delta that does not follow: we pull */    \
	X(CHECKSUM, "checksum")   /* decoded array differs from the sender's */ \
	X(BUSY, "busy")           /* a body from that peer is still arriving */ \
	X(NO_ROOM, "no_room")     /* bodies in flight hold max_held already */ \
	X(SLOW, "slow")           /* body not received within peer timeout */ \
	X(VERSION, "version")     /* another protocol version (wire.h) */

#define PEERSTATS_FIELD(field, ...) uint64_t field;
struct peers_counters {
	PEERS_COUNTERS(PEERSTATS_FIELD)
};
struct peer_counters {
	PEER_COUNTERS(PEERSTATS_FIELD)
};
#undef PEERSTATS_FIELD

enum reject {
#define PEERSTATS_REJECT(id, label) REJ_##id,
	SUMMARY_REJECTS(PEERSTATS_REJECT)
#undef PEERSTATS_REJECT
	REJ_NREASONS
};
extern const char *const reject_names[REJ_NREASONS];

struct evbuffer;
struct peers;
/* The samples of PEERS_COUNTERS and PEER_COUNTERS, heads included. */
void peerstats_render(const struct peers *ps, struct evbuffer *out);

#endif
