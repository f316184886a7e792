/*
 * peer_dns: peers found by a name that resolves to every member of the
 * cluster, the way a Kubernetes headless Service lists its pods. The
 * name is looked up at start and then every interval through evdns
 * (never blocking the loop); each answer goes to peers_found. A failed
 * lookup keeps the peers we have: a DNS hiccup must not empty the
 * cluster, and a peer that is really gone fails its probes anyway.
 */
#ifndef DISCOVER_H
#define DISCOVER_H

#include <stdint.h>

#include "peers.h"

struct event_base;
struct evdns_base;
struct evbuffer;
struct discover;

/* tmpl: the peer_dns directive (host is the name to resolve). */
struct discover *discover_new(struct event_base *base, struct evdns_base *dns,
    struct peers *ps, const struct peer_spec *tmpl, uint32_t every_ms);
void discover_free(struct discover **d);

/* sumcache_peer_dns_lookups_total{result} and the count of addresses. */
void discover_render_metrics(const struct discover *d, struct evbuffer *out);

#endif
