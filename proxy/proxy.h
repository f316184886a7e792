/*
 * Types shared by the daemon's modules: the node and its worker, a client
 * connection and the transaction (one request and its response) a client
 * is running.
 * Prototypes of each module live in its own header.
 */
#ifndef PROXY_H
#define PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "accesslog.h"
#include "cachectl.h"
#include "conf.h"
#include "http_parse.h"
#include "metrics.h"
#include "ratelog.h"
#include "store.h"
#include "tiers.h"
#include "url.h"

struct event;
struct event_base;
struct evdns_base;
struct bufferevent;
struct evbuffer;
struct evbuffer_cb_entry;
struct curlev;
struct peers;
struct tiers;
struct tiers_wait;
struct discover;
struct icpsock;
struct sqdigest;
struct fetch;
struct tunnel;
struct status;
struct busy;
struct reqbody;
struct tls_conn;
struct tls_server;
struct collapse_failure;
struct range_plan;
struct busy_table;
struct pass;
struct budget;
struct admit;
struct client_ops;
struct busy_seat;
struct crowd;
struct crowd_claim;
struct writer_ops;
struct txn_part;
struct inbox;
struct accesslog_buf;

/* A txn's parts (serve/txn.h) at most: one per feature that holds one. */
#define TXN_PARTS_MAX 12

/* Where the configuration comes from: read at start and on SIGHUP. */
struct server_conf_src {
	const char *file;      /* -c, or NULL */
	char *const *ovr;      /* the -o values, in order */
	int novr;
};

/*
 * A node and its workers. The node is what every worker shares: the
 * configuration, the cache and its tiers, the summary and the peers,
 * the certificates, the pass table, the memory budget. A worker is one
 * event loop on a thread of its own and what only that loop touches:
 * its base, its resolver, its libcurl multi handle, its clients and
 * tunnels, its timers, its counters and serve/'s state of the loop (busy
 * fetches, followers, background revalidations). A client connection
 * lives on one worker its whole life. The first worker is home: it also
 * runs the signals, the node's timers, the disk's start-up scan, the
 * peers' timers and transfers, the ICP socket (other workers' queries
 * reach it through its inbox), discovery and the status sampler.
 *
 * Who may touch what (Varnish's habit: each field's guard is named).
 * struct node's own fields are written at start, by home's thread before
 * any other worker runs, and at a reload, by home while every other
 * worker is stopped between two events (server.c: pause_workers); any
 * worker reads them at any time, but these:
 *   draining, open_conns,   atomic
 *   conns_peak
 *   others_running          home's alone
 *   pause                   its lock
 * The objects it points to guard themselves, each saying how in its
 * opening comment: store (stripe and queue locks), budget, pass, crowd,
 * tls, digest, peers, admit (a lock each, off the hit path: the peers'
 * is taken by misses, inserts and evictions, and peers' messages), log
 * (each worker writes through its own buffer), tiers (without a disk
 * nothing of its own changes after start; with one, the disk lock,
 * taken by misses, disk hits and bodies sent from a segment file, never
 * by a hit on a body in memory); icp, discover, status and the timers
 * are home's. Nothing in a struct worker is touched by another
 * thread but its counters (m: written by its thread, read atomically
 * when summed), oldest_us (atomic, the same way) and its inbox (inbox.c); work for a worker goes to its
 * inbox.
 */
