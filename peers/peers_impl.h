/*
 * What the files of peers/ share and nobody outside them sees: the state
 * of a peer table, the signed messages its queues hold, a transfer to a
 * peer, and the calls between the files. Each file says what it owns in
 * its opening paragraph:
 *
 *   spec.c      peer lines
 *   table.c     the table: storage, liveness, references, candidates
 *   members.c   who the peers are: lines, reloads, peer_dns, senders
 *   exchange.c  publishing, the push queues, pulls and probes
 *   receive.c   the checks a summary passes, and refusals
 *   sqpeer.c    Squid peers' Cache Digests
 *   observe.c   the policy line, views and metrics
 *
 * Threads: one lock, the table's (ps->lock), guards all of struct peers
 * and every struct peer; table.c's opening comment gives the rules. A
 * function named peers_* takes it; the others here expect it held.
 */
#ifndef PEERS_IMPL_H
#define PEERS_IMPL_H

#include <pthread.h>
#include <sys/queue.h>

#include <curl/curl.h>

#include "curlev.h"
#include "peers.h"
#include "ratelog.h"

#define SUMMARY_PATH "/sumcache/v1/summary"
#define INVALIDATE_PATH "/sumcache/v1/invalidate"
#define DIGEST_PATH "/squid-internal-periodic/store_digest"

struct peer {
	struct peer_spec spec;
	struct sockaddr_storage addr;  /* resolved at start-up */
	socklen_t addrlen;
	char proxy_url[300];           /* "http://host:port" for curl */
	bool up;
	double rtt_ms;                 /* smoothed; 0 = not measured */
	unsigned backoff_ms;           /* next re-probe delay while down */
	uint64_t probe_at_ms;          /* monotonic time of the next probe */
	struct psum *sum;              /* what the peer last told us */
	uint64_t sum_entries;
	uint64_t sum_updated_ms;       /* monotonic; 0 = never */
	bool pulling;
	struct pushq *pushq;           /* messages waiting to be sent */
	bool pushing;
	bool receiving;                /* a summary body from its address */
	uint64_t msgs[2][IPM_NTYPES];
	uint64_t bytes[2][IPM_NTYPES];
	struct peer_counters count;    /* PEER_COUNTERS (peerstats.h) */
	struct claim_record claims;    /* how asking it has gone */
	uint64_t inval_us;             /* time of its last invalidation taken */
	struct peers *owner;
	/* a peer found through peer_dns is known by its address until its
	 * first signed message names it; it leaves when DNS stops listing
	 * it, and is freed when the last transfer or fetch lets go of it */
	unsigned refs;                 /* the table's, transfers', fetches' */
	bool found;                    /* from peer_dns, not a peer line */
	bool named;                    /* found, and its messages named it */
	bool self;                     /* found, and it is this node */
	bool retired;                  /* no longer in the table */
	uint64_t serial;               /* peer_serial */
	/* type=squid-digest: its digest is fetched when a lookup first
	 * wants it, then again 5 min after it expires */
	bool digest_wanted;
	uint64_t digest_due_ms;        /* monotonic: next fetch while up */
	unsigned digest_retry_ms;      /* after a refused or missing digest */
};

/* A signed message, shared by every peer's queue (refs). */
struct msg {
	unsigned refs;
	enum ipm_type type;
	struct sum_buf buf;
};

struct pushq {
	struct msg *m;
	struct pushq *next;
};

/* One transfer to a peer: a push or a pull. */
#define XFER_MAGIC 0x74eafcaau
struct xfer {
	unsigned magic;         /* XFER_MAGIC (SC_CAST) */
	LIST_ENTRY(xfer) link;  /* in flight, for peers_free */
	struct peers *ps;
	struct peer *p;         /* held */
	CURL *easy;
	struct curl_slist *hdrs;
	struct curlev_xfer cx;
	curlev_done_f *done;    /* its end, called with the lock held */
	struct xfer *next_kicked; /* waiting for home to start it */
	struct msg *m;          /* push: what is sent */
	struct sum_buf resp;    /* pull: what comes back */
	uint64_t ignored;       /* push: bytes of the answer's body */
	bool too_big;
};

