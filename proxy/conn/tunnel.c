/*
 * CONNECT tunnels.
 *
 * The client's bufferevent is taken over from the HTTP side; a second
 * bufferevent connects to the target (non-blocking DNS through evdns).
 * Data moves between the two buffers without copying (evbuffer_add_buffer
 * relinks chunks). Each direction stops reading while the other side holds
 * more than TUNNEL_HIGH unsent bytes, so a fast sender and a slow receiver
 * cost at most that much memory per direction.
 *
 * The tunnel ends when either side closes or errs: what the other side has
 * not yet been sent is flushed, then both close. A tunnel with no traffic in
 * either direction for tunnel_idle_timeout closes.
 */
#include "tunnel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>

#include "accept.h"
#include "client.h"
#include "h1.h"
#include "loop.h"
#include "sc_assert.h"

/* per direction; with a read's worth past it, less than a client's bound
 * (client_buffers_bound) for both */
#define TUNNEL_HIGH (64 * 1024)

#define TUNNEL_MAGIC 0x96afcff5u
struct tunnel {
	unsigned magic;         /* TUNNEL_MAGIC (SC_CAST) */
	struct worker *w;
	struct tunnel *prev, *next;
	struct bufferevent *side[2]; /* 0 client, 1 target */
	struct event *timer;
	time_t last_activity;
	bool connected;
	bool closing;
	struct accesslog_entry log;
	char url[300];
	char client[64];
	int status;
};

static void
tunnel_free(struct tunnel *tn)
{
	struct worker *s = tn->w;

	evutil_gettimeofday(&tn->log.end, NULL);
	tn->log.status = tn->status;
	accesslog_write(s->node->log, s->logbuf, &tn->log);
	for (int i = 0; i < 2; i++)
		if (tn->side[i])
			bufferevent_free(tn->side[i]);
	event_free(tn->timer);
	if (tn->prev)
		tn->prev->next = tn->next;
	else
		s->tunnels = tn->next;
	if (tn->next)
		tn->next->prev = tn->prev;
	tn->magic = 0;
	free(tn);
	s->ntunnels--;
	atomic_fetch_sub(&s->node->open_conns, 1);
	accept_conn_closed(s);
}

static bool
flushed(struct tunnel *tn)
{
	for (int i = 0; i < 2; i++)
		if (tn->side[i] &&
		    evbuffer_get_length(bufferevent_get_output(tn->side[i])))
			return false;
	return true;
}

/* Stop reading; close once what is queued has gone out. */
static void
tunnel_close(struct tunnel *tn)
{
	tn->closing = true;
	for (int i = 0; i < 2; i++) {
		if (tn->side[i] == NULL)
			continue;
		bufferevent_disable(tn->side[i], EV_READ);
		bufferevent_setwatermark(tn->side[i], EV_WRITE, 0, 0);
	}
	if (flushed(tn))
		tunnel_free(tn);
}

static int
side_of(struct tunnel *tn, struct bufferevent *bev)
{
	return bev == tn->side[0] ? 0 : 1;
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct tunnel *tn = SC_CAST(struct tunnel, arg, TUNNEL_MAGIC);
	int i = side_of(tn, bev);
	struct bufferevent *other = tn->side[!i];
	struct evbuffer *in = bufferevent_get_input(bev);

	tn->last_activity = time(NULL);
	tn->log.bytes += i == 1 ? evbuffer_get_length(in) : 0;
	evbuffer_add_buffer(bufferevent_get_output(other), in);
	if (evbuffer_get_length(bufferevent_get_output(other)) > TUNNEL_HIGH)
		bufferevent_disable(bev, EV_READ);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct tunnel *tn = SC_CAST(struct tunnel, arg, TUNNEL_MAGIC);
	int i = side_of(tn, bev);

	tn->last_activity = time(NULL);
	if (tn->closing) {
		if (flushed(tn))
			tunnel_free(tn);
		return;
	}
	/* the other side may read again now that this one drained */
	bufferevent_enable(tn->side[!i], EV_READ);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct tunnel *tn = SC_CAST(struct tunnel, arg, TUNNEL_MAGIC);
	int i = side_of(tn, bev);

	if (what & BEV_EVENT_CONNECTED) {
		static const char ok[] =
		    "HTTP/1.1 200 Connection established\r\n\r\n";
		tn->connected = true;
		tn->status = 200;
		/* the connect timeout must not become a read timeout */
		bufferevent_set_timeouts(tn->side[1], NULL, NULL);
		int one = 1;
		setsockopt(bufferevent_getfd(tn->side[1]), IPPROTO_TCP,
		    TCP_NODELAY, &one, sizeof(one));
		tn->log.bytes += sizeof(ok) - 1;
		evbuffer_add(bufferevent_get_output(tn->side[0]), ok,
		    sizeof(ok) - 1);
		/* bytes the client sent early (a TLS hello) go on now */
		on_read(tn->side[0], tn);
		bufferevent_enable(tn->side[0], EV_READ | EV_WRITE);
		bufferevent_enable(tn->side[1], EV_READ | EV_WRITE);
		return;
	}
	if (i == 1 && !tn->connected) {
		int err = bufferevent_socket_get_dns_error(bev);
		bool timeout = (what & BEV_EVENT_TIMEOUT) != 0;
		const char *cause = timeout ? "connect timed out" :
		    err ? evutil_gai_strerror(err) :
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR());
		char body[400];
		int n = snprintf(body, sizeof(body),
		    "sumcache: cannot connect to %s: %s\n", tn->url, cause);
		tn->status = timeout ? 504 : 502;
		struct evbuffer *out = bufferevent_get_output(tn->side[0]);
		h1_status(out, tn->status, NULL, 0);
		evbuffer_add_printf(out, "Content-Type: text/plain\r\n");
		h1_tail(tn->w, NULL, out, &(struct head_tail){.age = -1,
		    .length = n});
		evbuffer_add(out, body, (size_t)n);
		if (timeout)
			METRIC_INC(tn->w->m.origin_timeout);
		else
			METRIC_INC(tn->w->m.origin_unreachable);
		bufferevent_free(tn->side[1]);
		tn->side[1] = NULL;
		tunnel_close(tn);
		return;
	}
	/* EOF or error on one side: the other gets what is queued, then
	 * both close (no half-close across the tunnel) */
	bufferevent_free(tn->side[i]);
	tn->side[i] = NULL;
	tunnel_close(tn);
}

