/*
 * See discover.h.
 */
#include "discover.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "clock.h"
#include "metric.h"
#include "sc_assert.h"

/* addresses taken from one answer; peers_found caps the table anyway */
#define ANSWER_MAX 256

#define DISCOVER_MAGIC 0x04febf48u
struct discover {
	unsigned magic;         /* DISCOVER_MAGIC (SC_CAST) */
	struct event_base *base;
	struct evdns_base *dns;
	struct peers *ps;
	struct peer_spec tmpl;
	struct event *timer;
	struct evdns_getaddrinfo_request *req;  /* in flight, or NULL */
	int last_err;                           /* to log changes only */
	/* home's to write; atomic, as /metrics reads them on any worker */
	_Atomic size_t addresses;               /* in the last answer */
	_Atomic uint64_t ok, failed;
};

static void
on_answer(int err, struct evutil_addrinfo *res, void *arg)
{
	struct discover *d = SC_CAST(struct discover, arg, DISCOVER_MAGIC);
	struct sockaddr_storage addrs[ANSWER_MAX];
	size_t n = 0;

	d->req = NULL;
	if (err == EVUTIL_EAI_CANCEL)
		return;
	if (err != 0) {
		d->failed++;
		if (err != d->last_err)
			fprintf(stderr, "sumcache: peer_dns %s: %s; keeping the "
			    "peers found before\n", d->tmpl.host,
			    evutil_gai_strerror(err));
		d->last_err = err;
		return;
	}
	if (d->last_err != 0)
		fprintf(stderr, "sumcache: peer_dns %s answers again\n",
		    d->tmpl.host);
	d->last_err = 0;
	d->ok++;
	for (struct evutil_addrinfo *ai = res; ai != NULL && n < ANSWER_MAX;
	    ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(addrs[0]))
			continue;
		memset(&addrs[n], 0, sizeof(addrs[n]));
		memcpy(&addrs[n++], ai->ai_addr, ai->ai_addrlen);
	}
	evutil_freeaddrinfo(res);
	d->addresses = n;
	peers_found(d->ps, &d->tmpl, addrs, n);
}

static void
lookup(evutil_socket_t fd, short what, void *arg)
{
	struct discover *d = SC_CAST(struct discover, arg, DISCOVER_MAGIC);
	struct evutil_addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_protocol = IPPROTO_TCP,
	};
	char port[8];

	(void)fd;
	(void)what;
	if (d->req != NULL)
		return;  /* the last one is still out (evdns times it out) */
	snprintf(port, sizeof(port), "%u", d->tmpl.port);
	/* may answer at once (a number, or /etc/hosts), then returns NULL */
	struct evdns_getaddrinfo_request *r = evdns_getaddrinfo(d->dns,
	    d->tmpl.host, port, &hints, on_answer, d);
	if (r != NULL)
		d->req = r;
}

struct discover *
discover_new(struct event_base *base, struct evdns_base *dns,
    struct peers *ps, const struct peer_spec *tmpl, uint32_t every_ms)
{
	struct discover *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->magic = DISCOVER_MAGIC;
	d->base = base;
	d->dns = dns;
	d->ps = ps;
	d->tmpl = *tmpl;
	d->timer = event_new(base, -1, EV_PERSIST, lookup, d);
	if (d->timer == NULL) {
		free(d);
		return NULL;
	}
	struct timeval tv = tv_ms(every_ms);
	event_add(d->timer, &tv);
	lookup(-1, 0, d);
	return d;
}

void
discover_free(struct discover **dp)
{
	struct discover *d = *dp;

	if (d == NULL)
		return;
	*dp = NULL;
	event_free(d->timer);
	if (d->req != NULL) {
		/* evdns reports the cancel from its loop, and frees its own
		 * state only then: one turn, or it leaks and calls back into
		 * freed memory */
		evdns_getaddrinfo_cancel(d->req);
		event_base_loop(d->base, EVLOOP_NONBLOCK);
	}
	d->magic = 0;
	free(d);
}

void
discover_render_metrics(const struct discover *d, struct evbuffer *out)
{
	metric_head(out, PF(DNS_LOOKUPS));
	metric_u64(out, PF(DNS_LOOKUPS), (const char *[]){"ok"}, d->ok);
	metric_u64(out, PF(DNS_LOOKUPS), (const char *[]){"error"}, d->failed);
	metric_single_u64(out, PF(DNS_ADDRESSES), d->addresses);
}
