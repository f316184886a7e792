/* Client connections: accept, read and parse requests, write responses. */
#ifndef CLIENT_H
#define CLIENT_H

#include <event2/util.h>

#include "proxy.h"

/* Output above this stops pipelined parsing until the client has taken
 * it (back-pressure); a hit's body is in it by reference, not copied. */
#define CLIENT_OUT_HIGH (256 * 1024)
/* Request body buffered for the origin above this stops client reads. */
#define CLIENT_BODY_HIGH (64 * 1024)
/* What one read from a socket may add past a mark (libevent's default). */
#define CLIENT_READ_CHUNK (16 * 1024)
/* the most a TLS record carries: a whole reply up to this size is made
 * one piece before a TLS layer writes it (client_txn_done) */
#define TLS_MAX_RECORD (16 * 1024)

/*
 * What a connection asks of the request room above it, which installs
 * one table for every connection (s->client_ops): the connection parses
 * requests and moves bytes, and never names what answers them (as
 * Varnish's struct transport, upside down).
 */
struct client_ops {
	/* a request head begins on c: the txn that answers it, made by the
	 * room that frees it (NULL on ENOMEM) */
	struct txn *(*make)(struct client *c);
	/* a request head is parsed, in t (CONNECT too): answer it; may
	 * finish t, and even the connection, before it returns */
	void (*start)(struct txn *t);
	/* request body bytes arrived in in: take them (request_feed_body) */
	enum body_feed (*feed_body)(struct txn *t, struct evbuffer *in);
	/* the output is down to its low-water mark: send on */
	void (*drained)(struct txn *t);
	/* the request body stalled: true when that was a peer's summary
	 * (counted there), false for a client's, counted as an abort */
	bool (*stalled)(struct txn *t);
	/* answer t with an error of the connection's own (a bad head, a
	 * timeout, the allow list) */
	void (*refuse)(struct txn *t, int status, enum squid_code code,
	    const char *why, bool close);
	/* t failed mid-response: stop what feeds it */
	void (*stop)(struct txn *t);
	/* t is over: its access-log line and counters */
	void (*account)(struct txn *t);
	/* t is freed, with what it holds; clears *tp */
	void (*free)(struct txn **tp);
};

/*
 * The most memory one client connection's own buffers hold, whatever it
 * sends or fails to read: its unparsed input, its parsed head, a request
 * body on its way. (The server adds its fetch's buffers: the connection
 * bound it reports.)
 */
size_t client_buffers_bound(const struct http_limits *l);

/* A connection accepted on fd, from sa, in the slot of max_connections
 * its caller took (accept_slot_take): it is served from now on, and
 * gives the slot back when it closes. false on ENOMEM: fd is closed and
 * the slot is still the caller's. */
bool client_accept(struct worker *s, evutil_socket_t fd,
    const struct sockaddr *sa);
/* The same over bev, which the connection takes (freed on ENOMEM):
 * client_accept's second half, and how the unit tests serve a request
 * over a bufferevent pair, without a socket. */
bool client_attach(struct worker *s, struct bufferevent *bev,
    const struct sockaddr *sa);

/* The client's output buffer; what is added is counted in t->bytes_out by
 * client_sent(). */
struct evbuffer *client_out(struct client *c);
/* A mark of c's output (its length, which drains only from the loop):
 * the difference of two marks taken in one callback is what a reply
 * appended between them. */
uint64_t client_out_mark(struct client *c);
void client_sent(struct txn *t, size_t n);

/*
 * Whether every byte queued for c has left this host: its output is
 * empty and its socket's kernel buffer holds nothing unsent (what a body
 * sent by reference from a file waits for before its last bytes:
 * serve/disksend.c). When not, client_wait_all_sent has the client ops'
 * drained called once it is so; the connection ends when the socket
 * fails, or at idle_timeout if the client stops reading. Over a socket
 * only (the kernel's TCP_NOTSENT_LOWAT).
 */
bool client_all_sent(struct client *c);
/* Whether c speaks TLS (intercepted, or a peer link). */
static inline bool
client_is_tls(const struct client *c)
{
	return c->tls != NULL;
}
void client_wait_all_sent(struct client *c);

/* A response of length bytes (-1: streamed, length unknown) begins. One
 * longer than CLIENT_BULK_MIN, or streamed, is bulk work for the loop
 * (loop.h) until the client starts its next request. */
#define CLIENT_BULK_MIN (64 * 1024)
void client_response_begins(struct client *c, long long length);

/* The transaction's response is fully queued: log it and go on. */
void client_txn_done(struct client *c);

/* The response cannot be completed (origin died mid-body; the caller set
 * t->code): stop the transaction, flush what is queued and close, so the
 * client sees a message cut short of its framing, never a wrong one. The
 * transaction is logged at the close with the bytes really sent, as cut
 * the way why says (not CUT_NONE). */
void client_fail(struct client *c, enum log_cut why);

/* The request body must arrive whole within ms from now, not within
 * idle_timeout of each read (a peer's summary). */
void client_body_deadline(struct client *c, uint32_t ms);

/* More request body may be read (the origin took what was buffered). */
void client_body_resume(struct client *c);

/* Gives the transaction the body bytes read so far (request_feed_body),
 * and stops reading when it holds enough. */
enum body_feed client_feed_body(struct client *c);

/* Hands the socket, and its slot of max_connections, to a tunnel; frees
 * the client and its transaction. */
struct bufferevent *client_detach(struct client *c);

/* c's bytes pass through a TLS session for host (conn/tls.c) from now
 * on: what is already in its output (the CONNECT's 200) goes out first,
 * in clear. 0, or -1 with the reason in err (c is unchanged). */
int client_start_tls(struct client *c, const char *host, uint16_t port,
    char *err, size_t elen);
/* "host:port" of the CONNECT c is intercepted for, or NULL. */
const char *client_tls_authority(const struct client *c);
/* Whether c is a peer link: TLS from a node of the cluster, whose
 * certificate the handshake checked (conn/tls.h). */
bool client_on_link(const struct client *c);

/*
 * At max_connections: closes a connection that holds its slot for nothing,
 * so that a new client is served while idle or slow ones hold every slot:
 * the longest-open keep-alive connection whose client has had all its
 * answers, else the oldest that has not sent a whole request within
 * CLIENT_HEAD_GRACE_MS of its accept (a head that trickles in, or none).
 * A connection just accepted is given that long to send its request, so
 * that a burst of new clients wait in the kernel's backlog rather than
 * push each other out before a request is read. Looks at a bounded number
 * of the oldest. false when none may go: *retry_ms is then when one may
 * (the oldest new one's grace ends), at most CLIENT_HEAD_GRACE_MS.
 */
#define CLIENT_HEAD_GRACE_MS 250
bool client_make_room(struct worker *s, uint64_t *retry_ms);

/* Shutdown: close idle connections, make busy ones close after their
 * response. */
void client_drain_all(struct worker *s);

/* Closes every client at once (exit after the shutdown bound). */
void client_free_all(struct worker *s);

#endif
