/*
 * Receiving summaries: the checks a message passes before it changes what
 * we hold of a peer, and the refusals.
 *
 *   - Before a byte of a POSTed body is read: the sender's address must
 *     be a peer's, the declared length at most max_message, one body at a
 *     time per peer at that address, and all bodies arriving together at
 *     most max_held (anyone at a peer's address can send, before the MAC
 *     can be checked).
 *   - Then the MAC (the cluster key), the envelope, and the sender's name:
 *     a configured peer must sign with its peer line's name; a found one
 *     names itself.
 *   - Then the order: (epoch, seq) must be newer than what we hold; a
 *     delta must follow it exactly, and its result must match the sender's
 *     checksum, else we pull the full summary. The held summary changes
 *     only when a message decoded completely.
 *   - Every refusal is counted by reason and logged at most once a second
 *     per reason.
 */
#include "peers_impl.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "ratelog.h"
#include "sc_assert.h"

const char *const reject_names[REJ_NREASONS] = {
#define REJECT_NAME(id, label) label,
	SUMMARY_REJECTS(REJECT_NAME)
#undef REJECT_NAME
};

int
receive_refuse(struct peers *ps, enum reject r, int status, const char *who,
    const char *detail, const char **why)
{
	ps->rejected[r]++;
	*why = reject_names[r];
	uint64_t skipped;
	if (!ratelog_due(&ps->rejlog[r], &skipped))
		return status;
	fprintf(stderr, "sumcache: summary from %s refused: %s%s%s", who,
	    reject_names[r], detail ? ": " : "", detail ? detail : "");
	if (skipped > 0)
		fprintf(stderr, " (and %llu more since the last line)",
		    (unsigned long long)skipped);
	fputc('\n', stderr);
	return status;
}

int
receive_version_refused(struct peers *ps, const char *who,
    const struct wire_summary *w, int status, const char **why)
{
	char detail[WIRE_MAX_SENDER + 128];

	snprintf(detail, sizeof(detail), "%s sends summaries of version %u, "
	    "this node reads version %d (one of them has to be upgraded)",
	    w->sender, (unsigned)w->version, WIRE_VERSION);
	return receive_refuse(ps, REJ_VERSION, status, who, detail, why);
}

void
peers_refused(struct peers *ps, enum reject r, const char *who)
{
	const char *why;

	peers_enter(ps);
	receive_refuse(ps, r, 0, who, NULL, &why);
	peers_leave(ps);
}

/*
 * Applies a decoded summary from p to what we hold. Returns an HTTP
 * status; on anything but 204 the held summary is unchanged.
 */
int
receive_apply(struct peers *ps, struct peer *p, const struct wire_summary *w,
    const char **why)
{
	struct psum *s = p->sum;
	int rc;

	if (w->scheme != ps->conf.publish.scheme)
		return receive_refuse(ps, REJ_PARAMS, 422, p->spec.name,
		    "hash scheme differs from ours", why);
	if (s != NULL && s->loaded && w->full && w->epoch == s->epoch &&
	    w->seq == s->seq && w->checksum == s->checksum) {
		/* the full summary we already hold (it reached us by a pull
		 * and a push at once): changes nothing, so no alarm */
		ps->rejected[REJ_DUPLICATE]++;
		*why = reject_names[REJ_DUPLICATE];
		return 409;
	}
	if (s != NULL && s->loaded && (w->epoch < s->epoch ||
	    (w->epoch == s->epoch && w->seq <= s->seq)))
		return receive_refuse(ps, REJ_OLD, 409, p->spec.name,
		    "not newer than what we hold", why);
	if (w->full && (s == NULL || !s->loaded || w->epoch != s->epoch))
		claim_renew(&p->claims);
	struct sum_msg msg = wire_msg(w);
	/* a timed summary's deadlines are reckoned on the clock lookups
	 * read (peers_asked) */
	rc = psum_take(&p->sum, &msg, mono_ms());
	switch (rc) {
	case 0:
		p->sum_entries = w->entries;
		p->sum_updated_ms = mono_ms();
		return 204;
	case SUM_ERR_GAP:
		exchange_pull(p);
		return receive_refuse(ps, REJ_GAP, 409, p->spec.name, "pulling the "
		    "full summary", why);
	case SUM_ERR_CHECKSUM:
		exchange_pull(p);
		return receive_refuse(ps, REJ_CHECKSUM, 409, p->spec.name, "pulling "
		    "the full summary", why);
	case SUM_ERR_PARAMS:
		return receive_refuse(ps, REJ_PARAMS, 422, p->spec.name, NULL, why);
	case SUM_ERR_NOMEM:
		*why = "out of memory";
		return 503;
	default:
		return receive_refuse(ps, REJ_MALFORMED, 400, p->spec.name,
		    "bad payload", why);
	}
}

static int receive(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, const char **why);

int
peers_receive(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, const char **why)
{
	peers_enter(ps);
	int status = receive(ps, from, in, len, why);
	peers_leave(ps);
	return status;
}

