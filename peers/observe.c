/*
 * What peers/ shows: the policy line, one peer's view for /metrics and
 * the status page, the traffic totals, and the Prometheus series of the
 * summaries and peers.
 */
#include "peers_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "icp.h"
#include "metric.h"

static const char *const ipm_names[IPM_NTYPES] = {
	"summary_full", "summary_delta", "summary_pull", "icp_query",
	"icp_reply", "peer_request", "peer_response", "squid_digest",
	"invalidation",
};

void
peers_policy_line(const struct pub_conf *c, unsigned peers_asked, char *buf,
    size_t len)
{
	char thr[160];

	if (c->threshold == PUB_THRESHOLD_AUTO)
		snprintf(thr, sizeof(thr), "auto hit_messages=%d loss=%g "
		    "rate_ms=%llu floor=%g ceiling=%g", PUB_AUTO_HIT_MESSAGES,
		    PUB_AUTO_LOSS, (unsigned long long)PUB_AUTO_RATE_MS,
		    PUB_AUTO_FLOOR,
		    PUB_AUTO_CEILING);
	else
		snprintf(thr, sizeof(thr), "%g", c->threshold);
	snprintf(buf, len, "scheme=%s claims=%s timed_slack_ms=%d "
	    "shift_ms=%llu bits_per_entry=%u hash_functions=%u "
	    "threshold=%s max_interval_ms=%llu tick_ms=%llu "
	    "expected_objects=%llu filter_bits=%llu max_bits=%llu "
	    "object_bytes=%d min_objects=%d peers_asked=%d "
	    "claim_skip_run=%d claim_skip_ms=%d..%d "
	    "icp_hit_fresh_s=%d", c->scheme == SUM_SQUID_MD5 ? "squid-md5" : "xxh3",
	    pub_claims_name(c->claims), PUB_TIMED_SLACK_MS,
	    (unsigned long long)CK_SHIFT_MS, c->bits_per_entry, c->k, thr,
	    (unsigned long long)c->max_interval_ms,
	    (unsigned long long)pub_tick_ms(c),
	    (unsigned long long)c->expected_objects,
	    (unsigned long long)cbf_size_for(c->expected_objects,
	    c->bits_per_entry), (unsigned long long)c->max_bits,
	    PUB_OBJECT_BYTES, PUB_MIN_OBJECTS, peers_asked, CLAIM_SKIP_RUN,
	    CLAIM_SKIP_MIN_MS, CLAIM_SKIP_MAX_MS, ICP_HIT_FRESH);
}

const char *
ipm_type_name(enum ipm_type t)
{
	return ipm_names[t];
}

void
peer_view(const struct peer *p, uint64_t now_ms, struct peer_view *v)
{
	const struct psum *s = p->sum && p->sum->loaded ? p->sum : NULL;

	*v = (struct peer_view){
		.spec = p->spec,
		.up = p->up,
		.has_summary = s != NULL,
		.epoch = s ? s->epoch : 0,
		.seq = s ? s->seq : 0,
		.entries = p->sum_entries,
		.checksum = s ? s->checksum >> 11 : 0,
		.fill = s ? psum_fill(s) : 0,
		.fpr = s ? psum_fpr(s) : 0,
		.memory = p->sum ? psum_bytes(p->sum) : 0,
		.age_s = p->sum_updated_ms ?
		    (double)(now_ms - p->sum_updated_ms) / 1000 : -1,
		.rtt_s = p->rtt_ms / 1000,
		.count = p->count,
		.false_rate = p->claims.false_rate,
		.skipped = claim_skipped(&p->claims, now_ms),
	};
	for (int d = 0; d < 2; d++)
		for (int t = 0; t < IPM_NTYPES; t++) {
			v->messages += p->msgs[d][t];
			v->bytes += p->bytes[d][t];
		}
}

size_t
peers_views(struct peers *ps, uint64_t now_ms, struct peer_view *out,
    size_t max)
{
	size_t n = 0;

	peers_enter(ps);
	for (size_t i = 0; i < ps->n && n < max; i++)
		if (!ps->v[i]->self)
			peer_view(ps->v[i], now_ms, &out[n++]);
	peers_leave(ps);
	return n;
}

static void traffic(const struct peers *ps, uint64_t msgs[2][IPM_NTYPES],
    uint64_t bytes[2][IPM_NTYPES]);

