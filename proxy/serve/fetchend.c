/*
 * How a fetch ends: whole, with its copy stored (or the stored copy a 304
 * refreshed) and every reader answered; or failed, with an error answer
 * before the head, a response cut short after it, or a stale copy where
 * the rules allow one. What arrives before the end is fetchrecv.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/x509_vfy.h>

#include "bodyfd.h"
#include "busy.h"
#include "client.h"
#include "disk.h"
#include "fetch_impl.h"
#include "ratelog.h"
#include "deliver.h"
#include "sc_assert.h"
#include "stale.h"
#include "stored.h"
#include "txn.h"

/* Kinds of failure, each with its own line a second (ratelog_by). */
enum fail_log {
	FAIL_LOG_NONE = 0,      /* common enough to be counted only */
	FAIL_LOG_TLS = 1,       /* | the verify result */
	FAIL_LOG_PROTOCOL = 2,  /* | curl's code */
};

/* Writes cause's line, if its kind's second allows, saying what the
 * client got. */
static void
log_failure(struct worker *s, uint64_t kind, const char *cause,
    const char *answered)
{
	uint64_t skipped;

	if (kind != FAIL_LOG_NONE && ratelog_due_for(&s->origin_errlog, kind,
	    &skipped))
		fprintf(stderr, "sumcache: %s; answered %s (%llu more of this "
		    "kind since its last line)\n", cause, answered,
		    (unsigned long long)skipped);
}

static void
fail_before_head(struct fetch *f, int status, const char *cause,
    uint64_t log_kind)
{
	struct txn *t = f->t;
	struct worker *s = t->w;
	char code[8];

	/* those waiting are answered the same, before the leader's answer
	 * finishes it (its leaving would have them look again); an origin
	 * that answered was not disconnected */
	busy_fail(&f->busy, status, !f->stale_instead, cause);
	if (f->kind == FETCH_REVALIDATE)
		METRIC_INC(s->m.revalidate_failed);
	if (t->c == NULL) {
		log_failure(s, log_kind, cause, "nobody (a revalidation behind "
		    "a stale answer, which stays)");
		txn_clientless_end(t, status, SQ_TCP_REFRESH_FAIL_OLD);
		return;
	}
	/* RFC 9111 4.2.4: a stale copy beats an error when the origin cannot
	 * be reached (or, by stale-if-error, answers 5xx) and the origin did
	 * not forbid it */
	if (f->stale_instead || stale_on_error(t, true)) {
		METRIC_INC(s->m.stale_if_error);
		log_failure(s, log_kind, cause, "with the stale copy "
		    "(stale-if-error)");
		deliver_object(t, t->stale, SQ_TCP_REFRESH_FAIL_OLD);
		return;
	}
	snprintf(code, sizeof(code), "%d", status);
	log_failure(s, log_kind, cause, code);
	deliver_error(t, status, SQ_TCP_MISS, cause, false);
}

/* An https origin's certificate failed verification: counted by why
 * (OpenSSL's verdict; curl checks the name itself, after a chain OpenSSL
 * found good), and said in cause. Its kind of log line. */
static uint64_t
tls_refused(struct fetch *f, char *cause, size_t len)
{
	struct worker *s = f->w;
	long v = X509_V_OK;
	const char *why;

	curl_easy_getinfo(f->easy, CURLINFO_SSL_VERIFYRESULT, &v);
	/* the chain was good; curl's own check of the name refused it */
	if (v == X509_V_OK || v == X509_V_ERR_UNSPECIFIED)
		if (strstr(f->curl_err, "subject name") != NULL ||
		    strstr(f->curl_err, "host name") != NULL)
			v = X509_V_ERR_HOSTNAME_MISMATCH;
	switch (v) {
	case X509_V_ERR_CERT_HAS_EXPIRED:
		METRIC_INC(s->m.tls_refused_expired);
		why = "it has expired";
		break;
	case X509_V_ERR_CERT_NOT_YET_VALID:
		METRIC_INC(s->m.tls_refused_not_yet_valid);
		why = "it is not valid yet";
		break;
	case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
	case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
		METRIC_INC(s->m.tls_refused_self_signed);
		why = "it is self-signed";
		break;
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
	case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
		METRIC_INC(s->m.tls_refused_unknown_ca);
		why = "no CA this node trusts signed it";
		break;
	case X509_V_ERR_HOSTNAME_MISMATCH:
	case X509_V_ERR_IP_ADDRESS_MISMATCH:
		METRIC_INC(s->m.tls_refused_wrong_host);
		why = "it names another host";
		break;
	default:
		METRIC_INC(s->m.tls_refused_other);
		why = X509_verify_cert_error_string(v);
		break;
	}
	snprintf(cause, len, "the origin's certificate was refused: %s (%s; "
	    "%s)", why, f->curl_err[0] ? f->curl_err : "no detail",
	    f->t->url.norm);
	return (uint64_t)FAIL_LOG_TLS << 32 | (uint32_t)v;
}

