/*
 * See server.h.
 *
 * Start-up order follows what each part needs: the listen address (peers
 * are spoken to from it), the loop, the resolver, the store and its
 * budgets, curl's multi, the access log, the listener, signals and
 * timers, the Squid digest, then the peers (their filter is fed by the
 * store) and the status sampler. Shutdown undoes it the other way round,
 * with the two orderings that matter written where they are.
 *
 * Drain (SIGTERM, SIGINT): stop accepting, let every transaction in
 * flight finish (idle connections close at once), and stop the loop when
 * the last connection and tunnel close, or at shutdown_timeout.
 */
#include "server.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <netinet/in.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "accept.h"
#include "admit.h"
#include "budget.h"
#include "busy.h"
#include "pass.h"
#include "client.h"
#include "clock.h"
#include "cluster.h"
#include "curlev.h"
#include "discover.h"
#include "feed.h"
#include "fetch.h"
#include "icpsock.h"
#include "loop.h"
#include "pages.h"
#include "peers.h"
#include "reload.h"
#include "request.h"
#include "sqdigest.h"
#include "stale.h"
#include "status.h"
#include "tiers.h"
#include "tls.h"
#include "tunnel.h"


static void
on_shutdown_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd;
	(void)what;
	fprintf(stderr, "sumcache: shutdown_timeout passed; closing %s\n",
	    "remaining connections");
	event_base_loopbreak(s->base);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct server *s = arg;

	(void)what;
	if (sig == SIGHUP) {
		/* the access log is reopened too: logrotate's postrotate */
		if (!s->draining)
			reload_conf(s);
		return;
	}
	if (s->draining)
		return;
	fprintf(stderr, "sumcache: signal %d: draining\n", (int)sig);
	s->draining = true;
	accept_stop(s);
	struct timeval tv = tv_ms(s->conf.shutdown_timeout_ms);
	evtimer_add(s->shutdown_timer, &tv);
	client_drain_all(s);
	/* nothing open: the drain is over now */
	accept_conn_closed(s);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct server *s = arg;

	(void)fd;
	(void)what;
	accesslog_flush(s->log);
}

/*
 * Peers know this node by the address it listens on (a peer line, or
 * what peer_dns resolves to) and check that summaries come from it, so
 * when we listen on one address we speak to peers from it too. On a
 * wildcard the kernel's choice is the host's address anyway.
 */
static void
set_peer_source(struct server *s, const struct sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN] = "";
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET && sin->sin_addr.s_addr != INADDR_ANY)
		evutil_inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
	else if (sa->sa_family == AF_INET6 &&
	    !IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
		evutil_inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
	s->peer_source[0] = '\0';
	if (ip[0] != '\0')
		snprintf(s->peer_source, sizeof(s->peer_source), "host!%s", ip);
}

/* The resolver for CONNECT targets and peer_dns (curl resolves origins
 * itself): dns_nameservers, else the system's configuration. */