void
peers_traffic(struct peers *ps, uint64_t msgs[2][IPM_NTYPES],
    uint64_t bytes[2][IPM_NTYPES])
{
	peers_enter(ps);
	traffic(ps, msgs, bytes);
	peers_leave(ps);
}

static void
traffic(const struct peers *ps, uint64_t msgs[2][IPM_NTYPES],
    uint64_t bytes[2][IPM_NTYPES])
{
	memcpy(msgs, ps->gone_msgs, sizeof(ps->gone_msgs));
	memcpy(bytes, ps->gone_bytes, sizeof(ps->gone_bytes));
	for (size_t i = 0; i < ps->n; i++)
		for (int d = 0; d < 2 && !ps->v[i]->self; d++)
			for (int t = 0; t < IPM_NTYPES; t++) {
				msgs[d][t] += ps->v[i]->msgs[d][t];
				bytes[d][t] += ps->v[i]->bytes[d][t];
			}
}

/* One inter-proxy traffic family (messages or bytes), by peer; peers
 * that left are summed under peer="_left". */
static void
render_traffic(const struct peers *ps, struct evbuffer *out, bool msgs)
{
	const struct metric_family_info *f = msgs ? PF(IPM_MESSAGES) :
	    PF(IPM_BYTES);

	metric_head(out, f);
	for (size_t i = 0; i <= ps->n; i++) {
		const struct peer *p = i < ps->n ? ps->v[i] : NULL;
		if (p != NULL ? p->self : !ps->any_gone)
			continue;
		const uint64_t (*v)[IPM_NTYPES] = p != NULL ?
		    (msgs ? p->msgs : p->bytes) :
		    (msgs ? ps->gone_msgs : ps->gone_bytes);
		for (int d = 0; d < 2; d++)
			for (int t = 0; t < IPM_NTYPES; t++) {
				const char *labels[] = {d ? "received" : "sent",
				    ipm_names[t], p ? p->spec.name : "_left"};
				metric_u64(out, f, labels, v[d][t]);
			}
	}
}

/* A per-peer gauge from each peer's view. */
enum peer_gauge {
	PG_UP, PG_EPOCH, PG_SEQUENCE, PG_FILL, PG_FPR, PG_AGE, PG_ENTRIES,
	PG_MEMORY, PG_CHECKSUM, PG_RTT, PG_CLAIM_FALSE_RATE, PG_CLAIMS_SKIPPED,
	PG_COUNT
};

static double
gauge_value(const struct peer_view *pv, enum peer_gauge g)
{
	switch (g) {
	case PG_UP: return pv->up;
	case PG_EPOCH: return (double)pv->epoch;
	case PG_SEQUENCE: return (double)pv->seq;
	case PG_FILL: return pv->fill;
	case PG_FPR: return pv->fpr;
	case PG_AGE: return pv->age_s;
	case PG_ENTRIES: return (double)pv->entries;
	case PG_MEMORY: return (double)pv->memory;
	case PG_CHECKSUM: return (double)pv->checksum;
	case PG_CLAIM_FALSE_RATE: return pv->false_rate;
	case PG_CLAIMS_SKIPPED: return pv->skipped;
	default: return pv->rtt_s;
	}
}

const struct metric_family_info peer_families[PF_COUNT] = {
	PEER_FAMILIES(METRIC_FAMILY_INFO)
};


/* The rows of PEERS_COUNTERS and PEER_COUNTERS, as data: where each is
 * kept, its family and its label value. */
struct counter_row {
	size_t off;
	const struct metric_family_info *family;
	const char *label;        /* PEERS_COUNTERS' own; NULL: none, or the
	                           * peer's name (PEER_COUNTERS) */
};
static const struct counter_row peers_rows[] = {
#define PEERS_ROW(field, family, label)                                        \
	{offsetof(struct peers_counters, field), PF(family), label},
	PEERS_COUNTERS(PEERS_ROW)
#undef PEERS_ROW
};
static const struct counter_row peer_rows[] = {
#define PEER_ROW(field, family)                                                \
	{offsetof(struct peer_counters, field), PF(family), NULL},
	PEER_COUNTERS(PEER_ROW)
#undef PEER_ROW
};

static uint64_t
counter_at(const void *counters, const struct counter_row *r)
{
	return *(const uint64_t *)((const char *)counters + r->off);
}