/* A source broke off (or fell silent) after the head: counted by which. */
static void
cut_mid_body(struct worker *s, bool quiet)
{
	if (quiet)
		METRIC_INC(s->m.origin_timeout);
	else
		METRIC_INC(s->m.origin_protocol);
}

void
fetch_finish_error(struct fetch *f, CURLcode rc)
{
	struct txn *t = f->t;
	struct worker *s = f->w;
	char cause[512];
	/* a silence, not a break: logged as such (never as a client that
	 * left) */
	bool quiet = rc == CURLE_OPERATION_TIMEDOUT;

	if (f->shared) {
		/* mid-body: every reader sees a truncated message */
		cut_mid_body(s, quiet);
		busy_close(&f->busy, quiet ? BUSY_TIMED_OUT : BUSY_FAILED, NULL);
		fetch_free(&f);
		return;
	}
	if (f->stale_instead) {
		snprintf(cause, sizeof(cause), "origin answered %d (%s)",
		    f->resp.status, t->url.norm);
		fail_before_head(f, f->resp.status, cause, FAIL_LOG_NONE);
		return;
	}
	if (f->client_done && t->c != NULL) {
		/* stopped on purpose: the client has its answer */
		client_txn_done(t->c);
		return;
	}
	if (f->head_done && t->c == NULL) {
		/* behind a stale answer: dropped at its head, or cut */
		txn_clientless_end(t, f->resp.status, t->code);
		return;
	}
	if (f->head_done) {
		/* mid-body: the client must see a truncated message */
		cut_mid_body(s, quiet);
		client_fail(t->c, quiet ? CUT_TIMEDOUT : CUT_ABORTED);
		return;
	}
	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION: {
		uint64_t kind = tls_refused(f, cause, sizeof(cause));
		fail_before_head(f, 502, cause, kind);
		return;
	}
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SSL_CONNECT_ERROR:
		METRIC_INC(s->m.origin_unreachable);
		snprintf(cause, sizeof(cause), "origin unreachable: %s (%s)",
		    curl_easy_strerror(rc), t->url.norm);
		fail_before_head(f, 502, cause, FAIL_LOG_NONE);
		return;
	case CURLE_OPERATION_TIMEDOUT:
		METRIC_INC(s->m.origin_timeout);
		snprintf(cause, sizeof(cause), "origin timed out (%s)",
		    t->url.norm);
		fail_before_head(f, 504, cause, FAIL_LOG_NONE);
		return;
	default:
		METRIC_INC(s->m.origin_protocol);
		snprintf(cause, sizeof(cause), "bad response from origin: %s "
		    "(%s)", f->proto_error ? f->proto_error :
		    curl_easy_strerror(rc), t->url.norm);
		fail_before_head(f, 502, cause, (uint64_t)FAIL_LOG_PROTOCOL <<
		    32 | (uint32_t)rc);
		return;
	}
}

/* Stores a body kept whole: large ones go to a memfd for sendfile; the
 * rest, or a large one when no memfd can be had, stay on the heap. */
static void
freeze_body(struct fetch *f)
{
	busy_unshare(f->busy);
	if (f->body->len < BODYFD_MIN ||
	    !bodyfd_convert(&f->body, f->w->node->body_fd_ceiling))
		store_body_shrink(&f->body);
}

/* RFC 9111 4.3.5: a 200 to HEAD stands for the GET it mirrors. Agreeing
 * with the stored copy, it refreshes the copy as a 304 would; otherwise
 * the copy is out of date and leaves the store. */
static void
head_updates_stored(struct fetch *f)
{
	struct txn *t = f->t;
	struct worker *s = f->w;

	if (!stored_head_agrees(t->stale, &f->resp)) {
		tiers_invalidate(s->node->tiers, t->url.norm,
		    t->url.len);
		return;
	}
	struct store_obj *o = stored_refresh(t, &f->resp, f->request_time);
	if (o != NULL)
		tiers_store(s->node->tiers, o);
	store_obj_unref(&o);
}

/* A shared fetch to the disk cannot go on (the disk failed it): its
 * readers see their bodies cut, and the transfer stops (fetch_free). */
static void
disk_failed(struct fetch *f)
{
	fetch_finish_error(f, CURLE_WRITE_ERROR);
}

/* The whole body is on the disk: the record is committed, and the
 * readers get the rest from its file (the disk's sender). */
static void
finish_on_disk(struct fetch *f)
{
	disk_stream_end(&f->stream);
	busy_close(&f->busy, BUSY_DONE, NULL);
	fetch_free(&f);
}

