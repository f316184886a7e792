/*
 * Origin fetches: starting one, and its sources.
 *
 * One curl easy handle per fetch, run on the shared multi (curlev.c). A
 * miss is asked first of the peers whose summaries claim it (or the one
 * that said ICP HIT), then, under placement hash, of the key's owner (a
 * normal proxy request: it fetches from the origin if it must, once for
 * the cluster), then of the origin; a peer that cannot serve it before a
 * byte reached the client is a false hit (or a failed owner), and the
 * next source is tried. curl frames the exchange (chunked decoding,
 * Content-Length, connection reuse); the head sent upstream is
 * upstream.c's, and what comes back is fetchrecv.c's.
 *
 * The request body goes upstream with back-pressure: the read callback
 * pauses when the client has not sent more yet, and the client's next
 * bytes resume it.
 *
 * The silence timer (origin_timeout, or peer_timeout for a peer) runs
 * while we wait for the source, never while we are the ones who paused.
 *
 * Ownership: a fetch belongs to its transaction (t->fetch) until its
 * answer is shared (busy.c); then it belongs to nobody, is on
 * s->shared_fetches, and frees itself when it ends.
 */
#include "fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "admit.h"
#include "busy.h"
#include "client.h"
#include "clock.h"
#include "fetch_impl.h"
#include "cluster.h"
#include "icpsock.h"
#include "pass.h"
#include "placement.h"
#include "range.h"
#include "ratelog.h"
#include "deliver.h"
#include "reqbody.h"
#include "sc_assert.h"
#include "stale.h"
#include "txn.h"
#include "upstream.h"
#include "writer.h"

static uint32_t
silence_ms(const struct fetch *f)
{
	return f->peer != NULL ? f->w->node->conf.peer_timeout_ms :
	    f->w->node->conf.origin_timeout_ms;
}

void
fetch_arm_timer(struct fetch *f)
{
	struct timeval tv = tv_ms(silence_ms(f));

	f->heard_ms = mono_ms();
	evtimer_add(f->timer, &tv);
}

/* Re-adding the timer for every header line and body chunk was a tenth
 * of a small miss's work in libevent (perf, issue 37); the time is
 * noted instead, and on_silence re-arms for what is left. */
void
fetch_heard(struct fetch *f)
{
	f->heard_ms = mono_ms();
}

static void
apply_pause(struct fetch *f)
{
	int mask = (f->recv_paused ? CURLPAUSE_RECV : 0) |
	    (f->send_paused ? CURLPAUSE_SEND : 0);

	curl_easy_pause(f->easy, mask);
}

void
fetch_free_shared(struct worker *s)
{
	while (s->shared_fetches != NULL) {
		struct fetch *f = s->shared_fetches;
		fetch_free(&f);
	}
}

size_t
fetch_mem_bound(void)
{
	/* output above the mark plus one chunk and its framing; curl's
	 * buffer and the chunk it holds while paused; an upload's buffer */
	return sizeof(struct fetch) + FETCH_OUT_HIGH + FETCH_CHUNK + 32 +
	    2 * FETCH_CHUNK + FETCH_UPLOAD_BUFFER + FETCH_CURL_OVERHEAD;
}

void
fetch_free(struct fetch **fp)
{
	struct fetch *f = *fp;

	if (f == NULL)
		return;
	SC_ASSERT(f->magic == FETCH_MAGIC);
	*fp = NULL;
	if (f->shared) {
		if (f->prev != NULL)
			f->prev->next = f->next;
		else
			f->w->shared_fetches = f->next;
		if (f->next != NULL)
			f->next->prev = f->prev;
	}
	if (f->running)
		curlev_cancel(f->w->curl, f->easy);
	curlev_easy_done(f->w->curl, &f->easy);
	curl_slist_free_all(f->hdrs);
	curl_slist_free_all(f->connect_to);
	if (f->timer)
		event_free(f->timer);
	if (f->wake)
		event_free(f->wake);
	if (f->headbuf)
		evbuffer_free(f->headbuf);
	http_head_clear(&f->resp);
	/* before the head, its waiters look again; after, only a shutdown
	 * frees a shared fetch still running */
	busy_close(&f->busy, f->shared ? BUSY_FAILED : BUSY_LEADER_GONE, NULL);
	store_obj_unref(&f->shape);
	fetch_drop_copy(f);
	store_body_unref(&f->src.file);
	free(f->stored_head);
	for (size_t i = 0; i < f->ncand; i++)
		peers_put(&f->cand[i]);
	if (f->owner != NULL)
		peers_put(&f->owner);
	icpsock_cancel(&f->icpq);
	f->magic = 0;
	free(f);
}

