/*
 * TLS's server side, a layer under the client connection, of two kinds.
 * Interception: once a CONNECT is intercepted, the connection's bytes
 * pass through a TLS session whose certificate is the host's leaf
 * (cert/leaves.c), and everything above sees plain requests for https://
 * URLs. Peer links: a node of the cluster connects with TLS, both ends
 * showing a certificate of the cluster CA (cert/cluster.h), and asks for
 * https:// objects as a peer asks for any.
 */
#ifndef TLS_H
#define TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct cluster_id;
struct conf;
struct evbuffer;
struct event_base;
struct leaves_stats;
struct metrics;
struct tls_conn;
struct tls_link;
struct tls_server;

/* TLS_SPLICE_MAX pairs of a client address and a host it refused our
 * certificate for are tunnelled instead (tls_splice_after_reject): 64 KB */
#define TLS_SPLICE_MAX 4096
#define TLS_LEAVES_MAX 4096

/* The interception of c's tls_ca_cert/tls_ca_key, counting into m's
 * tls_* counters (borrowed); NULL with the reason in err (the CA
 * refused, or out of memory). */
struct tls_server *tls_server_new(const struct conf *c, char *err,
    size_t elen);
void tls_server_free(struct tls_server **ts);

/* Whether a CONNECT to host from the client at address client is
 * intercepted under c's lists: matched by tls_intercept, not by
 * tls_no_intercept, and that client did not refuse our certificate for
 * it lately (then it is counted spliced). */
bool tls_server_wants(struct tls_server *ts, const struct conf *c,
    const char *client, const char *host, uint64_t now_ms,
    struct metrics *m);

/*
 * A TLS server session for host (port: the CONNECT's) over plain, which
 * it takes, for the client at address client: the bufferevent to read
 * and write the clear text through, and the connection's state in *tc.
 * Its handshake is counted in m, its worker's. NULL with the reason in
 * err (plain is then still the caller's). Any worker: the server's own
 * state is under its lock.
 */
struct bufferevent *tls_server_wrap(struct tls_server *ts,
    struct event_base *base, struct bufferevent *plain, const char *client,
    const char *host, uint16_t port, struct metrics *m, struct tls_conn **tc,
    char *err, size_t elen);

/* What a connection's event means under its TLS layer. */
enum tls_event {
	TLS_EVENT_DONE = 0,    /* the handshake is done: go on */
	TLS_EVENT_END = 1,     /* the connection ends (EOF, an error) */
	TLS_EVENT_FAILED = 2,  /* the handshake failed: the connection ends
	                        * once what the layer wrote (its alert) has
	                        * reached the socket */
};

/* The connection's event (what, as libevent gives it): the handshake's
 * end is counted, and a failure logged (a line a second of each kind); a
 * client's refusal of our certificate splices its host, for its address,
 * for c->tls_splice_after_reject. */
enum tls_event tls_conn_event(const struct conf *c, struct tls_conn *tc,
    struct bufferevent *bev, short what, uint64_t now_ms);
/* Whether the handshake is over (done or failed). */
bool tls_conn_handshaken(const struct tls_conn *tc);

/* "host:port" of an intercepted CONNECT, for the URLs of the requests
 * inside; NULL on a peer link (its requests name absolute URLs). */
const char *tls_conn_authority(const struct tls_conn *tc);
bool tls_conn_is_link(const struct tls_conn *tc);
void tls_conn_free(struct tls_conn **tc);

/* Ends the session whose layer is bev, every reply through it: its
 * close_notify goes into the socket's output, which is returned (the
 * socket may close once that is empty). */
struct evbuffer *tls_conn_close(struct bufferevent *bev);

/* Peer links accepted with id's certificate and key, trusting its CA
 * alone (OpenSSL holds references of its own), counting into m's link_*
 * counters. NULL with err. */
struct tls_link *tls_link_new(const struct cluster_id *id, char *err,
    size_t elen);
void tls_link_free(struct tls_link **tl);

/* Whether a connection's first bytes, in in, open a TLS handshake. */
bool tls_link_offered(struct evbuffer *in);

/* A peer link's TLS session over plain, as tls_server_wrap. */
struct bufferevent *tls_link_wrap(struct tls_link *tl,
    struct event_base *base, struct bufferevent *plain, struct metrics *m,
    struct tls_conn **tc, char *err, size_t elen);

/* The leaf cache's figures (cert/leaves.h), for /metrics. */
struct leaves_stats tls_server_leaves(struct tls_server *ts);

#endif