static int
dns_init(struct server *s)
{
	char buf[512], *save;

	if (s->conf.dns_nameservers == NULL) {
		s->dns = evdns_base_new(s->base,
		    EVDNS_BASE_INITIALIZE_NAMESERVERS);
		if (s->dns == NULL)  /* no resolv.conf: numbers still work */
			s->dns = evdns_base_new(s->base, 0);
		return s->dns != NULL ? 0 : -1;
	}
	s->dns = evdns_base_new(s->base, 0);
	if (s->dns == NULL)
		return -1;
	snprintf(buf, sizeof(buf), "%s", s->conf.dns_nameservers);
	for (char *tok = strtok_r(buf, " \t,", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t,", &save))
		if (evdns_base_nameserver_ip_add(s->dns, tok) != 0) {
			fprintf(stderr, "sumcache: dns_nameservers: cannot use "
			    "%s\n", tok);
			return -1;
		}
	return 0;
}

/*
 * The ICP socket: icp_listen, or with "auto" and sharing icp or a Squid
 * peer (Squid siblings ask by ICP unless told no-query), port 3130 on
 * http_listen's address (so peers see queries come from where they know
 * us). Off with "none", or "auto" otherwise.
 */
static int
icp_init(struct server *s)
{
	const struct conf *c = &s->conf;
	struct sockaddr_storage ss = s->listen_addr;
	int len = s->listen_len;
	char err[256];
	bool automatic = strcmp(c->icp_listen, "auto") == 0;

	bool squid_peer = false;
	for (size_t i = 0; i < c->n_peers; i++)
		squid_peer |= c->peers[i].type == PEER_SQUID_DIGEST;
	if (strcmp(c->icp_listen, "none") == 0 ||
	    (automatic && c->sharing != SHARING_ICP && !squid_peer))
		return 0;
	if (!automatic && evutil_parse_sockaddr_port(c->icp_listen,
	    (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (automatic) {
		uint16_t port = htons(ICP_PORT);
		if (ss.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&ss)->sin6_port = port;
		else
			((struct sockaddr_in *)&ss)->sin_port = port;
	}
	s->icp = icpsock_new(s->base, s->peers, (struct sockaddr *)&ss,
	    (socklen_t)len, c->icp_timeout_ms, request_icp_lookup, s, err,
	    sizeof(err));
	if (s->icp == NULL) {
		fprintf(stderr, "sumcache: icp_listen %s: %s\n", c->icp_listen,
		    err);
		return -1;
	}
	return 0;
}

struct pub_conf
server_publish_conf(const struct conf *c)
{
	return (struct pub_conf){
		/* claims lapse at the peers by themselves: a lapse costs no
		 * message (summary/publisher.h) */
		.claims = PUB_CLAIMS_TIMED,
		.scheme = c->summary_hash,
		.bits_per_entry = c->summary_bits_per_entry,
		.k = c->summary_hash_functions,
		.threshold = c->summary_threshold > 0 ? c->summary_threshold :
		    pub_threshold_default(c->placement_hash),
		.max_interval_ms = c->summary_max_interval_ms,
		.expected_objects = pub_expected_objects(c->cache_mem,
		    PUB_OBJECT_BYTES) + (c->cache_dir != NULL ?
		    pub_expected_objects(c->cache_dir_size,
		    PUB_DISK_OBJECT_BYTES) : 0),
		.max_bits = WIRE_MAX_BITS,
	};
}

struct peers_conf
server_peers_conf(const struct server *s, const struct conf *c)
{
	/* the largest summary a node like this one sends: its filter grows
	 * to twice the objects it holds, and an object costs 128 bytes at
	 * least (store.c's charge, a disk record's head and key), so
	 * (cache_mem + cache_dir) / 64 entries of bits_per_entry; no filter
	 * is larger than the wire allows */
	uint64_t held = (uint64_t)c->cache_mem + c->cache_dir_size;
	uint64_t max_message = held / 64 * c->summary_bits_per_entry / 8;
	if (max_message > WIRE_MAX_BITS / 8)
		max_message = WIRE_MAX_BITS / 8;
	max_message += 4096;
	if (c->summary_max_size)
		max_message = c->summary_max_size;
	struct peers_conf pc = {
		.node_name = c->node_name,
		.publish = server_publish_conf(c),
		.connect_timeout_ms = c->peer_connect_timeout_ms,
		.timeout_ms = c->peer_timeout_ms,
		.max_message = max_message < 65536 ? 65536 : max_message,
		.max_held = 4 * (max_message < 65536 ? 65536 : max_message),
		.key = c->cluster_key,
		.keylen = c->cluster_key_len,
		.summaries = c->sharing == SHARING_SUMMARY,
		.weight = c->placement_weight,
	};
	snprintf(pc.source, sizeof(pc.source), "%s", s->peer_source);
	return pc;
}

static int
peers_init(struct server *s)
{
	const struct conf *c = &s->conf;
	char err[512];
	struct peers_conf pc = server_peers_conf(s, c);

	s->peers = peers_new(s->base, s->curl, &pc, c->peers, c->n_peers, err,
	    sizeof(err));
	if (s->peers == NULL) {
		fprintf(stderr, "sumcache: %s\n", err);
		return -1;
	}
	if (c->sharing == SHARING_SUMMARY && feed_start(s->tiers, s->peers) < 0)
		return -1;
	if (c->cluster_key != NULL && ((s->cluster = cluster_id_new(
	    c->cluster_key, c->cluster_key_len, c->node_name, err,
	    sizeof(err))) == NULL || (s->link = tls_link_new(s->cluster,
	    &s->m, err, sizeof(err))) == NULL)) {
		fprintf(stderr, "sumcache: peer links: %s\n", err);
		return -1;
	}
	peers_start(s->peers);
	if (icp_init(s) < 0)
		return -1;
	if (c->peer_dns.host[0] != '\0') {
		s->discover = discover_new(s->base, s->dns, s->peers,
		    &c->peer_dns, c->peer_dns_interval_ms);
		if (s->discover == NULL)
			return -1;
	}
	return 0;
}

/* The status page's sampler reads the counters where /metrics does. */
static void
status_view(void *arg, struct metrics_view *v)
{
	pages_metrics_view(arg, v);
}

/* A loop with loop.h's classes of work: bulk transfers run in slices, so
 * the loop looks for more urgent work between them. */
static struct event_base *
new_base(void)
{
	struct event_config *cfg = event_config_new();
	struct timeval slice = tv_ms(LOOP_BULK_SLICE_MS);
	struct event_base *base = NULL;

	if (cfg == NULL)
		return NULL;
	if (event_config_set_max_dispatch_interval(cfg, &slice, -1,
	    LOOP_PRIO_BULK) == 0)
		base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (base != NULL && event_base_priority_init(base, LOOP_PRIOS) < 0)
		event_base_free(base), base = NULL;
	return base;
}

/* The request limits and the memory bound they give one connection, taken
 * from c at start and at every reload (the bound is a gauge, so it is
 * stored, not worked out at each scrape). */
void
server_apply_limits(struct server *s, const struct conf *c)
{
	s->limits = (struct http_limits){
		.max_line = c->max_request_line,
		.max_head = c->max_header_size,
		.max_fields = c->max_headers,
	};
	s->m.conn_mem_bound = client_buffers_bound(&s->limits) +
	    fetch_mem_bound();
}

int
server_init(struct server *s)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};

	snprintf(s->via, sizeof(s->via), "1.1 %s", s->conf.node_name);
	server_apply_limits(s, &s->conf);
	s->listen_len = sizeof(s->listen_addr);
	if (evutil_parse_sockaddr_port(s->conf.http_listen,
	    (struct sockaddr *)&s->listen_addr, &s->listen_len) < 0) {
		fprintf(stderr, "sumcache: http_listen %s: not an address:port\n",
		    s->conf.http_listen);
		return -1;
	}
	set_peer_source(s, (struct sockaddr *)&s->listen_addr);
	s->base = new_base();
	if (s->base == NULL)
		return -1;
	if (dns_init(s) < 0)
		return -1;
	s->store = store_new(s->conf.cache_mem);
	size_t inflight = s->conf.inflight_mem;
	if (inflight == 0)
		inflight = s->conf.max_memory_object_size > 64u << 20 ?
		    s->conf.max_memory_object_size : 64u << 20;
	s->budget = budget_new(s->base, inflight);
	s->busy = busy_table_new();
	s->pass = pass_new();
	s->curl = curlev_new(s->base, (long)s->curl_pool);
	s->log = accesslog_open(s->conf.access_log);
	if (s->log == NULL) {
		fprintf(stderr, "sumcache: access_log %s: %s\n",
		    s->conf.access_log, strerror(errno));
		return -1;
	}
	if (s->dns == NULL || s->store == NULL || s->curl == NULL ||
	    s->budget == NULL || s->busy == NULL || s->pass == NULL ||
	    (s->tiers = tiers_open(s->base, s->store, &s->conf)) == NULL)
		return -1;
	/* before the port opens: whoever sees it open may stop us, and a
	 * SIGTERM must then be a clean exit, not the default's kill */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		s->signals[i] = evsignal_new(s->base, sigs[i], on_signal, s);
		if (s->signals[i] == NULL || evsignal_add(s->signals[i],
		    NULL) < 0)
			return -1;
	}
	s->client_ops = &request_client_ops;
	/* with a CA, interception's lists may change on a reload */
	if (s->conf.tls_ca_cert != NULL) {
		char err[1024];
		if ((s->tls = tls_server_new(&s->conf, &s->m, err,
		    sizeof(err))) == NULL) {
			fprintf(stderr, "sumcache: %s\n", err);
			return -1;
		}
	}
	if (accept_start(s) < 0)
		return -1;
	s->shutdown_timer = evtimer_new(s->base, on_shutdown_timeout, s);
	s->flush_timer = event_new(s->base, -1, EV_PERSIST, on_flush, s);
	if (s->shutdown_timer == NULL || s->flush_timer == NULL)
		return -1;
	struct timeval tv = tv_ms(250);
	evtimer_add(s->flush_timer, &tv);
	if (s->conf.digest_generation) {
		/* room for cache_mem of 1 KB objects: a digest past its
		 * capacity fills up and Squid refuses one 65 % full */
		uint64_t cap = s->conf.cache_mem / 1024 +
		    s->conf.cache_dir_size / PUB_DISK_OBJECT_BYTES;
		uint32_t entries = cap < 1024 ? 1024 : cap > UINT32_MAX ?
		    UINT32_MAX : (uint32_t)cap;
		s->digest = sqdigest_new(s->tiers, entries,
		    s->conf.digest_rebuild_period_ms);
		if (s->digest == NULL)
			return -1;
	}
	if ((s->conf.sharing != SHARING_NONE || s->conf.placement_hash) &&
	    peers_init(s) < 0)
		return -1;
	/* a window of cache_mem's objects: memory is where a copy kept
	 * for this node's clients is read from */
	if (s->conf.placement_hash && (s->admit = admit_new(
	    s->conf.placement_admit_hits, admit_window(s->conf.cache_mem))) ==
	    NULL)
		return -1;
	/* what the disk kept, once everyone who counts objects listens */
	tiers_start(s->tiers);
	s->status = status_new(&(struct status_src){.base = s->base,
	    .conf = &s->conf, .peers = s->peers, .view = status_view,
	    .arg = s});
	return s->status == NULL ? -1 : 0;
}

void
server_fini(struct server *s)
{
	if (s->base != NULL) {
		client_free_all(s);
		tunnel_free_all(s);
		fetch_free_shared(s);
		stale_free_all(s);
	}
	busy_table_free(&s->busy);
	pass_free(&s->pass);
	/* may run one loop turn, so before anything its events touch */
	discover_free(&s->discover);
	icpsock_free(&s->icp);
	for (size_t i = 0; i < sizeof(s->signals) / sizeof(s->signals[0]); i++)
		if (s->signals[i])
			event_free(s->signals[i]);
	if (s->shutdown_timer)
		event_free(s->shutdown_timer);
	if (s->flush_timer)
		event_free(s->flush_timer);
	status_free(&s->status);
	accept_free(s);
	tls_server_free(&s->tls);
	tls_link_free(&s->link);
	cluster_id_free(&s->cluster);
	/* the store's removals feed the summary, so the summary goes after
	 * the store; transfers of both go before curl's multi; the disk's
	 * last jobs report to the store */
	tiers_close(&s->tiers);
	store_free(&s->store);
	sqdigest_free(&s->digest);
	peers_free(&s->peers);
	admit_free(&s->admit);
	curlev_free(&s->curl);
	budget_free(&s->budget);
	accesslog_close(&s->log);
	if (s->dns)
		evdns_base_free(s->dns, 0);
	if (s->base)
		event_base_free(s->base);
	conf_clear(&s->conf);
}
