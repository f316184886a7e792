/*
 * TLS interception's server side (tls.h). One SSL_CTX for the node:
 * TLS 1.2 and 1.3, the server's session cache and 1.3 tickets so a
 * returning client resumes, ALPN answering http/1.1 only (a client that
 * offers h2 alone gets no ALPN and speaks HTTP/1.1, as it must then).
 * Each connection gets its host's leaf, minted once and cached.
 *
 * The SNI a client sends must name the CONNECT's host: the cache key
 * and the upstream are the CONNECT's, and a client that asks for one
 * name while connecting to another is refused rather than guessed at.
 *
 * A client that refuses our certificate (a pinned app, a machine
 * without our CA) sends an alert during the handshake; that host is then
 * spliced (tunnelled) for that client's address, for
 * tls_splice_after_reject, logged once, so the app is not broken again
 * on every connection. Only for that address: one client without our CA
 * must not switch interception off for every other (and any allowed
 * client could). The table holds TLS_SPLICE_MAX pairs of address and
 * host, by the hash of the two (a collision of 64-bit hashes would
 * tunnel one more pair), found by probing a few slots; when those are
 * all live, the pair that expires first makes room.
 *
 * Peer links are the other kind of TLS connection a node accepts: a
 * connection to its port whose first byte is a TLS handshake record
 * (0x16, which no HTTP request starts with), from a node of the cluster
 * (cert/cluster.h). Both ends must show a certificate of the cluster CA
 * and name CLUSTER_LINK_NAME, or the handshake fails; TLS 1.3 only,
 * since both ends are sumcache.
 */
#include "tls.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <xxhash.h>

#include "ca.h"
#include "cert.h"
#include "cluster.h"
#include "conf.h"
#include "hostpat.h"
#include "leaves.h"
#include "metrics.h"
#include "ratelog.h"

/* A client address that refused our certificate for a host. */
struct splice {
	uint64_t key;        /* splice_key of the two; 0: a free slot */
	uint64_t until_ms;
};

/* The node's, used by every worker: ctx and ca are read-only once made
 * (OpenSSL's SSL_CTX is safe to share once set up); lock guards the
 * leaf cache (a leaf is taken into a connection's SSL under it, so an
 * eviction cannot free it first), the splice table and the log's rate.
 * Held for one connection's set-up or verdict, never on a request. */
struct tls_server {
	SSL_CTX *ctx;
	struct ca *ca;
	pthread_mutex_t lock;
	struct leaves *leaves;
	struct splice splice[TLS_SPLICE_MAX];
	struct ratelog_by fail_log;  /* by OpenSSL's reason */
};

/* The node's too: ctx read-only, lock guards refused_log. */
struct tls_link {
	SSL_CTX *ctx;
	pthread_mutex_t lock;
	struct ratelog_by refused_log;  /* by OpenSSL's reason */
};

/* one of ts and link: what the connection is; its worker's counters */
struct tls_conn {
	struct tls_server *ts;
	struct tls_link *link;
	struct metrics *m;
	bool handshaken;
	char host[256];
	char authority[270];
	char client[64];      /* its address */
	char sni[64];         /* an SNI refused for naming another host */
	uint64_t splice_key;  /* of client and host */
};

