/*
 * The Summary Cache between peers: the peer table, this node's counting
 * filter and its publication, the summaries peers send us, and the choice
 * of peers to ask on a miss.
 *
 *   - The proxy feeds every store insert and removal in (peers_object_*).
 *   - When the changes since the last publication reach the threshold, or
 *     the max interval passes with changes pending, the smaller of a delta
 *     and a full summary is POSTed to every live peer, one message at a
 *     time per peer so deltas arrive in order.
 *   - Pushes from peers arrive through the proxy (peers_receive); a gap or
 *     a checksum mismatch makes us pull the sender's full summary.
 *   - A peer that fails a connect or times out is down: its summary is not
 *     used and it is pulled again with backoff until it answers.
 *
 * Threads: every worker of a node calls in (misses, the cache's inserts
 * and evictions, peers' messages arriving on any worker's connections);
 * the table guards itself with one lock, never taken on the hit path.
 * Its timers and transfers are the loop of peers_new's base (home's),
 * whose thread must be the one calling peers_new.
 */
#ifndef PEERS_H
#define PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cbf.h"
#include "peerstats.h"
#include "psum.h"
#include "publisher.h"
#include "wire.h"

struct event_base;
struct evbuffer;
struct curlev;
struct inbox;

enum peer_type {
	PEER_SUMCACHE = 1,
	PEER_SQUID_DIGEST = 2,  /* a Squid: its Cache Digest is its summary */
};

/* One "peer" directive: "NAME HOST:PORT [type=sumcache|squid-digest]
 * [icp=PORT] [proxy_only] [weight=W]". */
struct peer_spec {
	char name[WIRE_MAX_SENDER + 1];
	char host[256];
	uint16_t port;
	uint16_t icp_port;
	enum peer_type type;
	bool proxy_only;  /* remote hits are not stored locally */
	double weight;    /* its share of keys under placement hash */
};

int peer_spec_parse(const char *text, struct peer_spec *ps,
    const char **why);
/* The part after the name, "HOST:PORT [options]" (peer_dns uses it
 * alone); expect is the error for a bad or missing address. */
int peer_target_parse(const char *text, struct peer_spec *ps,
    const char *expect, const char **why);

/* The table's size: peers configured and found (peer_dns) together. */
#define PEERS_MAX 256

/* On a local miss, at most peers_asked (a directive) of the peers whose
 * summaries claim the object are asked, in claim_before's order: each
 * false hit costs a round trip, and a fifth claim is rarely the one that
 * is right. */
#define PEERS_ASKED_DEFAULT 4
#define PEERS_ASKED_MAX 16

/*
 * The order candidates are asked in, the daemon's and the simulator's:
 * first the peers whose claims have been right, then the fastest. A
 * peer's false-hit rate is a moving average over the times it was asked
 * because its summary claimed an object (1 a false hit, 0 a hit), the
 * last CLAIM_WINDOW or so weighing most; rates are compared in steps of
 * 1 / CLAIM_STEPS so that RTT decides between peers about as reliable
 * (one false hit in the window is one step).
 */
#define CLAIM_WINDOW 20
#define CLAIM_STEPS 20
bool claim_before(double false_rate_a, double rtt_a, double false_rate_b,
    double rtt_b);

/*
 * A claimant whose claims keep proving false is not asked at all for a
 * while, even when it is the only one (the order above cannot demote a
 * lone claimant): after CLAIM_SKIP_RUN false hits in a row its claims are
 * skipped for CLAIM_SKIP_MIN_MS, doubled each time it is skipped again
 * before a hit, up to CLAIM_SKIP_MAX_MS; a hit clears it. A request to it
 * that fails (a refused connect, a timeout) starts or doubles a skip the
 * same way, whatever its liveness says since, so a peer that answers
 * pulls but not requests costs one timeout per skip, not one per miss. A
 * summary that claims everything thus costs CLAIM_SKIP_RUN false hits,
 * then one per period. The daemon and the simulator keep a record per
 * peer (the simulator's clock is the trace's).
 */