struct node {
	struct conf conf;
	struct server_conf_src conf_src;
	struct http_limits limits;
	struct store *store;
	struct tiers *tiers;     /* memory over disk (tiers.c) */
	struct peers *peers;     /* NULL with sharing none, placement none */
	struct admit *admit;     /* placement hash: copies of others' keys */
	struct discover *discover; /* peer_dns lookups, or NULL */
	struct icpsock *icp;     /* ICP server and client, or NULL */
	struct sqdigest *digest; /* digest_generation, or NULL */
	struct sockaddr_storage listen_addr; /* http_listen, parsed */
	int listen_len;
	struct accesslog *log;
	struct status *status;   /* samples for /sumcache/status */
	unsigned max_connections;    /* clients and tunnels (accept.c) */
	_Atomic unsigned open_conns; /* of every worker, now */
	_Atomic unsigned conns_peak; /* the most open_conns has been */
	int body_fd_ceiling;         /* memfd bodies below this (bodyfd.c) */
	unsigned curl_pool;          /* origin connections kept (accept.c) */
	struct budget *budget;       /* in-flight copies, heap trims */
	struct pass *pass;           /* URLs sent straight to the origin */
	struct crowd *crowd;         /* who leads which fetch, with several
	                              * workers (serve/crowd.c), or NULL */
	struct event *signals[3]; /* TERM, INT, HUP */
	struct event *shutdown_timer;
	const struct client_ops *client_ops; /* what answers requests */
	struct tls_server *tls;     /* interception (conn/tls.c), or NULL */
	/* with peers and a cluster key: this node's certificate for peer
	 * links (cert/cluster.h) and their server side, else NULL; https
	 * objects travel between nodes over these only */
	struct cluster_id *cluster;
	struct tls_link *link;
	atomic_bool draining;
	char via[160];   /* "1.1 node_name" */
	char peer_source[80]; /* CURLOPT_INTERFACE for peers, or "" */
	struct metrics_node gauges; /* max_connections, conn_mem_bound (the
	                             * peak is conns_peak's, when read) */
	unsigned nworkers;
	struct worker **workers; /* nworkers of them; [0] is home */
	struct worker *home;     /* the node's own loop (server_init) */
	unsigned others_running; /* home's: other workers' loops running */
	struct {                 /* a reload's pause (server.c) */
		pthread_mutex_t lock; /* guards parked and go */
		pthread_cond_t cv;
		unsigned parked;
		bool go;
	} pause;
};

#define WORKER_MAGIC 0x138dda71u
struct worker {
	unsigned magic;         /* WORKER_MAGIC (SC_CAST) */
	struct node *node;
	unsigned id;            /* its place in node->workers */
	pthread_t thread;       /* but home's: server_run's */
	bool started;
	struct event_base *base;
	struct inbox *inbox;     /* work other threads hand this loop */
	struct accesslog_buf *logbuf; /* its access log lines */
	struct event *flush_timer;    /* writes them */
	struct evdns_base *dns;
	struct curlev *curl;     /* origin and peer transfers */
	struct metrics m;
	struct event *listen_ev;     /* its listening socket's (accept.c) */
	struct event *accept_retry;  /* a paused listener tries again */
	uint64_t accept_paused_ms;   /* when it paused; 0 = accepting */
	uint64_t accept_pause_logged_ms; /* the last pause's log line */
	uint64_t accept_short_ms;    /* last accept short of descriptors */
	struct busy_table *busy;     /* fetches others may join (busy.c) */
	struct busy *followers;      /* waits for other workers' fetches */
	struct fetch *shared_fetches; /* shared: no client's (fetch.c) */
	struct txn *background;      /* clientless revalidations (stale.c) */
	struct ratelog_by origin_errlog; /* bad origin answers: a line a
	                                  * second of each kind */
	struct ratelog link_errlog;   /* peers' link certificates refused */
	struct client *clients;       /* newest first */
	struct client *oldest_client; /* the list's tail */
	/* its accepted_us, UINT64_MAX with none: written by this worker,
	 * read by another at max_connections to find the node's oldest */
	_Atomic uint64_t oldest_us;
	struct tunnel *tunnels;
	unsigned ntunnels;
};

#define CLIENT_MAGIC 0x0a3aee49u
struct client {
	unsigned magic;         /* CLIENT_MAGIC (SC_CAST) */
	struct worker *w;
	struct bufferevent *bev;
	struct client *prev, *next;
	struct event *timer;  /* header, idle or body-stall timeout */
	struct txn *txn;      /* request being answered, or NULL */
	const struct writer_ops *wr; /* how its answers are written */
	bool chunked;         /* its answer's body goes in chunks (h1.c) */
	uint64_t head_mark;   /* the output's length when its head began */
	size_t scan;          /* http_head_end progress */
	bool allowed;
	bool closing;         /* flush the output, then close */
	bool head_started;    /* bytes of a next request have arrived */
	bool in_loop;         /* in the parse loop or feeding a body */
	bool dead;            /* freed while in_loop: free on loop exit */
	bool slot_moved;      /* its slot of max_connections goes on with
	                       * its socket (client_detach) */
	bool body_deadline;   /* the body's timer is not re-armed per read */
	bool bulk;            /* its socket runs at LOOP_PRIO_BULK */
	bool served;          /* a transaction of it has finished */
	struct tls_conn *tls; /* intercepted or a peer link: its TLS layer
	                       * (conn/tls.c) */
	struct evbuffer_cb_entry *linger; /* closing under TLS: the socket's
	                                   * output being watched to empty */
	struct event *all_sent; /* client_wait_all_sent's, once asked */
	struct disk_sent sent; /* the claim of the last body from the disk
	                        * it was sent (conn/writer.h's body) */
	uint64_t accepted_us; /* monotonic: the node's oldest is told apart */
	struct sockaddr_storage sa;
	char addr[64];
};

