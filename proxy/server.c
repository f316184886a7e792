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

#include <event2/buffer.h>
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
#include "sc_assert.h"
#include "sqdigest.h"
#include "txn.h"
#include "status.h"
#include "tiers.h"
#include "tls.h"
#include "tunnel.h"


static void
on_shutdown_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);

	(void)fd;
	(void)what;
	fprintf(stderr, "sumcache: shutdown_timeout passed; closing %s\n",
	    "remaining connections");
	event_base_loopbreak(s->base);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);
	struct node *n = s->node;

	(void)what;
	if (sig == SIGHUP) {
		/* the access log is reopened too: logrotate's postrotate */
		if (!n->draining)
			reload_conf(s);
		return;
	}
	if (n->draining)
		return;
	fprintf(stderr, "sumcache: signal %d: draining\n", (int)sig);
	n->draining = true;
	accept_stop(s);
	struct timeval tv = tv_ms(n->conf.shutdown_timeout_ms);
	evtimer_add(n->shutdown_timer, &tv);
	client_drain_all(s);
	/* nothing open: the drain is over now */
	accept_conn_closed(s);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);

	(void)fd;
	(void)what;
	accesslog_flush(s->node->log);
}

/*
 * Peers know this node by the address it listens on (a peer line, or
 * what peer_dns resolves to) and check that summaries come from it, so
 * when we listen on one address we speak to peers from it too. On a
 * wildcard the kernel's choice is the host's address anyway.
 */
static void
set_peer_source(struct worker *s, const struct sockaddr *sa)
{
	struct node *n = s->node;
	char ip[INET6_ADDRSTRLEN] = "";
	const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET && sin->sin_addr.s_addr != INADDR_ANY)
		evutil_inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
	else if (sa->sa_family == AF_INET6 &&
	    !IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
		evutil_inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
	n->peer_source[0] = '\0';
	if (ip[0] != '\0')
		snprintf(n->peer_source, sizeof(n->peer_source), "host!%s", ip);
}

/* The resolver for CONNECT targets and peer_dns (curl resolves origins
 * itself): dns_nameservers, else the system's configuration. */