#define CLAIM_SKIP_RUN 4
#define CLAIM_SKIP_MIN_MS 500
#define CLAIM_SKIP_MAX_MS 30000
struct claim_record {
	double false_rate;       /* claim_before's moving average */
	unsigned false_run;      /* false hits since its last hit */
	unsigned skip_ms;        /* its last skip's length; 0 since a hit */
	uint64_t skip_until_ms;  /* its claims are not followed before */
};
enum claim_outcome {
	CLAIM_HIT = 0,     /* it had the object */
	CLAIM_FALSE = 1,   /* it did not */
	CLAIM_FAILED = 2,  /* no answer: connect refused, or timed out */
};
/* Notes how asking went at now_ms; true when this starts a skip. */
bool claim_note(struct claim_record *r, enum claim_outcome o,
    uint64_t now_ms);
/* Whether its claims are skipped at now_ms. */
bool claim_skipped(const struct claim_record *r, uint64_t now_ms);
/* The peer started anew (a summary of a new epoch: a restart, or a
 * rebuild): what its earlier summaries and requests earned it is
 * forgotten. */
void claim_renew(struct claim_record *r);

/* Inter-proxy traffic, by DESIGN.md's type label. */
enum ipm_type {
	IPM_SUMMARY_FULL = 0,
	IPM_SUMMARY_DELTA,
	IPM_SUMMARY_PULL,
	IPM_ICP_QUERY,
	IPM_ICP_REPLY,
	IPM_PEER_REQUEST,
	IPM_PEER_RESPONSE,
	IPM_SQUID_DIGEST,   /* a Cache Digest fetched or served */
	IPM_INVALIDATION,   /* URLs a peer dropped (PURGE, unsafe method) */
	IPM_NTYPES
};

enum ipm_dir {
	IPM_SENT = 0,
	IPM_RECEIVED = 1,
};

/* Why a summary message was refused: enum reject (peerstats.h). */

/* A peer, as modules outside peers/ see it: through the accessors
 * below (table.c owns its fields). */
struct peer;

/* What its peer line (or peer_dns) says: name, host, port, type, ICP
 * port, proxy_only. Host, port, ICP port and type never change while
 * the peer is held; a found peer's name changes when it names itself,
 * and its options when DNS lists it again: read those in a copy
 * (peer_spec_copy), unless on home's thread. */
const struct peer_spec *peer_spec(const struct peer *p);
void peer_spec_copy(const struct peer *p, struct peer_spec *out);
/* "http://host:port", for curl's CURLOPT_PROXY. */
const char *peer_proxy_url(const struct peer *p);
/* "host:port" (an IPv6 host in brackets), the same address alone: what a
 * peer link connects to (CURLOPT_CONNECT_TO). */
const char *peer_authority(const struct peer *p);
/* Its address, as resolved or found. */
const struct sockaddr_storage *peer_addr(const struct peer *p);
bool peer_is_up(const struct peer *p);
/* Unique for the life of the process; ascending in peers_list order. */
uint64_t peer_serial(const struct peer *p);


struct peers_conf {
	const char *node_name;
	struct pub_conf publish;       /* our filter and its publication */
	uint32_t connect_timeout_ms;   /* peer connects and exchanges */
	uint32_t timeout_ms;           /* peer response silence */
	/* a summary message, pushed or pulled, is at most max_message
	 * bytes; the bodies being received, not yet authenticated, hold at
	 * most max_held bytes at once */
	uint64_t max_message;
	uint64_t max_held;
	const uint8_t *key;            /* cluster key */
	size_t keylen;
	/* false (sharing icp): no summaries are published or pulled; peers
	 * start up and ICP replies keep them so */
	bool summaries;
	/* curl's CURLOPT_INTERFACE for peer transfers ("host!IP"), or "":
	 * peers know us by the address we listen on, so we speak from it */
	char source[80];
	/* placement hash: this node's weight (its peers' lines say theirs) */
	double weight;
};

struct peers;

/*
 * A peer table for specs; resolves every peer's host (numeric or a name,
 * at start-up). base is home's loop, curl its transfers, inbox how
 * another thread wakes it (inbox.h). NULL with the reason in err.
 */
struct peers *peers_new(struct event_base *base, struct curlev *curl,
    struct inbox *inbox, const struct peers_conf *conf, const struct peer_spec *specs, size_t n,
    char *err, size_t elen);
void peers_free(struct peers **ps);

/*
 * The publishing policy a configuration gives, with the constants of
 * peer choice and ICP, as one line of name=value pairs: what `sumcache
 * --policy` and `sumcache-sim --policy` print, so a test can hold the
 * simulator to the daemon.
 */
void peers_policy_line(const struct pub_conf *c, unsigned peers_asked,
    char *buf, size_t len);