void
peerstats_render(const struct peers *ps, struct evbuffer *out)
{
	const struct metric_family_info *prev = NULL;

	for (size_t i = 0; i < sizeof(peers_rows) / sizeof(peers_rows[0]);
	    i++) {
		const struct counter_row *r = &peers_rows[i];
		if (r->family != prev)
			metric_head(out, r->family);
		prev = r->family;
		metric_u64(out, r->family, r->label != NULL ? &r->label : NULL,
		    counter_at(&ps->count, r));
	}
	for (size_t i = 0; i < sizeof(peer_rows) / sizeof(peer_rows[0]); i++) {
		const struct counter_row *r = &peer_rows[i];
		metric_head(out, r->family);
		for (size_t j = 0; j < ps->n; j++)
			if (!ps->v[j]->self)
				metric_u64(out, r->family, (const char *[]){
				    ps->v[j]->spec.name},
				    counter_at(&ps->v[j]->count, r));
	}
}

static void render_metrics(const struct peers *ps, struct evbuffer *out);

void
peers_render_metrics(struct peers *ps, struct evbuffer *out)
{
	peers_enter(ps);
	render_metrics(ps, out);
	peers_leave(ps);
}

static void
render_metrics(const struct peers *ps, struct evbuffer *out)
{
	static const struct metric_family_info *const gauges[PG_COUNT] = {
		PF(PEER_UP), PF(PEER_SUM_EPOCH), PF(PEER_SUM_SEQUENCE),
		PF(PEER_SUM_FILL), PF(PEER_SUM_FPR), PF(PEER_SUM_AGE),
		PF(PEER_SUM_ENTRIES), PF(PEER_SUM_MEMORY), PF(PEER_SUM_CHECKSUM),
		PF(PEER_RTT),
		PF(PEER_CLAIM_FALSE_RATE), PF(PEER_CLAIMS_SKIPPED),
	};
	struct pub_stats st;
	uint64_t now = mono_ms();

	pub_stats(ps->pub, &st);
	metric_head(out, PF(SUM_PUBLICATIONS));
	metric_u64(out, PF(SUM_PUBLICATIONS), (const char *[]){"full"},
	    st.fulls);
	metric_u64(out, PF(SUM_PUBLICATIONS), (const char *[]){"delta"},
	    st.deltas);
	metric_head(out, PF(SUM_REJECTED));
	for (int r = 0; r < REJ_NREASONS; r++)
		metric_u64(out, PF(SUM_REJECTED), &reject_names[r],
		    ps->rejected[r]);
	metric_single_u64(out, PF(SUM_RECEIVING), ps->held);
	metric_single_u64(out, PF(SUM_MAX_SIZE), ps->conf.max_message);
	metric_single_u64(out, PF(SUM_ENTRIES), st.entries);
	metric_single_u64(out, PF(SUM_BITS), st.m);
	metric_single_u64(out, PF(SUM_MEMORY), st.filter_bytes);
	metric_single_u64(out, PF(SUM_EPOCH), st.epoch);
	metric_single_u64(out, PF(SUM_SEQUENCE), st.seq);
	/* the top 53 bits of the checksum, exact as a float */
	metric_single_u64(out, PF(SUM_CHECKSUM), st.checksum >> 11);
	metric_single_u64(out, PF(SUM_PENDING), st.pending);
	metric_single_u64(out, PF(SUM_REBUILDS), st.rebuilds);
	metric_single_u64(out, PF(SUM_EXPIRED), st.expired);
	metric_single_u64(out, PF(SUM_KEYS), st.keys);
	metric_single_u64(out, PF(SUM_TABLE_BYTES), st.table_bytes);
	metric_single_u64(out, PF(SUM_SATURATIONS), st.saturations);
	metric_single_u64(out, PF(SUM_BAD_REMOVES), st.bad_removes);

	render_traffic(ps, out, true);
	render_traffic(ps, out, false);

	for (int g = 0; g < PG_COUNT; g++) {
		metric_head(out, gauges[g]);
		for (size_t i = 0; i < ps->n; i++) {
			struct peer_view pv;
			if (ps->v[i]->self)
				continue;
			peer_view(ps->v[i], now, &pv);
			metric_f64(out, gauges[g], (const char *[]){
			    ps->v[i]->spec.name}, gauge_value(&pv, g));
		}
	}
	peerstats_render(ps, out);
}