/* A push's or an invalidation's answer is its status; a body, if the
 * peer sends one, is read and thrown away up to this, and past it the
 * transfer fails (xfer_why says "64 KB"). */
#define PEER_ANSWER_MAX (64 * 1024)

#define PEERS_MAGIC 0xd53da439u
struct peers {
	unsigned magic;         /* PEERS_MAGIC (SC_CAST) */
	pthread_mutex_t lock;   /* guards the rest, but what is set at start */
	pthread_t home;         /* base's thread: transfers start there */
	struct event_base *base;
	struct curlev *curl;    /* home's */
	struct inbox *inbox;    /* home's: how other threads wake it */
	struct event *kick_ev;  /* home starts the transfers of kicked */
	struct xfer *kicked, **kicked_tail; /* asked for on other threads */
	/* home_soon has made an event active, or will: one each */
	bool kick_asked, publish_asked, rebuild_asked, inval_asked;
	struct peers_conf conf;
	uint8_t *key;
	struct peer **v;              /* the table: configured, then found */
	size_t n, cap;
	struct peers_counters count;  /* PEERS_COUNTERS (peerstats.h) */
	/* traffic of peers that left the table, so totals never go down */
	uint64_t gone_msgs[2][IPM_NTYPES];
	uint64_t gone_bytes[2][IPM_NTYPES];
	bool any_gone;
	struct publisher *pub;        /* our filter and when to publish it */
	/* requests peers sent us since the publisher last heard (any
	 * worker adds, without the lock; threshold_due takes them) */
	_Atomic uint64_t asked;
	/* the node's clients' requests so far (peers_count_requests, set
	 * before other threads start), and the count the publisher has
	 * heard of (threshold_due, under the lock) */
	uint64_t (*requests)(void *arg);
	void *requests_arg;
	uint64_t requests_heard;
	struct sumkey_hasher *hasher;
	struct sumkey_hasher *md5;    /* Squid peers' keys, when not hasher */
	struct msg *pull_msg;         /* last publication in full, lazily */
	struct event *publish_ev;     /* publish at the end of this turn */
	struct event *interval_timer;
	struct event *probe_timer;
	struct event *rebuild_ev;     /* a rebuild's next step */
	struct event *expiry_timer;   /* claims lapse (pub_expire) */
	uint64_t rejected[REJ_NREASONS];
	struct ratelog rejlog[REJ_NREASONS];
	LIST_HEAD(, xfer) xfers;
	uint64_t held;                /* bytes of summary bodies arriving */
	/* URLs dropped this loop turn, sent to peers at its end */
	char *inval_urls[WIRE_MAX_URLS];
	size_t inval_n, inval_bytes;
	struct event *inval_ev;
	uint64_t inval_us;            /* time of our last invalidation */
	uint64_t started_us;          /* wall clock at peers_new: older
	                               * invalidations are refused */
	struct ratelog inval_refuse_log;
	struct ratelog inval_log;     /* URLs too long to send */
	uint64_t serials;             /* peers ever added */
};


static inline void
peers_enter(struct peers *ps)
{
	pthread_mutex_lock(&ps->lock);
}

static inline void
peers_leave(struct peers *ps)
{
	pthread_mutex_unlock(&ps->lock);
}

/* exchange.c: ev (one of ps's) runs at home's next loop turn: made
 * active on home's thread, posted to home's inbox from another (a loop's
 * events are its thread's alone: server.c). *asked is the event's flag
 * in struct peers: set until its callback clears it, so a burst asks
 * once. */
void home_soon(struct peers *ps, struct event *ev, bool *asked);

/* proxy_url's scheme: peer_authority is what follows it */
#define PEER_URL_SCHEME "http://"

/* table.c: the table's storage and references */
int table_reserve(struct peers *ps, size_t more);
struct peer *peer_alloc(struct peers *ps);
void table_insert(struct peers *ps, struct peer *p);
struct peer *table_add(struct peers *ps);
/* p's traffic into the table's totals (p leaves) */
void fold_traffic(struct peers *ps, struct peer *p);
uint16_t addr_port(const struct sockaddr_storage *a);