/*
 * A reload: the peer lines are now specs[0..n). Peers no longer listed
 * leave, new ones join (resolved here, pulled at the next probe), the
 * others keep their summaries and counts; found (peer_dns) peers are not
 * touched. conf's timeouts and publishing pace take effect; its other
 * fields must be the running ones. -1 with the reason in err, and
 * nothing changed.
 */
int peers_reconfigure(struct peers *ps, const struct peers_conf *conf,
    const struct peer_spec *specs, size_t n, char *err, size_t elen);

/* Publishes the first (empty) summary and pulls every peer's. */
void peers_start(struct peers *ps);

/*
 * The cache took in an object under key (normalized URL), fresh until
 * expires_ms (wall clock), or let one go. The
 * summary claims the key while a copy is fresh enough for a peer
 * (summary/publisher.h); claims lapse on a timer. When the filter claims
 * more keys than it was sized for, it is rebuilt larger from the
 * publisher's own table, a bounded number of keys per loop turn, then
 * replaces the old one in a new epoch, announced in full to every peer.
 */
void peers_object_added(struct peers *ps, const char *key, size_t len,
    uint64_t expires_ms);
void peers_object_removed(struct peers *ps, const char *key, size_t len);

/* The summary as it stands goes to every peer in a new epoch, full: the
 * cache was restored from disk (publisher.h, pub_announce). */
void peers_announce(struct peers *ps);
/* A peer sent us a request (served from the cache or not): what the
 * publisher's auto threshold weighs a change by. Any thread, no lock (an
 * atomic add). */
void peers_asked(struct peers *ps);
/* How the publisher's auto threshold learns the node's own pace: count()
 * returns the requests the node's clients have sent it so far, from any
 * thread (it reads the workers' counters). Set once, at start. */
void peers_count_requests(struct peers *ps, uint64_t (*count)(void *arg),
    void *arg);

/*
 * A POSTed summary message from addr. Returns the HTTP status to answer
 * (204 accepted, 4xx refused; *why says why).
 */
int peers_receive(struct peers *ps, const struct sockaddr *from,
    const uint8_t *msg, size_t len, const char **why);

/* Our current full summary, signed, for a GET from addr: 200 with out
 * filled, or 403 / 503. */
int peers_pull_response(struct peers *ps, const struct sockaddr *from,
    struct sum_buf *out);

/* Counts and logs a message refused before it reached peers_receive. */
void peers_refused(struct peers *ps, enum reject r, const char *who);

/*
 * Before a byte of a POSTed summary body of len bytes from addr (who, as
 * logged) is read: whether it may be. Anyone at a peer's address can send one, before its
 * MAC can be checked, so each peer at that address has one body in flight
 * at most, a body is at most max_message bytes and all of them together
 * at most max_held. Returns 0 (the caller calls peers_receive_end when
 * the body is done with, however it ends) or the status to refuse with,
 * counted and logged, with *why.
 */
int peers_receive_begin(struct peers *ps, const struct sockaddr *from,
    const char *who, uint64_t len, const char **why);
void peers_receive_end(struct peers *ps, const struct sockaddr *from,
    uint64_t len);
/* A body begun did not arrive within the peer timeout: counted, logged. */
void peers_receive_slow(struct peers *ps, const char *who);

/*
 * peer_dns: the addresses its name resolves to now, each a peer like
 * tmpl (port and options). Addresses new to the table are added and
 * pulled, those already in it take tmpl's options (proxy_only, weight:
 * a reload may change them); found peers no longer listed leave it.
 * Peers from "peer" lines are not touched.
 */
void peers_found(struct peers *ps, const struct peer_spec *tmpl,
    const struct sockaddr_storage *addrs, size_t n);

/* Whether addr is a configured peer's address. */
struct peer *peers_by_addr(struct peers *ps, const struct sockaddr *addr);

/*
 * The live peers whose summary holds key, in claim_before's order; at
 * most max. The key is hashed once for all of them. Each is held for the
 * caller (it may leave the table meanwhile) until peers_put.
 * With placement, owner is the key's owner (peers_owner; NULL: none, or
 * this node): it is never among them, and when its own summary claims
 * the key there are none (it is asked as the owner; another copy is
 * asked for only when the owner has none, as after a membership change).
 */
size_t peers_candidates(struct peers *ps, const char *key, size_t len,
    const struct peer *owner, struct peer **out, size_t max);
