/*
 * Samples for the status page. Counters are sampled whole (not as rates)
 * so the page can take differences over any span and a sample lost to a
 * busy loop costs resolution, not correctness. The ring holds the last
 * STATUS_SAMPLES; at the default 5 s that is an hour, about 290 KB.
 */
#include "status.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "conf.h"
#include "metrics.h"
#include "peers.h"
#include "ratelog.h"
#include "sc_assert.h"

#define STATUS_SAMPLES 720

/* What a sample holds: the rows of METRICS_TABLE with a status name
 * (metrics.h), then inter-proxy messages and bytes by type; the names go
 * to the page with the samples. */
#define F_TABLE_MAX 32
enum {
	F_MESSAGES = F_TABLE_MAX,
	F_BYTES = F_MESSAGES + IPM_NTYPES,
	F_COUNT = F_BYTES + IPM_NTYPES
};

struct sample {
	uint64_t ms;                  /* wall clock, for the time axis */
	uint64_t v[F_COUNT];
};

#define STATUS_MAGIC 0xa27056f7u
struct status {
	unsigned magic;         /* STATUS_MAGIC (SC_CAST) */
	struct status_src src;
	struct event *timer;
	uint64_t started_ms;
	size_t nfields;               /* of METRICS_TABLE, at most F_TABLE_MAX */
	const char *names[F_TABLE_MAX];
	size_t head, n;               /* ring: next slot, samples held */
	struct sample ring[STATUS_SAMPLES];
};

/* Messages and bytes count both directions: the page charts this
 * node's share of the cluster's traffic, in and out. */
static void
take(struct status *st, struct sample *out)
{
	const struct status_src *src = &st->src;
	struct metrics_view v;

	memset(out, 0, sizeof(*out));
	out->ms = wall_ms();
	src->view(src->arg, &v);
	st->nfields = metrics_status_fields(&v, st->names, out->v,
	    F_TABLE_MAX);
	if (src->peers != NULL) {
		uint64_t msgs[2][IPM_NTYPES], bytes[2][IPM_NTYPES];

		peers_traffic(src->peers, msgs, bytes);
		for (int t = 0; t < IPM_NTYPES; t++) {
			out->v[F_MESSAGES + t] = msgs[0][t] + msgs[1][t];
			out->v[F_BYTES + t] = bytes[0][t] + bytes[1][t];
		}
	}
}

static void
on_sample(evutil_socket_t fd, short what, void *arg)
{
	struct status *st = SC_CAST(struct status, arg, STATUS_MAGIC);

	(void)fd;
	(void)what;
	take(st, &st->ring[st->head]);
	st->head = (st->head + 1) % STATUS_SAMPLES;
	if (st->n < STATUS_SAMPLES)
		st->n++;
}

struct status *
status_new(const struct status_src *src)
{
	struct status *st = calloc(1, sizeof(*st));
	struct timeval tv = tv_ms(src->conf->status_interval_ms);

	if (st == NULL)
		return NULL;
	st->magic = STATUS_MAGIC;
	st->src = *src;
	st->started_ms = wall_ms();
	st->timer = event_new(src->base, -1, EV_PERSIST, on_sample, st);
	if (st->timer == NULL || evtimer_add(st->timer, &tv) < 0) {
		status_free(&st);
		return NULL;
	}
	on_sample(-1, 0, st);  /* the page has a starting point at once */
	return st;
}

void
status_free(struct status **pst)
{
	struct status *st = *pst;

	if (st == NULL)
		return;
	if (st->timer)
		event_free(st->timer);
	st->magic = 0;
	free(st);
	*pst = NULL;
}

/* A JSON string: node and peer names come from the config or from a
 * peer's signed messages, and are escaped all the same. */
static void
json_str(struct evbuffer *out, const char *s)
{
	evbuffer_add(out, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			evbuffer_add_printf(out, "\\%c", c);
		else if (c < 0x20)
			evbuffer_add_printf(out, "\\u%04x", c);
		else
			evbuffer_add(out, s, 1);
	}
	evbuffer_add(out, "\"", 1);
}