void
stream_progress(evutil_socket_t fd, short what, void *arg)
{
	struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);

	(void)fd;
	(void)what;
	if (f->stream_failed) {
		disk_failed(f);
		return;
	}
	f->src.have = f->stream_readable;
	busy_body(f->busy);
	if (f->finishing) {
		if (f->src.have == (uint64_t)f->src.length)
			finish_on_disk(f);
		return;
	}
	/* readers wait at the end of what is down: the partial piece goes
	 * now (a few at a time: those in flight say when they are down) */
	if (busy_waiting(f->busy) && disk_stream_flush(f->stream, false) < 0)
		disk_failed(f);
}

/* A shared fetch is complete: the object is stored and its readers get
 * the rest of it from there (a tee's from its window, one on its way to
 * the disk from the file once the last of it is down). The fetch was
 * nobody's: it frees itself. */
static void
finish_shared(struct fetch *f)
{
	struct worker *s = f->w;
	struct store_obj *o = NULL;

	if (f->kind == FETCH_REVALIDATE)
		METRIC_INC(s->m.revalidated_modified);
	if (f->stream != NULL) {
		f->finishing = true;
		if (disk_stream_flush(f->stream, true) < 0)
			disk_failed(f);
		else if (f->src.have == (uint64_t)f->src.length)
			finish_on_disk(f);
		return;   /* stream_progress ends it */
	}
	if (f->tee) {
		/* readers on other workers read the window to its end, now
		 * known, before it goes: the fetch waits for them (tee_wake);
		 * this worker's get the rest from it at the close */
		f->src.length = (int64_t)f->src.have;
		busy_body(f->busy);
		if (busy_read_elsewhere(f->busy)) {
			f->tee_ending = true;
			return;
		}
		busy_close(&f->busy, BUSY_DONE, NULL);
		fetch_free(&f);
		return;
	}
	if (f->src.length < 0 || f->body->len == (size_t)f->src.length) {
		freeze_body(f);
		o = store_obj_with_body(f->shape, f->body);
	}
	if (o != NULL)
		tiers_store(s->node->tiers, o);
	busy_close(&f->busy, o != NULL ? BUSY_DONE : BUSY_FAILED, o);
	store_obj_unref(&o);
	fetch_free(&f);
}

void
fetch_finish_ok(struct fetch *f)
{
	struct txn *t = f->t;
	struct worker *s = f->w;
	struct node *n = s->node;

	if (f->shared) {
		finish_shared(f);
		return;
	}
	if (f->not_modified) {
		struct store_obj *o = stored_refresh(t, &f->resp,
		    f->request_time);
		METRIC_INC(s->m.revalidated_unmodified);
		if (o != NULL)
			tiers_store(n->tiers, o);
		/* who waited finds the refreshed copy */
		busy_close(&f->busy, BUSY_DONE, NULL);
		if (t->c == NULL) {
			store_obj_unref(&o);
			txn_clientless_end(t, 304,
			    SQ_TCP_REFRESH_UNMODIFIED);
			return;
		}
		if (o != NULL) {
			deliver_object(t, o, SQ_TCP_REFRESH_UNMODIFIED);
			store_obj_unref(&o);
		} else {
			deliver_object(t, t->stale,
			    SQ_TCP_REFRESH_UNMODIFIED);
		}
		return;
	}
	if (f->kind == FETCH_REVALIDATE)
		METRIC_INC(s->m.revalidated_modified);
	if (f->stream != NULL && f->streamed ==
	    (uint64_t)f->resp.content_length) {
		/* on the disk as it came: committed once the last is down */
		disk_stream_end(&f->stream);
		fetch_drop_copy(f);
	} else if (f->body != NULL && (f->resp.content_length < 0 ||
	    (uint64_t)f->resp.content_length == f->body->len)) {
		freeze_body(f);
		struct store_obj *o = stored_object(t, &f->resp,
		    f->stored_head, f->stored_head_len, f->body,
		    f->request_time);
		if (o != NULL)
			tiers_store(n->tiers, o);
		store_obj_unref(&o);
	} else if (f->kind == FETCH_REVALIDATE && f->stream == NULL &&
	    !stale_error_status(f->resp.status)) {
		/* the new response is not storable: the old one is wrong (a
		 * server's error says nothing of it: RFC 9111 4.3.3) */
		tiers_invalidate(n->tiers, t->url.norm, t->url.len);
	} else if (t->is_head && t->stale != NULL && f->resp.status == 200) {
		head_updates_stored(f);
	}
	if (t->c == NULL)
		txn_clientless_end(t, f->resp.status, t->code);
	else
		client_txn_done(t->c);
}