static void
drop_fetch(struct txn *t)
{
	fetch_free(&t->fetch);
}

const struct txn_part fetch_part = {"fetch", drop_fetch};

static size_t
on_read_body(char *buf, size_t size, size_t n, void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);
	struct txn *t = f->t;
	size_t had = reqbody_waiting(t->body);
	size_t got = reqbody_read(t->body, buf, size * n);

	if (got > 0) {
		if (had > CLIENT_BODY_HIGH &&
		    reqbody_waiting(t->body) <= CLIENT_BODY_HIGH)
			client_body_resume(t->c);
		return got;
	}
	if (reqbody_done(t->body))
		return 0;
	f->send_paused = true;
	return CURL_READFUNC_PAUSE;
}

void
fetch_body_ready(struct fetch *f)
{
	if (f->send_paused) {
		f->send_paused = false;
		apply_pause(f);
	}
}

void
fetch_output_drained(struct fetch *f)
{
	if (f->recv_paused) {
		f->recv_paused = false;
		fetch_arm_timer(f);
		apply_pause(f);
	}
}

/* ---- completion ---- */

static int attempt(struct fetch *f);

/* No next source could be started (ENOMEM): the client is told; a fetch
 * for no client just ends. Either frees f. */
static void
cannot_start(struct fetch *f)
{
	busy_fail(&f->busy, 503, true, "cannot start origin fetch");
	if (f->t->c == NULL)
		txn_clientless_end(f->t, 503, SQ_TCP_MISS);
	else
		deliver_error(f->t, 503, SQ_TCP_MISS, "cannot start origin "
		    "fetch", false);
}

/* Reports how asking f->peer went; PEER_FAILED marks it down. */
static void
peer_outcome(struct fetch *f, enum peer_outcome outcome)
{
	curl_off_t down = 0;
	long req = 0, head = 0;
	double secs = 0;

	curl_easy_getinfo(f->easy, CURLINFO_REQUEST_SIZE, &req);
	curl_easy_getinfo(f->easy, CURLINFO_HEADER_SIZE, &head);
	curl_easy_getinfo(f->easy, CURLINFO_SIZE_DOWNLOAD_T, &down);
	curl_easy_getinfo(f->easy, CURLINFO_TOTAL_TIME, &secs);
	peers_fetch_done(f->w->node->peers, f->peer, outcome, secs * 1000,
	    (uint64_t)req, (uint64_t)head + (uint64_t)down);
}

/* The source's answer is dropped before the client saw any of it:
 * the next source (or the same) is asked. */
static void
ask_again(struct fetch *f)
{
	f->peer_refused = false;
	f->proto_error = NULL;
	http_head_clear(&f->resp);
	f->resp.content_length = -1;
	evbuffer_drain(f->headbuf, evbuffer_get_length(f->headbuf));
	if (attempt(f) < 0)
		cannot_start(f);
}

/* The owner did not answer and is marked down: the key's owner among
 * the nodes left, as every node now places it, is asked instead (it
 * holds the key if it did before the dead one joined). Once: a second
 * dead owner sends the request to the origin rather than spending
 * another timeout. When the owner is now this node, the copy is kept. */
static void
replace_owner(struct fetch *f)
{
	struct txn *t = f->t;

	if (f->owner_replaced)
		return;
	f->owner_replaced = true;
	f->peer = NULL;
	peers_put(&f->owner);
	f->owner = peers_owner(f->w->node->peers, t->url.norm, t->url.len);
	f->owner_asked = false;
	if (f->owner == NULL)
		f->keep_copy = true;
}

/* A peer could not serve the object and the client has seen nothing:
 * ask the next candidate, then the owner, then the origin. An owner
 * that answered with a refusal or a server error is alive; the origin
 * is asked itself. */