static int
receive(struct peers *ps, const struct sockaddr *from,
    const uint8_t *in, size_t len, const char **why)
{
	struct wire_summary w;
	char who[sizeof(((struct peer_spec *)0)->host)];

	struct peer *p = table_by_addr(ps, from);
	if (p == NULL || ps->conf.keylen == 0)
		return receive_refuse(ps, REJ_NOT_PEER, 403, p == NULL ? "an unknown "
		    "address" : p->spec.host, p == NULL ? NULL : "no cluster "
		    "key: only Squid peers here", why);
	snprintf(who, sizeof(who), "%s", p->spec.host);
	switch (wire_decode(in, len, ps->key, ps->conf.keylen, &w)) {
	case WIRE_OK:
		break;
	case WIRE_TOO_BIG:
		return receive_refuse(ps, REJ_TOO_BIG, 413, who, NULL, why);
	case WIRE_BAD_MAC:
		return receive_refuse(ps, REJ_BAD_MAC, 403, who, NULL, why);
	case WIRE_NOMEM:
		*why = "out of memory";
		return 503;
	case WIRE_VERSION_DIFFERS:
		return receive_version_refused(ps, who, &w, 426, why);
	default:
		return receive_refuse(ps, REJ_MALFORMED, 400, who, NULL, why);
	}
	p = sender_peer(ps, from, w.sender);
	if (p == NULL) {
		wire_summary_clear(&w);
		return receive_refuse(ps, REJ_NOT_PEER, 403, who, "unknown sender",
		    why);
	}
	peer_count(p, IPM_RECEIVED, w.full ? IPM_SUMMARY_FULL : IPM_SUMMARY_DELTA,
	    len);
	int status = receive_apply(ps, p, &w, why);
	wire_summary_clear(&w);
	if (status == 204)
		peer_mark_up(p);
	return status;
}

static int receive_begin(struct peers *ps, const struct sockaddr *from,
    const char *who, uint64_t len, const char **why);

int
peers_receive_begin(struct peers *ps, const struct sockaddr *from,
    const char *who, uint64_t len, const char **why)
{
	peers_enter(ps);
	int status = receive_begin(ps, from, who, len, why);
	peers_leave(ps);
	return status;
}

static int
receive_begin(struct peers *ps, const struct sockaddr *from,
    const char *who, uint64_t len, const char **why)
{
	struct peer *slot = NULL;

	for (size_t i = 0; i < ps->n && slot == NULL; i++)
		if (same_addr(from, &ps->v[i]->addr) && !ps->v[i]->receiving)
			slot = ps->v[i];
	if (table_by_addr(ps, from) == NULL)
		return receive_refuse(ps, REJ_NOT_PEER, 403, who, NULL, why);
	if (len > ps->conf.max_message)
		return receive_refuse(ps, REJ_TOO_BIG, 413, who, "over summary_max_size",
		    why);
	if (slot == NULL)
		return receive_refuse(ps, REJ_BUSY, 503, who, "one summary from that "
		    "address is still arriving", why);
	if (ps->held + len > ps->conf.max_held)
		return receive_refuse(ps, REJ_NO_ROOM, 503, who, "summaries arriving "
		    "hold the most allowed at once", why);
	slot->receiving = true;
	ps->held += len;
	return 0;
}

void
peers_receive_end(struct peers *ps, const struct sockaddr *from,
    uint64_t len)
{
	/* the slot's peer may have left the table meanwhile: any peer at
	 * the address marked receiving gives its slot back */
	peers_enter(ps);
	for (size_t i = 0; i < ps->n; i++)
		if (same_addr(from, &ps->v[i]->addr) && ps->v[i]->receiving) {
			ps->v[i]->receiving = false;
			break;
		}
	SC_ASSERT(ps->held >= len);
	ps->held -= len;
	peers_leave(ps);
}

void
peers_receive_slow(struct peers *ps, const char *who)
{
	const char *why;

	peers_enter(ps);
	receive_refuse(ps, REJ_SLOW, 0, who, "body not received within "
	    "peer_timeout", &why);
	peers_leave(ps);
}

static int pull_response(struct peers *ps, const struct sockaddr *from,
    struct sum_buf *out);

int
peers_pull_response(struct peers *ps, const struct sockaddr *from,
    struct sum_buf *out)
{
	peers_enter(ps);
	int status = pull_response(ps, from, out);
	peers_leave(ps);
	return status;
}

static int
pull_response(struct peers *ps, const struct sockaddr *from,
    struct sum_buf *out)
{
	struct peer *p = table_by_addr(ps, from);

	/* no cluster key: only Squid peers, which never pull */
	if (p == NULL || ps->conf.keylen == 0) {
		ps->rejected[REJ_NOT_PEER]++;
		return 403;
	}
	struct msg *m = exchange_full_msg(ps);
	if (m == NULL)
		return 503;
	int rc = sum_buf_put(out, m->buf.p, m->buf.len) < 0 ? 503 : 200;
	/* as the puller counts it: a request in, a summary out */
	peer_count(p, IPM_RECEIVED, IPM_SUMMARY_PULL, 0);
	if (rc == 200)
		peer_count(p, IPM_SENT, IPM_SUMMARY_PULL, m->buf.len);
	msg_unref(&m);
	return rc;
}