static int
dns_init(struct worker *s)
{
	char buf[512], *save;

	if (s->node->conf.dns_nameservers == NULL) {
		s->dns = evdns_base_new(s->base,
		    EVDNS_BASE_INITIALIZE_NAMESERVERS);
		if (s->dns == NULL)  /* no resolv.conf: numbers still work */
			s->dns = evdns_base_new(s->base, 0);
		return s->dns != NULL ? 0 : -1;
	}
	s->dns = evdns_base_new(s->base, 0);
	if (s->dns == NULL)
		return -1;
	snprintf(buf, sizeof(buf), "%s", s->node->conf.dns_nameservers);
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
icp_init(struct worker *s)
{
	struct node *n = s->node;
	const struct conf *c = &n->conf;
	struct sockaddr_storage ss = n->listen_addr;
	int len = n->listen_len;
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
	n->icp = icpsock_new(s->base, n->peers, (struct sockaddr *)&ss,
	    (socklen_t)len, c->icp_timeout_ms, request_icp_lookup, s, err,
	    sizeof(err));
	if (n->icp == NULL) {
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
server_peers_conf(const struct node *s, const struct conf *c)
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
peers_init(struct worker *s)
{
	struct node *n = s->node;
	const struct conf *c = &n->conf;
	char err[512];
	struct peers_conf pc = server_peers_conf(s->node, c);

	n->peers = peers_new(s->base, s->curl, &pc, c->peers, c->n_peers, err,
	    sizeof(err));
	if (n->peers == NULL) {
		fprintf(stderr, "sumcache: %s\n", err);
		return -1;
	}
	if (c->sharing == SHARING_SUMMARY && feed_start(n->tiers, n->peers) < 0)
		return -1;
	if (c->cluster_key != NULL && ((n->cluster = cluster_id_new(
	    c->cluster_key, c->cluster_key_len, c->node_name, err,
	    sizeof(err))) == NULL || (n->link = tls_link_new(n->cluster,
	    &s->m, err, sizeof(err))) == NULL)) {
		fprintf(stderr, "sumcache: peer links: %s\n", err);
		return -1;
	}
	peers_start(n->peers);
	if (icp_init(s) < 0)
		return -1;
	if (c->peer_dns.host[0] != '\0') {
		n->discover = discover_new(s->base, s->dns, n->peers,
		    &c->peer_dns, c->peer_dns_interval_ms);
		if (n->discover == NULL)
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
server_apply_limits(struct node *s, const struct conf *c)
{
	s->limits = (struct http_limits){
		.max_line = c->max_request_line,
		.max_head = c->max_header_size,
		.max_fields = c->max_headers,
	};
	s->worker->m.conn_mem_bound = client_buffers_bound(&s->limits) +
	    fetch_mem_bound();
}

/* Starts the node of s, and s its one worker, from the node's conf. */
static int
start(struct worker *s)
{
	struct node *n = s->node;
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};

	snprintf(n->via, sizeof(n->via), "1.1 %s", n->conf.node_name);
	server_apply_limits(s->node, &n->conf);
	s->m.max_connections = n->max_connections;
	n->listen_len = sizeof(n->listen_addr);
	if (evutil_parse_sockaddr_port(n->conf.http_listen,
	    (struct sockaddr *)&n->listen_addr, &n->listen_len) < 0) {
		fprintf(stderr, "sumcache: http_listen %s: not an address:port\n",
		    n->conf.http_listen);
		return -1;
	}
	set_peer_source(s, (struct sockaddr *)&n->listen_addr);
	s->base = new_base();
	if (s->base == NULL)
		return -1;
	if (dns_init(s) < 0)
		return -1;
	n->store = store_new(n->conf.cache_mem);
	size_t inflight = n->conf.inflight_mem;
	if (inflight == 0)
		inflight = n->conf.max_memory_object_size > 64u << 20 ?
		    n->conf.max_memory_object_size : 64u << 20;
	n->budget = budget_new(s->base, inflight);
	s->busy = busy_table_new();
	n->pass = pass_new();
	s->curl = curlev_new(s->base, (long)n->curl_pool);
	n->log = accesslog_open(n->conf.access_log);
	if (n->log == NULL) {
		fprintf(stderr, "sumcache: access_log %s: %s\n",
		    n->conf.access_log, strerror(errno));
		return -1;
	}
	if (s->dns == NULL || n->store == NULL || s->curl == NULL ||
	    n->budget == NULL || s->busy == NULL || n->pass == NULL ||
	    (n->tiers = tiers_open(s->base, n->store, &n->conf)) == NULL)
		return -1;
	/* before the port opens: whoever sees it open may stop us, and a
	 * SIGTERM must then be a clean exit, not the default's kill */
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		n->signals[i] = evsignal_new(s->base, sigs[i], on_signal, s);
		if (n->signals[i] == NULL || evsignal_add(n->signals[i],
		    NULL) < 0)
			return -1;
	}
	n->client_ops = &request_client_ops;
	/* with a CA, interception's lists may change on a reload */
	if (n->conf.tls_ca_cert != NULL) {
		char err[1024];
		if ((n->tls = tls_server_new(&n->conf, &s->m, err,
		    sizeof(err))) == NULL) {
			fprintf(stderr, "sumcache: %s\n", err);
			return -1;
		}
	}
	if (accept_start(s) < 0)
		return -1;
	n->shutdown_timer = evtimer_new(s->base, on_shutdown_timeout, s);
	n->flush_timer = event_new(s->base, -1, EV_PERSIST, on_flush, s);
	if (n->shutdown_timer == NULL || n->flush_timer == NULL)
		return -1;
	struct timeval tv = tv_ms(250);
	evtimer_add(n->flush_timer, &tv);
	if (n->conf.digest_generation) {
		/* room for cache_mem of 1 KB objects: a digest past its
		 * capacity fills up and Squid refuses one 65 % full */
		uint64_t cap = n->conf.cache_mem / 1024 +
		    n->conf.cache_dir_size / PUB_DISK_OBJECT_BYTES;
		uint32_t entries = cap < 1024 ? 1024 : cap > UINT32_MAX ?
		    UINT32_MAX : (uint32_t)cap;
		n->digest = sqdigest_new(n->tiers, entries,
		    n->conf.digest_rebuild_period_ms);
		if (n->digest == NULL)
			return -1;
	}
	if ((n->conf.sharing != SHARING_NONE || n->conf.placement_hash) &&
	    peers_init(s) < 0)
		return -1;
	/* a window of cache_mem's objects: memory is where a copy kept
	 * for this node's clients is read from */
	if (n->conf.placement_hash && (n->admit = admit_new(
	    n->conf.placement_admit_hits, admit_window(n->conf.cache_mem))) ==
	    NULL)
		return -1;
	/* what the disk kept, once everyone who counts objects listens */
	tiers_start(n->tiers);
	n->status = status_new(&(struct status_src){.base = s->base,
	    .conf = &n->conf, .peers = n->peers, .view = status_view,
	    .arg = s});
	return n->status == NULL ? -1 : 0;
}

int
server_init(struct node *n)
{
	struct worker *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return -1;
	w->magic = WORKER_MAGIC;
	w->node = n;
	n->worker = w;
	return start(w);
}

/* Stops what start started, in the order the objects' events need. */
static void
stop(struct worker *s)
{
	struct node *n = s->node;
	if (s->base != NULL) {
		client_free_all(s);
		tunnel_free_all(s);
		fetch_free_shared(s);
		txn_clientless_free_all(s);
	}
	busy_table_free(&s->busy);
	pass_free(&n->pass);
	/* may run one loop turn, so before anything its events touch */
	discover_free(&n->discover);
	icpsock_free(&n->icp);
	for (size_t i = 0; i < sizeof(n->signals) / sizeof(n->signals[0]); i++)
		if (n->signals[i])
			event_free(n->signals[i]);
	if (n->shutdown_timer)
		event_free(n->shutdown_timer);
	if (n->flush_timer)
		event_free(n->flush_timer);
	status_free(&n->status);
	accept_free(s);
	tls_server_free(&n->tls);
	tls_link_free(&n->link);
	cluster_id_free(&n->cluster);
	/* the store's removals feed the summary, so the summary goes after
	 * the store; transfers of both go before curl's multi; the disk's
	 * last jobs report to the store */
	tiers_close(&n->tiers);
	store_free(&n->store);
	sqdigest_free(&n->digest);
	peers_free(&n->peers);
	admit_free(&n->admit);
	curlev_free(&s->curl);
	budget_free(&n->budget);
	accesslog_close(&n->log);
	if (s->dns)
		evdns_base_free(s->dns, 0);
	if (s->base)
		event_base_free(s->base);
}

void
server_fini(struct node *n)
{
	if (n->worker != NULL) {
		stop(n->worker);
		n->worker->magic = 0;
	}
	free(n->worker);
	n->worker = NULL;
	conf_clear(&n->conf);
}