static void
next_source(struct fetch *f, enum peer_outcome outcome)
{
	if (f->to == UPSTREAM_OWNER) {
		METRIC_INC(f->w->m.owner_failed);
		if (outcome == PEER_FALSE_HIT)
			outcome = PEER_OWNER;
	}
	peer_outcome(f, outcome);
	if (f->to == UPSTREAM_OWNER && outcome == PEER_FAILED)
		replace_owner(f);
	ask_again(f);
}

/* A range request's object is beyond range_fetch_limit (or of unknown
 * length): the same source is asked for the range itself, and its 206
 * is the client's alone. Costs a second request of the source, once. */
static void
ask_for_range(struct fetch *f)
{
	f->range_too_large = false;
	f->t->range_whole = false;
	METRIC_INC(f->w->m.range_passed);
	busy_close(&f->busy, BUSY_UNSHARED, NULL);
	if (f->to == UPSTREAM_OWNER)
		f->owner_asked = false;
	else if (f->to == UPSTREAM_SIBLING)
		f->next_cand--;
	ask_again(f);
}

/* A peer's end of a link showed a certificate this node refuses (not
 * the cluster CA's, or naming another than CLUSTER_LINK_NAME): nothing
 * was asked of it; counted, and logged a line a second. */
static void
link_refused(struct fetch *f)
{
	struct worker *s = f->w;
	uint64_t skipped;

	METRIC_INC(s->m.link_out_refused);
	if (ratelog_due(&s->link_errlog, &skipped))
		fprintf(stderr, "sumcache: peer %s: its link certificate was "
		    "refused: %s (%llu more since the last line)\n",
		    f->peer_as.name, f->curl_err[0] ? f->curl_err :
		    "no detail", (unsigned long long)skipped);
}

static void
on_done(void *arg, CURLcode rc)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);

	f->running = false;
	evtimer_del(f->timer);
	if (f->range_too_large) {
		ask_for_range(f);
		return;
	}
	if (f->peer != NULL && !f->head_done) {
		if (rc == CURLE_PEER_FAILED_VERIFICATION)
			link_refused(f);
		next_source(f, f->peer_refused ? PEER_FALSE_HIT : PEER_FAILED);
		return;
	}
	if (f->peer != NULL)
		peer_outcome(f, f->to == UPSTREAM_OWNER ? PEER_OWNER : PEER_HIT);
	if (rc == CURLE_OK && f->head_done)
		fetch_finish_ok(f);
	else
		fetch_finish_error(f, rc == CURLE_OK ? CURLE_GOT_NOTHING : rc);
	/* f may be gone: the transaction was finished above */
}

static void
on_silence(evutil_socket_t fd, short what, void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);
	uint64_t quiet = mono_ms() - f->heard_ms;

	(void)fd;
	(void)what;
	if (quiet < silence_ms(f)) {
		struct timeval tv = tv_ms((uint32_t)(silence_ms(f) - quiet));
		evtimer_add(f->timer, &tv);
		return;
	}
	curlev_cancel(f->w->curl, f->easy);
	f->running = false;
	if (f->peer != NULL && !f->head_done) {
		next_source(f, PEER_FAILED);
		return;
	}
	fetch_finish_error(f, CURLE_OPERATION_TIMEDOUT);
}

/* PROTOCOLS.md 4: what may be asked of a sibling at all. An https
 * object only over a peer link (cert/cluster.h): a node without one (no
 * cluster key) goes to the origin, never to a peer in clear. */
static bool
peer_eligible(const struct txn *t, enum fetch_kind kind)
{
	return t->w->node->peers != NULL && kind == FETCH_MISS &&
	    (t->is_get || t->is_head) && t->body == NULL &&
	    !t->reqcc.no_cache && !t->looped && !t->placed &&
	    (!t->url.https || t->w->node->cluster != NULL);
}

/* Whether p may be asked for f's object: an https one only of a
 * sumcache node, the end of a peer link (a Squid has none). */
static bool
askable(const struct fetch *f, const struct peer *p)
{
	return !f->t->url.https || peer_spec(p)->type == PEER_SUMCACHE;
}

