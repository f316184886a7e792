/*
 * Squid peers (type=squid-digest): a Squid's Cache Digest is its summary.
 * We fetch it as Squid fetches a sibling's: when a lookup first wants it,
 * then at its Expires + 5 min, never sooner than 5 min after the last; a
 * digest refused or missing (a Squid without a cache_dir has none) is
 * asked for again after a minute, doubling to an hour, and the one we
 * held is dropped meanwhile, as Squid drops it.
 */
#include "peers_impl.h"

#include <stdio.h>
#include <time.h>

#include <curl/curl.h>

#include "clock.h"
#include "digest.h"
#include "sc_assert.h"

#define DIGEST_SLACK_MS (5 * 60 * 1000)
#define DIGEST_RETRY_MIN_MS (60 * 1000)
#define DIGEST_RETRY_MAX_MS (60 * 60 * 1000)
/* a later Expires is not believed: a peer's wrong clock must not freeze
 * the digest we hold of it */
#define DIGEST_EXPIRES_MAX_MS (24 * 60 * 60 * 1000)

/*
 * A Squid peer's digest did not come (an HTTP error) or was refused:
 * Squid drops the digest it held then, and so do we, rather than forward
 * on a picture that can no longer be refreshed.
 */
static void
digest_failed(struct peer *p, const char *why)
{
	uint64_t now = mono_ms();

	psum_free(&p->sum);
	p->sum_entries = 0;
	p->digest_retry_ms = p->digest_retry_ms == 0 ? DIGEST_RETRY_MIN_MS :
	    p->digest_retry_ms * 2 > DIGEST_RETRY_MAX_MS ?
	    DIGEST_RETRY_MAX_MS : p->digest_retry_ms * 2;
	p->digest_due_ms = now + p->digest_retry_ms;
	fprintf(stderr, "sumcache: peer %s: no usable digest (%s); asking "
	    "again in %u s\n", p->spec.name, why, p->digest_retry_ms / 1000);
}

/* When a digest that expires at the Expires header of e (if any) is
 * fetched again: 5 min after it expires (a day at the latest), and no
 * sooner than 5 min. */
static uint64_t
digest_refetch_in_ms(CURL *e)
{
	struct curl_header *h;
	int64_t in_ms = 0;

	if (curl_easy_header(e, "Expires", 0, CURLH_HEADER, -1, &h) ==
	    CURLHE_OK) {
		time_t at = curl_getdate(h->value, NULL);
		if (at != -1)
			in_ms = ((int64_t)at - (int64_t)time(NULL)) * 1000;
	}
	if (in_ms > DIGEST_EXPIRES_MAX_MS)
		in_ms = DIGEST_EXPIRES_MAX_MS;
	return in_ms > 0 ? (uint64_t)in_ms + DIGEST_SLACK_MS :
	    DIGEST_SLACK_MS;
}

void
sqpeer_digest_done(void *arg, CURLcode rc)
{
	struct xfer *x = SC_CAST(struct xfer, arg, XFER_MAGIC);
	struct peers *ps = x->ps;
	struct peer *p = x->p;
	long status;
	double secs;
	char detail[160];
	const char *why = NULL;

	if (!pull_ended(x, IPM_SQUID_DIGEST, &status, &secs))
		return;
	if (rc != CURLE_OK && !x->too_big) {
		snprintf(detail, sizeof(detail), "digest: %s",
		    curl_easy_strerror(rc));
		peer_mark_down(p, detail);
		xfer_free(&x);
		return;
	}
	peer_count(p, IPM_RECEIVED, IPM_SQUID_DIGEST, x->resp.len);
	note_rtt(p, secs * 1000);
	peer_mark_up(p);
	struct psum *s = NULL;
	struct digest_info info;
	int prc;
	/* refusals are counted as a summary's; digest_failed logs them */
	if (x->too_big) {
		ps->rejected[REJ_TOO_BIG]++;
		digest_failed(p, "refused: larger than 64 MB");
	} else if (status != 200) {
		snprintf(detail, sizeof(detail), "HTTP %ld", status);
		digest_failed(p, detail);
	} else if ((prc = digest_parse(x->resp.p, x->resp.len, &s, &info,
	    &why)) != 0) {
		/* why says which of Squid's checks failed */
		if (prc == SUM_ERR_MALFORMED)
			ps->rejected[REJ_MALFORMED]++;
		snprintf(detail, sizeof(detail), "refused: %s", why);
		digest_failed(p, detail);
	} else {
		psum_free(&p->sum);
		p->sum = s;
		p->sum_entries = info.count;
		p->sum_updated_ms = mono_ms();
		p->digest_retry_ms = 0;
		p->digest_due_ms = p->sum_updated_ms +
		    digest_refetch_in_ms(x->easy);
	}
	xfer_free(&x);
}
