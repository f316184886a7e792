/*
 * Samples for the status page. Counters are sampled whole (not as rates)
 * so the page can take differences over any span and a sample lost to a
 * busy loop costs resolution, not correctness. The ring holds the last
 * STATUS_SAMPLES; at the default 5 s that is an hour, about 170 KB.
 */
#include "status.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "peers.h"
#include "proxy.h"
#include "ratelog.h"

#define STATUS_SAMPLES 720

/* What a sample holds; the names go to the page with the samples. */
enum field {
	F_LOCAL_HIT, F_REMOTE_HIT, F_MISS, F_ERROR,
	F_PEER_HIT, F_PEER_MISS,
	F_CACHE_BYTES, F_CACHE_OBJECTS, F_EVICTIONS,
	F_MESSAGES,                   /* IPM_NTYPES of them, by type */
	F_BYTES = F_MESSAGES + IPM_NTYPES,
	F_COUNT = F_BYTES + IPM_NTYPES
};

static const char *const field_names[F_MESSAGES] = {
	"local_hit", "remote_hit", "miss", "error", "peer_hit", "peer_miss",
	"cache_bytes", "cache_objects", "evictions",
};

struct sample {
	uint64_t ms;                  /* wall clock, for the time axis */
	uint64_t v[F_COUNT];
};

struct status {
	struct server *srv;
	struct event *timer;
	uint64_t started_ms;
	size_t head, n;               /* ring: next slot, samples held */
	struct sample ring[STATUS_SAMPLES];
};

static uint64_t
wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/* Messages and bytes count both directions: the page charts this
 * node's share of the cluster's traffic, in and out. */
static void
take(const struct server *s, struct sample *out)
{
	const struct store_stats *st = store_stats(s->store);

	memset(out, 0, sizeof(*out));
	out->ms = wall_ms();
	out->v[F_LOCAL_HIT] = s->m.req_local_hit;
	out->v[F_REMOTE_HIT] = s->m.req_remote_hit;
	out->v[F_MISS] = s->m.req_miss;
	out->v[F_ERROR] = s->m.req_error;
	out->v[F_PEER_HIT] = s->m.peer_served_hit;
	out->v[F_PEER_MISS] = s->m.peer_served_miss;
	out->v[F_CACHE_BYTES] = st->bytes;
	out->v[F_CACHE_OBJECTS] = st->objects;
	out->v[F_EVICTIONS] = st->evictions;
	if (s->peers != NULL) {
		uint64_t msgs[2][IPM_NTYPES], bytes[2][IPM_NTYPES];

		peers_traffic(s->peers, msgs, bytes);
		for (int t = 0; t < IPM_NTYPES; t++) {
			out->v[F_MESSAGES + t] = msgs[0][t] + msgs[1][t];
			out->v[F_BYTES + t] = bytes[0][t] + bytes[1][t];
		}
	}
}

static void
on_sample(evutil_socket_t fd, short what, void *arg)
{
	struct status *st = arg;

	(void)fd;
	(void)what;
	take(st->srv, &st->ring[st->head]);
	st->head = (st->head + 1) % STATUS_SAMPLES;
	if (st->n < STATUS_SAMPLES)
		st->n++;
}