/*
 * What the body feed tells the connection: the client owns its socket,
 * the request decides how much body it holds.
 */
enum body_feed {
	BODY_FEED_MORE = 0,  /* read on */
	BODY_FEED_FULL,      /* stop reading until client_body_resume */
	BODY_FEED_FAILED,    /* a framing error: answered, or the connection
	                      * is failing; read nothing more */
};

/* How a response counts in sumcache_requests_total. */
enum txn_result {
	RESULT_INTERNAL = 0, /* /metrics and the like: not counted */
	RESULT_LOCAL_HIT = 1,
	RESULT_MISS = 2,
	RESULT_ERROR = 3,
	RESULT_REMOTE_HIT = 4,
	RESULT_ADMIN = 5,    /* a PURGE: logged, not a client's request */
};

#define TXN_MAGIC 0xe338e970u
struct txn {
	unsigned magic;         /* TXN_MAGIC (SC_CAST) */
	struct worker *w;
	struct client *c;
	struct http_head req;
	struct url url;
	struct cc reqcc;
	bool is_get;
	bool is_head;
	bool keep_alive;      /* the connection may carry another request */
	bool looped;          /* our name is in Via: never ask a peer */
	bool placed;          /* a peer asked us as the key's owner: the
	                       * origin answers a miss, never another peer */
	bool for_peer;        /* a peer asks (not counted as a client's) */
	enum log_cut cut;     /* failed mid-response (how): logged at the
	                       * close */
	struct timeval start;
	/* the request body as it is read (serve/reqbody.c), or NULL; the
	 * connection reads no next request while it is unread */
	struct reqbody *body;
	bool body_unread;
	/* a peer's message (a summary, an invalidation): the body, read
	 * whole into one block, then applied (pages.c) */
	enum peer_post {
		PEER_POST_NONE = 0,
		PEER_POST_SUMMARY,
		PEER_POST_INVALIDATION,
	} peer_post;
	/* what is answering it */
	struct fetch *fetch;
	struct disksend *send;    /* a large body on disk, by windows */
	struct store_obj *stale;  /* stored copy under revalidation */
	struct tiers_wait *disk_wait; /* reading the disk's copies */
	bool disk_read;       /* they were read: memory has what it has */
	/* collapsed forwarding (busy.c) */
	struct busy_seat *seat; /* at the fetch it waits for or reads */
	struct crowd_claim *crowd; /* the lead of its URL's fetch, claimed
	                            * for the fetch it starts (crowd.c) */
	bool followed;        /* waited for another worker's fetch, done:
	                       * a hit now is a collapse */
	bool no_collapse;     /* a fetch let it go: it fetches alone */
	struct collapse_failure *failed; /* the fetch it waited for failed:
	                      * it answers with that, not a fetch (busy.c) */
	/* byte ranges (range.c) */
	bool range_whole;     /* its Range is answered from the whole
	                       * object, fetched for the cache */
	struct range_plan *range; /* the 206 it is sent, or NULL */
	struct txn *bg_prev, *bg_next; /* on w->background, with no c */
	/* what its features hang on it, each freed by its part's drop
	 * (serve/txn.h): the last held first */
	const struct txn_part *parts[TXN_PARTS_MAX];
	unsigned nparts;
	/* for the access log and metrics */
	enum txn_result result;
	int status;
	uint64_t bytes_out;
	enum squid_code code;
	enum squid_hier hier;
	char hier_host[64];   /* address that answered, or "-" */
	char ctype[80];
};

#endif