/* The next source: a candidate peer, the owner, else the origin. */
static void
next_peer(struct fetch *f)
{
	while (f->next_cand < f->ncand &&
	    !askable(f, f->cand[f->next_cand]))
		f->next_cand++;
	if (f->next_cand < f->ncand) {
		f->peer = f->cand[f->next_cand++];
		f->to = UPSTREAM_SIBLING;
	} else if (f->owner != NULL && !f->owner_asked &&
	    askable(f, f->owner)) {
		f->peer = f->owner;
		f->owner_asked = true;
		f->to = UPSTREAM_OWNER;
	} else {
		f->peer = NULL;
		f->to = UPSTREAM_ORIGIN;
	}
	if (f->peer != NULL)
		peer_spec_copy(f->peer, &f->peer_as);
}

/*
 * e asks peer for url over a peer link: TLS 1.3 to the peer's port, whose
 * certificate must chain to the cluster CA alone (no system store) and
 * name CLUSTER_LINK_NAME, showing ours. curl connects to the peer for
 * that name (CONNECT_TO), so a link is reused as any keep-alive
 * connection, and the request target is the object's absolute URL, as
 * a proxy is asked. 0, or -1 if curl refused an option.
 */
static int
link_to(struct fetch *f, CURL *e, const struct cluster_id *id,
    const struct peer *peer, const char *url)
{
	char target[300];
	struct curl_blob ca = {id->ca_pem, id->ca_pem_len, CURL_BLOB_COPY},
	    cert = {id->cert_pem, id->cert_pem_len, CURL_BLOB_COPY},
	    key = {id->key_pem, id->key_pem_len, CURL_BLOB_COPY};

	snprintf(target, sizeof(target), "%s:443:%s", CLUSTER_LINK_NAME,
	    peer_authority(peer));
	/* curl keeps the list, not a copy: it lives as long as the fetch */
	curl_slist_free_all(f->connect_to);
	if ((f->connect_to = curl_slist_append(NULL, target)) == NULL)
		return -1;
	CURLcode rc = curl_easy_setopt(e, CURLOPT_CONNECT_TO, f->connect_to);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_URL, "https://"
		    CLUSTER_LINK_NAME "/");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_REQUEST_TARGET, url);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_PROXY, "");
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_SSLVERSION,
		    (long)CURL_SSLVERSION_TLSv1_3);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
	return rc == CURLE_OK ? 0 : -1;
}

/* Sets up f->easy for the next source and starts it. */
static int
attempt(struct fetch *f)
{
	struct txn *t = f->t;
	struct worker *s = t->w;
	struct node *n = s->node;

	next_peer(f);
	if (f->busy != NULL)
		busy_asking_peer(f->busy, f->to == UPSTREAM_SIBLING);
	if (f->easy == NULL)
		f->easy = curlev_easy(s->curl);
	else
		curl_easy_reset(f->easy);
	curl_slist_free_all(f->hdrs);
	f->hdrs = upstream_fields(t, f->kind == FETCH_REVALIDATE,
	    f->busy != NULL, f->to);
	if (f->easy == NULL || f->hdrs == NULL)
		return -1;
	CURL *e = f->easy;
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (f->peer != NULL && t->url.https) {
		if (link_to(f, e, n->cluster, f->peer, t->url.norm) < 0)
			return -1;
	} else {
		/* a peer is asked as a proxy; the origin directly, never
		 * through a proxy from the environment */
		curl_easy_setopt(e, CURLOPT_URL, t->url.norm);
		curl_easy_setopt(e, CURLOPT_PROXY, f->peer ?
		    peer_proxy_url(f->peer) : "");
	}
	if (f->peer != NULL && n->peer_source[0] != '\0')
		curl_easy_setopt(e, CURLOPT_INTERFACE, n->peer_source);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	/* an https origin is verified, always: the system's trust, and
	 * tls_upstream_ca's beside it (OpenSSL reads both); a peer link's
	 * end, against the cluster CA alone (link_to) */
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (n->conf.tls_upstream_ca != NULL && f->to == UPSTREAM_ORIGIN) {
		curl_easy_setopt(e, CURLOPT_CAINFO, n->conf.tls_upstream_ca);
		curl_easy_setopt(e, CURLOPT_CAPATH, FETCH_SYSTEM_CA_DIR);
	}
	f->curl_err[0] = '\0';
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, f->curl_err);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(f->peer ?
	    n->conf.peer_connect_timeout_ms : n->conf.connect_timeout_ms));
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)FETCH_CHUNK);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, f->hdrs);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, fetch_on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fetch_on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
	if (t->is_head) {
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	} else if (!t->is_get) {
		/* curl copies the string; a token as long as the request
		 * line allows */
		char *method = strndup(t->req.method, t->req.method_len);
		CURLcode rc = method == NULL ? CURLE_OUT_OF_MEMORY :
		    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
		free(method);
		if (rc != CURLE_OK)
			return -1;
	}
	if (t->body != NULL) {
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read_body);
		curl_easy_setopt(e, CURLOPT_READDATA, f);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(
		    t->req.chunked ? -1 : t->req.content_length));
		/* CUSTOMREQUEST above keeps the method; UPLOAD alone is PUT */
		if (t->is_get) {
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "GET");
		}
	} else if (t->req.content_length == 0 && !t->is_get && !t->is_head) {
		/* keep "Content-Length: 0" on an empty POST or PUT */
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
	}
	f->xfer = (struct curlev_xfer){.done = on_done, .arg = f};
	if (curlev_start(s->curl, e, &f->xfer) < 0)
		return -1;
	f->running = true;
	if (f->peer == NULL)
		METRIC_INC(s->m.origin_requests);
	fetch_arm_timer(f);
	return 0;
}