static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel *tn = SC_CAST(struct tunnel, arg, TUNNEL_MAGIC);
	uint32_t ms = tn->w->node->conf.tunnel_idle_timeout_ms;
	time_t idle = time(NULL) - tn->last_activity;

	(void)fd;
	(void)what;
	if (tn->closing || (uint64_t)idle * 1000 >= ms) {
		if (tn->closing)
			tunnel_free(tn);
		else
			tunnel_close(tn);
		return;
	}
	uint64_t left = ms - (uint64_t)idle * 1000;
	struct timeval tv = tv_ms(left);
	evtimer_add(tn->timer, &tv);
}

bool
tunnel_port_allowed(const struct conf *c, uint16_t port)
{
	for (unsigned i = 0; i < c->n_connect_ports; i++)
		if (c->connect_ports[i] == port)
			return true;
	return false;
}

int
tunnel_start(struct txn *t, enum squid_code *code, const char **why)
{
	struct worker *s = t->w;
	struct node *n = s->node;
	struct url u;

	*code = SQ_NONE_NONE;
	if (url_parse_authority(t->req.target, t->req.target_len, &u,
	    why) < 0)
		return 400;
	if (!tunnel_port_allowed(&n->conf, u.port)) {
		METRIC_INC(s->m.tunnel_denied);
		url_clear(&u);
		*code = SQ_TCP_DENIED;
		*why = "CONNECT to this port is not allowed (connect_ports)";
		return 403;
	}
	*why = "out of memory";
	struct tunnel *tn = calloc(1, sizeof(*tn));
	if (tn == NULL) {
		url_clear(&u);
		return 503;
	}
	tn->magic = TUNNEL_MAGIC;
	tn->w = s;
	tn->timer = evtimer_new(s->base, on_idle, tn);
	tn->side[1] = bufferevent_socket_new(s->base, -1,
	    BEV_OPT_CLOSE_ON_FREE);
	if (tn->timer == NULL || tn->side[1] == NULL) {
		if (tn->timer)
			event_free(tn->timer);
		if (tn->side[1])
			bufferevent_free(tn->side[1]);
		free(tn);
		url_clear(&u);
		return 503;
	}
	snprintf(tn->url, sizeof(tn->url), "%s", u.norm);
	snprintf(tn->client, sizeof(tn->client), "%s", t->c->addr);
	tn->log = (struct accesslog_entry){
		.start = t->start, .client = tn->client, .code = SQ_TCP_TUNNEL,
		.method = "CONNECT", .method_len = 7, .url = tn->url,
		.hier = SQ_HIER_DIRECT, .hier_host = "-",
	};
	tn->status = 0;
	char host[256];
	url_host(&u, host, sizeof(host));
	uint16_t port = u.port;
	url_clear(&u);
	tn->side[0] = client_detach(t->c); /* frees t; its slot is tn's */
	s->ntunnels++;
	METRIC_INC(s->m.tunnels);
	tn->next = s->tunnels;
	if (s->tunnels)
		s->tunnels->prev = tn;
	s->tunnels = tn;
	tn->last_activity = time(NULL);
	for (int i = 0; i < 2; i++) {
		bufferevent_setcb(tn->side[i], on_read, on_write, on_event, tn);
		bufferevent_setwatermark(tn->side[i], EV_WRITE, TUNNEL_HIGH / 4,
		    0);
		/* a tunnel's bytes are bulk work (loop.h) */
		(void)bufferevent_priority_set(tn->side[i], LOOP_PRIO_BULK);
	}
	/* the client waits until the target answers */
	bufferevent_disable(tn->side[0], EV_READ);
	struct timeval tv = tv_ms(n->conf.tunnel_idle_timeout_ms);
	evtimer_add(tn->timer, &tv);
	struct timeval cto = tv_ms(n->conf.connect_timeout_ms);
	bufferevent_set_timeouts(tn->side[1], &cto, &cto);
	/* a failure is reported through on_event, now or later */
	bufferevent_socket_connect_hostname(tn->side[1], s->dns, AF_UNSPEC,
	    host, port);
	return 0;
}

void
tunnel_free_all(struct worker *s)
{
	while (s->tunnels != NULL)
		tunnel_free(s->tunnels);
}