void peers_put(struct peer **p);

/*
 * Placement hash (placement.h): the owner of key among this node and the
 * sumcache peers that are up, by name and weight. NULL when it is this
 * node; else the peer, held until peers_put. A peer known only by its
 * address (peer_dns, before its first summary names it) is no owner: the
 * others would not agree on its name. Under sharing none a peer is up
 * until a request to it fails, and tried again after its backoff.
 */
struct peer *peers_owner(struct peers *ps, const char *key, size_t len);

/* The outcome of asking p for an object. */
enum peer_outcome {
	PEER_HIT = 0,        /* it answered from its cache */
	PEER_FALSE_HIT = 1,  /* its summary claimed it; it had no copy */
	PEER_FAILED = 2,     /* connect failure or timeout: mark it down */
	PEER_OWNER = 3,      /* asked as the key's owner, it answered */
};
void peers_fetch_done(struct peers *ps, struct peer *p,
    enum peer_outcome outcome, double ms, uint64_t req_bytes,
    uint64_t resp_bytes);

/*
 * Cluster-wide invalidation (peers/invalidate.c): url was dropped here
 * (a PURGE, or an unsafe request that succeeded); every live sumcache
 * peer is told at the end of this loop turn, with the other URLs dropped
 * in it. A no-op without a cluster key.
 */
void peers_invalidate(struct peers *ps, const char *url, size_t len);

/* The largest invalidation body taken. */
#define INVAL_MAX_BYTES (64 * 1024)
/* Drops url's copies; false when url is not one (counted as bad_url). */
typedef bool peers_drop_f(void *arg, const char *url, size_t len);
/* A POSTed invalidation from from (at most INVAL_MAX_BYTES): checked
 * (address, MAC, sender, time), then drop(arg, URL) for each URL it
 * names. Returns 204, or the status to refuse with and *why. */
int peers_receive_invalidation(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, peers_drop_f *drop, void *arg,
    const char **why);

/* Every peer in the table but this node itself (peer_dns lists it);
 * at most max. Not held: for home's thread only (which alone takes
 * peers out of the table), until it returns to its loop. Another
 * thread reads peers_views. */
size_t peers_list(struct peers *ps, struct peer **out, size_t max);
void peers_hold(struct peer *p);

/* Our Squid Cache Digest went to the peer at address to (anyone else's
 * fetch is not inter-proxy traffic). */
void peers_digest_served(struct peers *ps, const struct sockaddr *to,
    uint64_t bytes);

/* Inter-proxy traffic of p, for the metrics. */
void peers_count(struct peer *p, enum ipm_dir d, enum ipm_type t,
    uint64_t bytes);

/* p answered (it is up) or stayed silent (it is down; why is logged). */
void peers_alive(struct peer *p);
void peers_silent(struct peer *p, const char *why);

/* What /metrics and the status page show of one peer (now_ms from
 * mono_ms). */
struct peer_view {
	struct peer_spec spec;
	bool up;
	bool has_summary;   /* a summary is loaded; the next five are 0 if not */
	uint64_t epoch, seq;
	uint64_t checksum;  /* top 53 bits, exact as a double */
	double fill;        /* share of the filter's bits set */
	double fpr;         /* false-positive rate those bits give */
	uint64_t entries;   /* objects the peer said it holds */
	uint64_t memory;    /* bytes we hold for its summary (psum_bytes) */
	double age_s;       /* since its summary last changed; -1 never */
	double rtt_s;       /* smoothed; 0 not measured */
	struct peer_counters count; /* PEER_COUNTERS (peerstats.h) */
	double false_rate;    /* claim_note's moving average of false hits */
	bool skipped;         /* its claims are not followed now */
	uint64_t messages, bytes;  /* both directions, every type */
};
/* The views of peers_list's peers, at most max, in its order. */
size_t peers_views(struct peers *ps, uint64_t now_ms, struct peer_view *out,
    size_t max);

/* This node's inter-proxy traffic, [direction][type], every peer's
 * including those that left the table, as /metrics shows it (without
 * the table's entry for this node itself). */
void peers_traffic(struct peers *ps, uint64_t msgs[2][IPM_NTYPES],
    uint64_t bytes[2][IPM_NTYPES]);
const char *ipm_type_name(enum ipm_type t);

/* Prometheus series for peers and summaries. */
void peers_render_metrics(struct peers *ps, struct evbuffer *out);

#endif