/* The ICP round is over: the peer that said HIT first, else none. */
static void
on_icp_answer(void *arg, struct peer *hit)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);

	f->icpq = NULL;
	if (hit != NULL) {
		f->cand[f->ncand++] = hit;
		f->by_icp = true;
	}
	if (attempt(f) < 0)
		cannot_start(f);
}

int
fetch_start(struct txn *t, enum fetch_kind kind)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	struct fetch *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	f->magic = FETCH_MAGIC;
	f->w = s;
	f->t = t;
	f->kind = kind;
	f->resp.content_length = -1;
	f->request_time = time(NULL);
	f->timer = evtimer_new(s->base, on_silence, f);
	f->headbuf = evbuffer_new();
	if (f->timer == NULL || f->headbuf == NULL)
		goto fail;
	/* a URL whose last answer could not be stored: the origin at once */
	bool pass = kind == FETCH_MISS && pass_marked(n->pass, t->url.norm,
	    t->url.len, mono_ms());
	if (pass)
		METRIC_INC(s->m.passed);
	if (kind != FETCH_FORWARD && !pass)
		f->busy = busy_open(s, t);
	else
		busy_unclaim(t); /* nobody else's answer: the crowd goes on */
	if (!t->range_whole && range_asked(&t->req))
		METRIC_INC(s->m.range_passed);
	f->keep_copy = true;
	if (!pass && peer_eligible(t, kind)) {
		if (n->conf.placement_hash) {
			f->owner = peers_owner(n->peers, t->url.norm,
			    t->url.len);
			f->keep_copy = f->owner == NULL || admit_keep(n->admit,
			    place_hash(t->url.norm, t->url.len));
		}
		if (n->conf.sharing == SHARING_SUMMARY) {
			f->ncand = peers_candidates(n->peers, t->url.norm,
			    t->url.len, f->owner, f->cand,
			    n->conf.peers_asked);
		} else if (n->conf.sharing == SHARING_ICP && n->icp != NULL &&
		    !t->url.https) {
			/* ICP names http URLs only (request_icp_lookup) */
			/* the answer starts the first source (no query out:
			 * no live peer, so the origin at once) */
			f->icpq = icpsock_ask(n->icp, t->url.norm, t->url.len,
			    on_icp_answer, f);
			if (f->icpq != NULL) {
				SC_ASSERT(t->fetch == NULL);
				t->fetch = f;
				txn_hold(t, &fetch_part);
				return 0;
			}
		}
	}
	if (attempt(f) < 0)
		goto fail;
	/* one fetch a txn: a second would leave the first's body unread */
	SC_ASSERT(t->fetch == NULL);
	t->fetch = f;
	txn_hold(t, &fetch_part);
	const struct http_field *ex = http_field_find(&t->req, "expect");
	if (ex != NULL && t->body != NULL &&
	    http_token_eq(ex->value, ex->vlen, "100-continue"))
		if (writer_interim(t, 100, NULL, 0) != NULL)
			writer_interim_end(t);
	return 0;
fail:
	fetch_free(&f);
	return -1;
}