static void
json_sample(const struct status *st, struct evbuffer *out,
    const struct sample *sm)
{
	evbuffer_add_printf(out, "[%llu", (unsigned long long)sm->ms);
	for (size_t f = 0; f < st->nfields; f++)
		evbuffer_add_printf(out, ",%llu",
		    (unsigned long long)sm->v[f]);
	for (int f = F_MESSAGES; f < F_COUNT; f++)
		evbuffer_add_printf(out, ",%llu",
		    (unsigned long long)sm->v[f]);
	evbuffer_add(out, "]", 1);
}

static void
json_peers(struct evbuffer *out, struct peers *ps)
{
	struct peer_view *views = ps ? malloc(PEERS_MAX * sizeof(*views)) :
	    NULL;
	size_t n = views ? peers_views(ps, mono_ms(), views, PEERS_MAX) : 0;

	evbuffer_add_printf(out, "\"peers\":[");
	for (size_t i = 0; i < n; i++) {
		const struct peer_view pv = views[i];
		const struct peer_spec *sp = &pv.spec;

		evbuffer_add_printf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, sp->name);
		evbuffer_add_printf(out, ",\"address\":");
		json_str(out, sp->host);
		evbuffer_add_printf(out, ",\"port\":%u,\"type\":\"%s\","
		    "\"up\":%s,\"has_summary\":%s,\"epoch\":%llu,"
		    "\"sequence\":%llu,\"entries\":%llu,\"memory\":%llu,"
		    "\"fill\":%.17g,"
		    "\"fpr\":%.17g,\"age_s\":%.3f,\"rtt_s\":%.6f,"
		    "\"remote_hits\":%llu,\"false_hits\":%llu,"
		    "\"false_rate\":%.6f,\"downs\":%llu,\"messages\":%llu,"
		    "\"bytes\":%llu}",
		    sp->port, sp->type == PEER_SQUID_DIGEST ?
		    "squid-digest" : "sumcache", pv.up ? "true" : "false",
		    pv.has_summary ? "true" : "false",
		    (unsigned long long)pv.epoch, (unsigned long long)pv.seq,
		    (unsigned long long)pv.entries,
		    (unsigned long long)pv.memory, pv.fill, pv.fpr, pv.age_s,
		    pv.rtt_s, (unsigned long long)pv.count.remote_hits,
		    (unsigned long long)pv.count.false_hits, pv.false_rate,
		    (unsigned long long)pv.count.downs,
		    (unsigned long long)pv.messages,
		    (unsigned long long)pv.bytes);
	}
	free(views);
	evbuffer_add(out, "]", 1);
}

void
status_render_json(struct status *st, struct evbuffer *out)
{
	static const char *const sharing[] = {"none", "summary", "icp"};
	const struct conf *c = st->src.conf;
	struct sample now;

	take(st, &now);
	evbuffer_add_printf(out, "{\"node\":");
	json_str(out, c->node_name);
	evbuffer_add_printf(out, ",\"version\":\"%s\",\"listen\":",
	    SUMCACHE_VERSION);
	json_str(out, c->http_listen);
	evbuffer_add_printf(out, ",\"sharing\":\"%s\",\"started_ms\":%llu,"
	    "\"interval_ms\":%u,\"cache_mem\":%zu,\"fields\":[",
	    sharing[c->sharing], (unsigned long long)st->started_ms,
	    c->status_interval_ms, c->cache_mem);
	evbuffer_add_printf(out, "\"time_ms\"");
	for (size_t f = 0; f < st->nfields; f++)
		evbuffer_add_printf(out, ",\"%s\"", st->names[f]);
	for (int t = 0; t < IPM_NTYPES; t++)
		evbuffer_add_printf(out, ",\"messages_%s\"", ipm_type_name(t));
	for (int t = 0; t < IPM_NTYPES; t++)
		evbuffer_add_printf(out, ",\"bytes_%s\"", ipm_type_name(t));
	evbuffer_add_printf(out, "],\"samples\":[");
	size_t first = (st->head + STATUS_SAMPLES - st->n) % STATUS_SAMPLES;
	for (size_t i = 0; i < st->n; i++) {
		json_sample(st, out, &st->ring[(first + i) % STATUS_SAMPLES]);
		evbuffer_add(out, ",", 1);
	}
	json_sample(st, out, &now);
	evbuffer_add(out, "],", 2);
	json_peers(out, st->src.peers);
	evbuffer_add(out, "}\n", 2);
}