struct status *
status_new(struct server *s)
{
	struct status *st = calloc(1, sizeof(*st));
	uint32_t ms = s->conf.status_interval_ms;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	if (st == NULL)
		return NULL;
	st->srv = s;
	st->started_ms = wall_ms();
	st->timer = event_new(s->base, -1, EV_PERSIST, on_sample, st);
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
json_sample(struct evbuffer *out, const struct sample *sm)
{
	evbuffer_add_printf(out, "[%llu", (unsigned long long)sm->ms);
	for (int f = 0; f < F_COUNT; f++)
		evbuffer_add_printf(out, ",%llu",
		    (unsigned long long)sm->v[f]);
	evbuffer_add(out, "]", 1);
}

static void
json_peers(struct evbuffer *out, struct peers *ps)
{
	struct peer *v[PEERS_MAX];
	size_t n = ps ? peers_list(ps, v, PEERS_MAX) : 0;
	uint64_t now = mono_ms();

	evbuffer_add_printf(out, "\"peers\":[");
	for (size_t i = 0; i < n; i++) {
		const struct peer *p = v[i];
		struct peer_view pv;
		uint64_t msgs = 0, bytes = 0;

		peer_view(p, now, &pv);
		for (int d = 0; d < 2; d++)
			for (int t = 0; t < IPM_NTYPES; t++) {
				msgs += p->msgs[d][t];
				bytes += p->bytes[d][t];
			}
		evbuffer_add_printf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, p->spec.name);
		evbuffer_add_printf(out, ",\"address\":");
		json_str(out, p->spec.host);
		evbuffer_add_printf(out, ",\"port\":%u,\"type\":\"%s\","
		    "\"up\":%s,\"has_summary\":%s,\"epoch\":%llu,"
		    "\"sequence\":%llu,\"entries\":%llu,\"fill\":%.17g,"
		    "\"fpr\":%.17g,\"age_s\":%.3f,\"rtt_s\":%.6f,"
		    "\"remote_hits\":%llu,\"downs\":%llu,\"messages\":%llu,"
		    "\"bytes\":%llu}",
		    p->spec.port, p->spec.type == PEER_SQUID_DIGEST ?
		    "squid-digest" : "sumcache", pv.up ? "true" : "false",
		    pv.has_summary ? "true" : "false",
		    (unsigned long long)pv.epoch, (unsigned long long)pv.seq,
		    (unsigned long long)pv.entries, pv.fill, pv.fpr, pv.age_s,
		    pv.rtt_s, (unsigned long long)p->remote_hits,
		    (unsigned long long)p->downs, (unsigned long long)msgs,
		    (unsigned long long)bytes);
	}
	evbuffer_add(out, "]", 1);
}

void
status_render_json(struct status *st, struct evbuffer *out)
{
	static const char *const sharing[] = {"none", "summary", "icp"};
	const struct server *s = st->srv;
	struct sample now;

	take(s, &now);
	evbuffer_add_printf(out, "{\"node\":");
	json_str(out, s->conf.node_name);
	evbuffer_add_printf(out, ",\"version\":\"%s\",\"listen\":",
	    SUMCACHE_VERSION);
	json_str(out, s->conf.http_listen);
	evbuffer_add_printf(out, ",\"sharing\":\"%s\",\"started_ms\":%llu,"
	    "\"interval_ms\":%u,\"cache_mem\":%zu,\"fields\":[",
	    sharing[s->conf.sharing], (unsigned long long)st->started_ms,
	    s->conf.status_interval_ms, s->conf.cache_mem);
	evbuffer_add_printf(out, "\"time_ms\"");
	for (int f = 0; f < F_MESSAGES; f++)
		evbuffer_add_printf(out, ",\"%s\"", field_names[f]);
	for (int t = 0; t < IPM_NTYPES; t++)
		evbuffer_add_printf(out, ",\"messages_%s\"", ipm_type_name(t));
	for (int t = 0; t < IPM_NTYPES; t++)
		evbuffer_add_printf(out, ",\"bytes_%s\"", ipm_type_name(t));
	evbuffer_add_printf(out, "],\"samples\":[");
	size_t first = (st->head + STATUS_SAMPLES - st->n) % STATUS_SAMPLES;
	for (size_t i = 0; i < st->n; i++) {
		json_sample(out, &st->ring[(first + i) % STATUS_SAMPLES]);
		evbuffer_add(out, ",", 1);
	}
	json_sample(out, &now);
	evbuffer_add(out, "],", 2);
	json_peers(out, s->peers);
	evbuffer_add(out, "}\n", 2);
}