/* ALPN: http/1.1 or nothing */
static int
on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	static const unsigned char ours[] = "\x08http/1.1";
	unsigned char *sel;

	(void)ssl;
	(void)arg;
	if (SSL_select_next_proto(&sel, outlen, ours, sizeof(ours) - 1, in,
	    inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

static int
on_sni(SSL *ssl, int *alert, void *arg)
{
	struct tls_conn *tc = SSL_get_app_data(ssl);
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

	(void)arg;
	if (name == NULL || strcasecmp(name, tc->host) == 0)
		return SSL_TLSEXT_ERR_OK;
	cert_host_shown(name, tc->sni, sizeof(tc->sni));   /* for the log */
	*alert = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

struct tls_server *
tls_server_new(const struct conf *c, char *err, size_t elen)
{
	struct tls_server *ts = calloc(1, sizeof(*ts));
	static const unsigned char sid[] = "sumcache";

	if (ts == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&ts->lock, NULL);
	if ((ts->ca = ca_load(c->tls_ca_cert, c->tls_ca_key, err, elen)) ==
	    NULL || (ts->leaves = leaves_new(ts->ca, TLS_LEAVES_MAX, err,
	    elen)) == NULL)
		goto fail;
	if ((ts->ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(ts->ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_session_id_context(ts->ctx, sid,
	    sizeof(sid) - 1) != 1) {
		snprintf(err, elen, "cannot set up TLS");
		goto fail;
	}
	SSL_CTX_set_options(ts->ctx, SSL_OP_NO_COMPRESSION |
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_cache_mode(ts->ctx, SSL_SESS_CACHE_SERVER);
	/* TLS 1.3: one ticket, not OpenSSL's two; a client resumes with one */
	SSL_CTX_set_num_tickets(ts->ctx, 1);
	SSL_CTX_set_alpn_select_cb(ts->ctx, on_alpn, NULL);
	SSL_CTX_set_tlsext_servername_callback(ts->ctx, on_sni);
	return ts;
fail:
	tls_server_free(&ts);
	return NULL;
}

void
tls_server_free(struct tls_server **tsp)
{
	struct tls_server *ts = *tsp;

	if (ts == NULL)
		return;
	*tsp = NULL;
	SSL_CTX_free(ts->ctx);
	leaves_free(&ts->leaves);
	ca_free(&ts->ca);
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

/* fail_log's kind for a session that could not be set up (OpenSSL's
 * reasons are below 2^31) */
#define TLS_LOG_SETUP ((uint64_t)1 << 40)

/* slots probed from a key's own */
#define SPLICE_PROBES 8

/* The key of a client address and a host, never 0 (a free slot). */
static uint64_t
splice_key(const char *client, const char *host)
{
	char pair[64 + 1 + 256];
	int n = snprintf(pair, sizeof(pair), "%s %s", client, host);

	for (int i = (int)strlen(client) + 1; i < n; i++)
		pair[i] = (char)tolower((unsigned char)pair[i]);
	uint64_t k = XXH3_64bits(pair, (size_t)n);
	return k != 0 ? k : 1;
}

/* ratelog_due_for under the lock that guards r. */
static bool
due(pthread_mutex_t *lock, struct ratelog_by *r, uint64_t kind,
    uint64_t *skipped)
{
	pthread_mutex_lock(lock);
	bool yes = ratelog_due_for(r, kind, skipped);
	pthread_mutex_unlock(lock);
	return yes;
}

static struct splice *
splice_slot(struct tls_server *ts, uint64_t key, unsigned i)
{
	return &ts->splice[(key + i) % TLS_SPLICE_MAX];
}

static bool
spliced(struct tls_server *ts, uint64_t key, uint64_t now_ms)
{
	for (unsigned i = 0; i < SPLICE_PROBES; i++) {
		const struct splice *sp = splice_slot(ts, key, i);
		if (sp->key == key && sp->until_ms > now_ms)
			return true;
	}
	return false;
}

/* key's own slot, or a free or expired one, or the one of the probed
 * that expires first. */
static void
splice_add(struct tls_server *ts, uint64_t key, uint64_t until_ms,
    uint64_t now_ms)
{
	struct splice *at = NULL;

	for (unsigned i = 0; i < SPLICE_PROBES; i++) {
		struct splice *sp = splice_slot(ts, key, i);
		if (sp->key == key) {
			at = sp;
			break;
		}
		if (at == NULL || (at->until_ms > now_ms && (sp->until_ms <=
		    now_ms || sp->until_ms < at->until_ms)))
			at = sp;
	}
	*at = (struct splice){.key = key, .until_ms = until_ms};
}

bool
tls_server_wants(struct tls_server *ts, const struct conf *c,
    const char *client, const char *host, uint64_t now_ms,
    struct metrics *m)
{
	if (!hostpat_match(&c->tls_intercept, host) ||
	    hostpat_match(&c->tls_no_intercept, host))
		return false;
	pthread_mutex_lock(&ts->lock);
	bool splice = spliced(ts, splice_key(client, host), now_ms);
	pthread_mutex_unlock(&ts->lock);
	if (splice)
		METRIC_INC(m->tls_spliced);
	return !splice;
}

/* A TLS server session of ssl over plain. A handshake record already
 * read (sent right behind the CONNECT, or the first bytes of a peer
 * link) raises no new read event: the filter is told of it. */
static struct bufferevent *
accept_over(struct event_base *base, struct bufferevent *plain, SSL *ssl)
{
	struct bufferevent *bev = bufferevent_openssl_filter_new(base, plain,
	    ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);

	if (bev != NULL && evbuffer_get_length(bufferevent_get_input(plain)) >
	    0)
		bufferevent_trigger(plain, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	return bev;
}

struct bufferevent *
tls_server_wrap(struct tls_server *ts, struct event_base *base,
    struct bufferevent *plain, const char *client, const char *host,
    uint16_t port, struct metrics *m, struct tls_conn **tcp, char *err,
    size_t elen)
{
	struct tls_conn *tc = calloc(1, sizeof(*tc));
	X509 *leaf;
	SSL *ssl = NULL;
	bool made = false;
	struct bufferevent *bev;
	uint64_t skipped;

	if (tc == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	tc->ts = ts;
	tc->m = m;
	snprintf(tc->host, sizeof(tc->host), "%s", host);
	snprintf(tc->client, sizeof(tc->client), "%s", client);
	tc->splice_key = splice_key(client, host);
	snprintf(tc->authority, sizeof(tc->authority),
	    strchr(host, ':') != NULL ? "[%s]:%u" : "%s:%u", host,
	    (unsigned)port);
	pthread_mutex_lock(&ts->lock);
	if ((leaf = leaves_get(ts->leaves, host, err, elen)) != NULL)
		made = (ssl = SSL_new(ts->ctx)) != NULL &&
		    SSL_use_certificate(ssl, leaf) == 1 &&
		    SSL_use_PrivateKey(ssl, leaves_key(ts->leaves)) == 1;
	pthread_mutex_unlock(&ts->lock);
	if (leaf == NULL)
		goto fail;
	if (!made) {
		snprintf(err, elen, "cannot set up TLS for %s", host);
		goto fail;
	}
	SSL_set_app_data(ssl, tc);
	if ((bev = accept_over(base, plain, ssl)) == NULL) {
		ssl = NULL;    /* freed with the filter */
		snprintf(err, elen, "cannot set up TLS for %s", host);
		goto fail;
	}
	METRIC_INC(m->tls_intercepted);
	*tcp = tc;
	return bev;
fail:
	ERR_clear_error();
	SSL_free(ssl);
	free(tc);
	if (due(&ts->lock, &ts->fail_log, TLS_LOG_SETUP, &skipped))
		fprintf(stderr, "sumcache: tls: cannot intercept for client %s: "
		    "%s (%llu more of this kind since its last line)\n",
		    client, err, (unsigned long long)skipped);
	return NULL;
}

/* Whether the OpenSSL error is a client's alert about our certificate. */
static bool
refused_ours(unsigned long e)
{
	switch (ERR_GET_REASON(e)) {
	case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
	case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
	case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
	case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
	case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
		return true;
	}
	return false;
}

/* Whether the client left, without an alert, once it had our certificate
 * (our flight written, its answer awaited): GnuTLS's clients, apt's among
 * them, close so on a certificate they do not trust; so does a client
 * that gave up on the connection. */
static bool
left_after_ours(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	OSSL_HANDSHAKE_STATE st = ssl != NULL ? SSL_get_state(ssl) :
	    TLS_ST_BEFORE;

	/* TLS 1.3: a server whose flight is out waits in OpenSSL's "early
	 * data" state for the client's Finished (early data or not) */
	return st == TLS_ST_EARLY_DATA || st == TLS_ST_SW_FINISHED ||
	    st == TLS_ST_SW_SRVR_DONE;
}

/* OpenSSL's words for error e, or for none. */
static const char *
reason_text(unsigned long e, const char *none)
{
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

	return r != NULL ? r : none;
}

/* A peer link's handshake is over, done or failed. */
static enum tls_event
link_event(struct tls_link *tl, struct metrics *m, struct bufferevent *bev,
    bool done)
{
	unsigned long e, last = 0;
	uint64_t skipped;

	if (done) {
		METRIC_INC(m->link_accepted);
		return TLS_EVENT_DONE;
	}
	METRIC_INC(m->link_refused);
	/* the first with a library says why (tls_conn_event) */
	while ((e = bufferevent_get_openssl_error(bev)) != 0)
		if (last == 0 && ERR_GET_LIB(e) != 0)
			last = e;
	/* anyone may knock with TLS: a line a second of each kind */
	if (due(&tl->lock, &tl->refused_log, ERR_GET_REASON(last),
	    &skipped))
		fprintf(stderr, "sumcache: peer link refused: %s (%llu more "
		    "of this kind since its last line)\n", reason_text(last,
		    "closed in the handshake"), (unsigned long long)skipped);
	return TLS_EVENT_FAILED;
}

/* An intercepted handshake failed with OpenSSL's error e (0: none), for
 * why when given, else OpenSSL's words: a line a second for each kind,
 * naming the client and the host. */
static void
log_failed(struct tls_server *ts, const struct tls_conn *tc,
    unsigned long e, const char *why)
{
	uint64_t skipped;

	if (due(&ts->lock, &ts->fail_log, e != 0 ? ERR_GET_REASON(e) : 0,
	    &skipped))
		fprintf(stderr, "sumcache: tls: handshake with client %s for "
		    "%s failed: %s (%llu more of this kind since its last "
		    "line)\n", tc->client, tc->host, why != NULL ? why :
		    reason_text(e, "closed in the handshake"),
		    (unsigned long long)skipped);
}

bool
tls_conn_handshaken(const struct tls_conn *tc)
{
	return tc->handshaken;
}

enum tls_event
tls_conn_event(const struct conf *c, struct tls_conn *tc,
    struct bufferevent *bev, short what, uint64_t now_ms)
{
	struct tls_server *ts = tc->ts;
	unsigned long e, last = 0;
	bool refused = false;

	if (tc->handshaken)
		return TLS_EVENT_END;
	tc->handshaken = true;      /* counted once */
	if (ts == NULL)
		return link_event(tc->link, tc->m, bev,
		    what & BEV_EVENT_CONNECTED);
	if (what & BEV_EVENT_CONNECTED) {
		METRIC_INC(tc->m->tls_handshake_ok);
		return TLS_EVENT_DONE;
	}
	/* libevent adds SSL_get_error's code after the queue's errors: the
	 * first of them with a library is the one that says why */
	while ((e = bufferevent_get_openssl_error(bev)) != 0) {
		refused = refused || refused_ours(e);
		if (last == 0 && ERR_GET_LIB(e) != 0)
			last = e;
	}
	/* not spliced: a preconnect given up, or a client killed in the
	 * handshake, closes so too, and would splice a host for an hour */
	if (!refused && last == 0 && left_after_ours(bev)) {
		METRIC_INC(tc->m->tls_handshake_closed);
		log_failed(ts, tc, 0, "it closed once it had our certificate");
		return TLS_EVENT_FAILED;
	}
	if (!refused) {
		char why[128];
		METRIC_INC(tc->m->tls_handshake_failed);
		if (tc->sni[0] != '\0')
			snprintf(why, sizeof(why), "its SNI named %s, not the "
			    "CONNECT's host", tc->sni);
		log_failed(ts, tc, last, tc->sni[0] != '\0' ? why : NULL);
		return TLS_EVENT_FAILED;
	}
	METRIC_INC(tc->m->tls_handshake_rejected);
	bool added = false;
	pthread_mutex_lock(&ts->lock);
	if (c->tls_splice_after_reject_ms > 0 &&
	    !spliced(ts, tc->splice_key, now_ms)) {
		splice_add(ts, tc->splice_key, now_ms +
		    c->tls_splice_after_reject_ms, now_ms);
		added = true;
	}
	pthread_mutex_unlock(&ts->lock);
	if (!added) {
		log_failed(ts, tc, last, NULL);
		return TLS_EVENT_FAILED;
	}
	fprintf(stderr, "sumcache: tls: client %s refused our certificate "
	    "for %s (%s): its connections to %s are tunnelled for %u s\n",
	    tc->client, tc->host, reason_text(last, "alert"), tc->host,
	    c->tls_splice_after_reject_ms / 1000);
	return TLS_EVENT_FAILED;
}

const char *
tls_conn_authority(const struct tls_conn *tc)
{
	return tc->ts != NULL ? tc->authority : NULL;
}

bool
tls_conn_is_link(const struct tls_conn *tc)
{
	return tc->ts == NULL;
}

/* ---- peer links ---- */

struct tls_link *
tls_link_new(const struct cluster_id *id, char *err, size_t elen)
{
	struct tls_link *tl = calloc(1, sizeof(*tl));
	X509_STORE *trust;

	if (tl == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&tl->lock, NULL);
	if ((tl->ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(tl->ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_use_certificate(tl->ctx, id->cert) != 1 ||
	    SSL_CTX_use_PrivateKey(tl->ctx, id->key) != 1 ||
	    (trust = X509_STORE_new()) == NULL) {
		cert_ssl_error("cannot set up peer links", err, elen);
		tls_link_free(&tl);
		return NULL;
	}
	/* the cluster CA alone is trusted here, not the system's store */
	SSL_CTX_set_cert_store(tl->ctx, trust);
	if (X509_STORE_add_cert(trust, id->ca) != 1 ||
	    X509_VERIFY_PARAM_set1_host(SSL_CTX_get0_param(tl->ctx),
	    CLUSTER_LINK_NAME, 0) != 1) {
		cert_ssl_error("cannot set up peer links", err, elen);
		tls_link_free(&tl);
		return NULL;
	}
	SSL_CTX_set_verify(tl->ctx, SSL_VERIFY_PEER |
	    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	SSL_CTX_set_options(tl->ctx, SSL_OP_NO_COMPRESSION |
	    SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(tl->ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(tl->ctx, 0);
	return tl;
}

void
tls_link_free(struct tls_link **tlp)
{
	struct tls_link *tl = *tlp;

	if (tl == NULL)
		return;
	*tlp = NULL;
	SSL_CTX_free(tl->ctx);
	pthread_mutex_destroy(&tl->lock);
	free(tl);
}

bool
tls_link_offered(struct evbuffer *in)
{
	unsigned char first;

	/* a TLS handshake record: no request line starts with 0x16 */
	return evbuffer_copyout(in, &first, 1) == 1 &&
	    first == 0x16;
}

struct bufferevent *
tls_link_wrap(struct tls_link *tl, struct event_base *base,
    struct bufferevent *plain, struct metrics *m, struct tls_conn **tcp,
    char *err, size_t elen)
{
	struct tls_conn *tc = calloc(1, sizeof(*tc));
	SSL *ssl = NULL;
	struct bufferevent *bev = NULL;

	/* a filter that fails frees ssl with it */
	if (tc != NULL && (ssl = SSL_new(tl->ctx)) != NULL)
		bev = accept_over(base, plain, ssl);
	if (bev == NULL) {
		free(tc);
		snprintf(err, elen, "cannot set up a peer link");
		return NULL;
	}
	tc->link = tl;
	tc->m = m;
	*tcp = tc;
	return bev;
}

struct evbuffer *
tls_conn_close(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);

	/* the layer's BIO appends to the socket's output, so the alert
	 * follows the last record; the client's own close_notify is not
	 * awaited (RFC 8446 6.1 allows it) */
	if (ssl != NULL && SSL_shutdown(ssl) < 0)
		ERR_clear_error();
	return bufferevent_get_output(bufferevent_get_underlying(bev));
}

void
tls_conn_free(struct tls_conn **tcp)
{
	free(*tcp);
	*tcp = NULL;
}

struct leaves_stats
tls_server_leaves(struct tls_server *ts)
{
	pthread_mutex_lock(&ts->lock);
	struct leaves_stats st = *leaves_stats(ts->leaves);
	pthread_mutex_unlock(&ts->lock);
	return st;
}
