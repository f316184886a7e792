/*
 * The fetch's insides, shared by its two files: fetch.c (starting a
 * fetch, its sources: peers, ICP, the origin; its timers and its end)
 * and fetchrecv.c (what comes back: the head decided and written, the
 * body to the client and to the copy for the store, the finish). Nothing
 * outside them includes this.
 */
#ifndef FETCH_IMPL_H
#define FETCH_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "busy.h"
#include "curlev.h"
#include "fetch.h"
#include "peers.h"
#include "upstream.h"

/* t->fetch as a part of t (txn.h): held by whoever sets it. */
extern const struct txn_part fetch_part;

/* curl's receive buffer: what one write callback brings at most */
#define FETCH_CHUNK (64 * 1024)
/* the system's trust (Debian's ca-certificates), kept beside
 * tls_upstream_ca, which replaces curl's default bundle */
#define FETCH_SYSTEM_CA_DIR "/etc/ssl/certs"
/* client output, miss bytes: reading the origin stops above this (the
 * client's write low-water mark, so its write callback resumes it) */
#define FETCH_OUT_HIGH (CLIENT_OUT_HIGH / 4)
/* curl's own per transfer (handle, connection, header lists), measured
 * at under 24 KB and rounded up */
#define FETCH_CURL_OVERHEAD (32 * 1024)
/* curl's upload buffer (CURLOPT_UPLOAD_BUFFERSIZE's default), allocated
 * for a request with a body */
#define FETCH_UPLOAD_BUFFER (64 * 1024)

#define FETCH_MAGIC 0xe3658966u
struct fetch {
	unsigned magic;         /* FETCH_MAGIC (SC_CAST) */
	struct worker *w;
	struct txn *t;             /* NULL once shared: the readers' */
	enum fetch_kind kind;
	CURL *easy;
	struct curl_slist *hdrs;
	struct curl_slist *connect_to;  /* a peer link's (link_to) */
	struct curlev_xfer xfer;
	struct event *timer;
	uint64_t heard_ms;         /* when the source last sent (mono_ms) */
	bool running;
	struct evbuffer *headbuf;  /* response head lines so far */
	struct http_head resp;
	bool head_done;            /* final head written to the client */
	bool not_modified;         /* revalidation answered 304 */
	bool recv_paused;
	bool send_paused;
	const char *proto_error;
	char curl_err[CURL_ERROR_SIZE]; /* curl's own words on a failure */
	/* peers whose summaries claim the object, asked in order before the
	 * origin; peer is the one being asked now (NULL: the origin) */
	struct peer *cand[PEERS_ASKED_MAX];
	size_t ncand, next_cand;
	struct peer *peer;
	/* peer's name and options when it was chosen (a found peer's
	 * change under the peer table's lock: peers.h) */
	struct peer_spec peer_as;
	enum upstream_to to;       /* what peer (or the origin) is asked as */
	/* placement hash: the key's owner (NULL: this node), asked after
	 * the candidates, and once more if it did not answer; whether this
	 * node keeps a copy from a peer */
	struct peer *owner;
	bool owner_asked;
	bool owner_replaced;
	bool keep_copy;
	bool peer_refused;         /* it answered 5xx, 403 or 407: a false
	                            * hit */
	struct icp_ask *icpq;      /* ICP query out, before any source */
	bool by_icp;               /* the candidate said ICP HIT */
	struct store_body *body;   /* copy for the store, or NULL */
	struct disk_stream *stream; /* or the body to the disk as it comes */
	uint64_t streamed;         /* bytes of it */
	size_t reserved;           /* of inflight_mem, for body or stream
	                            * (budget.c) */
	char *stored_head;         /* filtered fields for the store */
	size_t stored_head_len;
	time_t request_time;
	/* collapsed forwarding (busy.c): others may join a GET; once its
	 * answer is shared, every client reads the copy and the fetch runs
	 * for none of them in particular */
	struct busy *busy;
	bool shared;
	struct busy_source src;    /* once shared: what its readers read */
	bool tee;                  /* the copy is a window, not kept
	                            * (busy.c), of at most tee_room bytes */
	size_t tee_room;
	bool tee_ending;           /* complete: waits for other workers'
	                            * readers to take the rest (tee_wake) */
	/* news of the source taken up on the loop, off the callback that
	 * brought it: a disk stream's progress (stream_progress), or a
	 * tee's readers (tee_wake) */
	struct event *wake;
	/* shared to the disk: curl is done and the rest is going down
	 * (finishing) */
	uint64_t stream_readable;
	bool stream_failed;
	bool finishing;
	bool stale_instead;        /* a 5xx that stale-if-error covers */
	/* a range request answered from the whole object (range.c) */
	bool range_too_large;      /* beyond range_fetch_limit: asked
	                            * again, the range sent on */
	bool client_done;          /* its answer (a 416) is out: the rest
	                            * is for the store */
	uint64_t received;         /* body bytes so far */
	uint64_t range_at;         /* bytes of the 206's body sent */
	struct store_obj *shape;   /* the object's head and metadata */
	struct fetch *prev, *next; /* on s->shared_fetches once shared */
};

/* a tee's window at least: a few of curl's chunks past the slowest
 * reader */
#define TEE_ROOM (4 * FETCH_CHUNK)

/* (Re)arms the silence timer for the source being asked. */
void fetch_arm_timer(struct fetch *f);
/* The source sent something: the silence starts again (without a timer
 * operation: the timer, when it fires, looks at when). */
void fetch_heard(struct fetch *f);

/* curl's header and write callbacks (fetchrecv.c). */
size_t fetch_on_header(char *buf, size_t size, size_t n, void *arg);
size_t fetch_on_body(char *data, size_t size, size_t n, void *arg);

/* The transfer is over: finished whole, or failed with rc. Either may
 * finish the transaction, or free a shared fetch: f is then gone. */
void fetch_finish_ok(struct fetch *f);
void fetch_finish_error(struct fetch *f, CURLcode rc);

/* The copy for the store is given up (or was stored): its reservation
 * goes back to inflight_mem. */
void fetch_drop_copy(struct fetch *f);

/* The disk stream's progress, on the loop (fetchend.c). */
void stream_progress(evutil_socket_t fd, short what, void *arg);

#endif