/* members.c: who the peers are */
int check_specs(const char *node_name, const struct peer_spec *specs,
    size_t n, char *err, size_t elen);
/* the MD5 hasher once a Squid peer is listed; -1 on ENOMEM */
int want_md5(struct peers *ps, const struct peer_spec *specs, size_t n);
/* p's host resolved (at start-up), its endpoint set */
int resolve(struct peer *p, char *err, size_t elen);
void set_endpoint(struct peer *p, const struct sockaddr *sa,
    socklen_t len);
/* the table's i-th peer leaves it (why is logged) */
void retire(struct peers *ps, size_t i, const char *why);

/* table.c: what the peers_* of the same names do, with the lock held */
void peer_count(struct peer *p, enum ipm_dir d, enum ipm_type t,
    uint64_t bytes);
void peer_put(struct peer **p);
void peer_hold(struct peer *p);
struct peer *table_by_addr(struct peers *ps, const struct sockaddr *addr);
void peer_mark_up(struct peer *p);
void peer_mark_down(struct peer *p, const char *why);
void note_rtt(struct peer *p, double ms);
bool same_addr(const struct sockaddr *a, const struct sockaddr_storage *b);
struct peer *by_name(struct peers *ps, const char *name);
/* A found peer's signed message names it (false: not a peer to use
 * under that name, or this node itself). */
bool name_found(struct peers *ps, struct peer *p, const char *sender);
/* The peer at from that signed as sender, or NULL. */
struct peer *sender_peer(struct peers *ps, const struct sockaddr *from,
    const char *sender);

/* invalidate.c */
int invalidate_init(struct peers *ps);
void invalidate_stop(struct peers *ps);

/* exchange.c: transfers to a peer (held by the transfer), freed by the
 * done callback (called with the lock held) with xfer_free; xfer_start
 * frees one it cannot start. Started on another thread than home's, a
 * transfer waits for home's next loop turn (curl's handle is home's):
 * true then, and a failure to start reaches done. */
struct xfer *xfer_new(struct peer *p, const char *path);
bool xfer_start(struct xfer **xp, curlev_done_f *done);
/* Why a push or an invalidation failed with rc, for the log. */
const char *xfer_why(const struct xfer *x, CURLcode rc);

/* exchange.c */
int exchange_init(struct peers *ps);
void exchange_start(struct peers *ps);
/* A reload's publishing pace: the publisher's and the interval tick. */
void exchange_set_pace(struct peers *ps, double threshold,
    uint64_t max_interval_ms);
/* Cancels every transfer, frees the events and the pull message. */
void exchange_stop(struct peers *ps);
void msg_unref(struct msg **mp);
/* The last publication in full, held for the caller; NULL on ENOMEM. */
struct msg *exchange_full_msg(struct peers *ps);
void exchange_enqueue(struct peer *p, struct msg *m);
void exchange_drop_queue(struct peer *p);
/* A sumcache peer's full summary, or a Squid peer's digest. */
void exchange_pull(struct peer *p);
/* The end of a pull: counts it, reads its status and time. False when the
 * peer left the table meanwhile; x is freed then. */
bool pull_ended(struct xfer *x, enum ipm_type type, long *status,
    double *secs);
void xfer_free(struct xfer **xp);

/* receive.c */
/* Counts, logs (rate-limited) and returns status; *why the reason. */
int receive_refuse(struct peers *ps, enum reject r, int status,
    const char *who, const char *detail, const char **why);
/* receive_refuse for a Summary of another version (WIRE_VERSION_DIFFERS),
 * naming both versions. */
int receive_version_refused(struct peers *ps, const char *who,
    const struct wire_summary *w, int status, const char **why);
/* Applies a decoded summary from p: an HTTP status; on anything but 204
 * what we hold is unchanged. */
int receive_apply(struct peers *ps, struct peer *p,
    const struct wire_summary *w, const char **why);

/* observe.c */
void peer_view(const struct peer *p, uint64_t now_ms, struct peer_view *v);

/* sqpeer.c: a digest pull's curlev completion */
void sqpeer_digest_done(void *arg, CURLcode rc);

#endif
