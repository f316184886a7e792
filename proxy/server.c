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
#include <pthread.h>
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
#include "crowd.h"
#include "curlev.h"
#include "discover.h"
#include "feed.h"
#include "fetch.h"
#include "icpsock.h"
#include "inbox.h"
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
	event_base_loopbreak(s->base);  /* server_run stops the others */
}

/* ---- the workers together ---- */

/* On w's loop: stop accepting and let its connections finish; the loop
 * ends with the last of them (accept_conn_closed). */
static void
drain_worker(void *arg)
{
	struct worker *w = SC_CAST(struct worker, arg, WORKER_MAGIC);

	accept_stop(w);
	client_drain_all(w);
	/* nothing open: the drain is over now */
	accept_conn_closed(w);
}

/* On home's loop: a worker's loop is over; the home loop ends after
 * every other one (they may still hand it work until then). */
static void
worker_ended(void *arg)
{
	struct worker *w = SC_CAST(struct worker, arg, WORKER_MAGIC);
	struct node *n = w->node;

	SC_ASSERT(n->others_running > 0);
	n->others_running--;
	accept_conn_closed(n->home);
}

static void
break_loop(void *arg)
{
	struct worker *w = SC_CAST(struct worker, arg, WORKER_MAGIC);

	event_base_loopbreak(w->base);
}

/* On a worker's thread, a reload's pause: here until home lets go, so
 * that it changes the configuration between this worker's requests. */
static void
park(void *arg)
{
	struct node *n = arg;

	pthread_mutex_lock(&n->pause.lock);
	n->pause.parked++;
	pthread_cond_broadcast(&n->pause.cv);
	while (!n->pause.go)
		pthread_cond_wait(&n->pause.cv, &n->pause.lock);
	n->pause.parked--;
	pthread_cond_broadcast(&n->pause.cv);
	pthread_mutex_unlock(&n->pause.lock);
}

/* On home's loop: every other worker stops between two of its events
 * (the node's fields are then home's alone), until resume_workers. */
static void
pause_workers(struct node *n)
{
	pthread_mutex_lock(&n->pause.lock);
	n->pause.go = false;
	pthread_mutex_unlock(&n->pause.lock);
	unsigned asked = 0;
	for (unsigned i = 1; i < n->nworkers; i++)
		asked += inbox_post(n->workers[i]->inbox, park, NULL, n) == 0;
	pthread_mutex_lock(&n->pause.lock);
	while (n->pause.parked < asked)
		pthread_cond_wait(&n->pause.cv, &n->pause.lock);
	pthread_mutex_unlock(&n->pause.lock);
}

static void
resume_workers(struct node *n)
{
	pthread_mutex_lock(&n->pause.lock);
	n->pause.go = true;
	pthread_cond_broadcast(&n->pause.cv);
	while (n->pause.parked > 0)
		pthread_cond_wait(&n->pause.cv, &n->pause.lock);
	pthread_mutex_unlock(&n->pause.lock);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct worker *s = SC_CAST(struct worker, arg, WORKER_MAGIC);
	struct node *n = s->node;

	(void)what;
	if (sig == SIGHUP) {
		/* the access log is reopened too: logrotate's postrotate */
		if (!n->draining) {
			pause_workers(n);
			reload_conf(s);
			resume_workers(n);
		}
		return;
	}
	if (n->draining)
		return;
	fprintf(stderr, "sumcache: signal %d: draining\n", (int)sig);
	n->draining = true;
	struct timeval tv = tv_ms(n->conf.shutdown_timeout_ms);
	evtimer_add(n->shutdown_timer, &tv);
	for (unsigned i = 1; i < n->nworkers; i++)
		inbox_post(n->workers[i]->inbox, drain_worker, NULL,
		    n->workers[i]);
	drain_worker(s);
}

/* A worker's thread: its loop, until its drain is over or home stops
 * it. */
static void *
worker_main(void *arg)
{
	struct worker *w = SC_CAST(struct worker, arg, WORKER_MAGIC);

	inbox_bind(w->inbox);
	event_base_dispatch(w->base);
	inbox_post(w->node->home->inbox, worker_ended, NULL, w);
	return NULL;
}

int
server_run(struct node *n)
{
	sigset_t every, old;

	/* the signals are home's (evsignal): the workers block them */
	sigfillset(&every);
	pthread_sigmask(SIG_BLOCK, &every, &old);
	for (unsigned i = 1; i < n->nworkers; i++) {
		struct worker *w = n->workers[i];
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			fprintf(stderr, "sumcache: cannot start worker %u\n",
			    i);
			break;
		}
		w->started = true;
		n->others_running++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	bool all = n->others_running == n->nworkers - 1;
	inbox_bind(n->home->inbox);
	if (all)
		event_base_dispatch(n->home->base);
	/* after shutdown_timeout, or a worker that did not start: the
	 * others stop where they are */
	for (unsigned i = 1; i < n->nworkers; i++) {
		struct worker *w = n->workers[i];
		if (!w->started)
			continue;
		inbox_post(w->inbox, break_loop, NULL, w);
		pthread_join(w->thread, NULL);
		w->started = false;
	}
	return all ? 0 : -1;
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = SC_CAST(struct worker, arg, WORKER_MAGIC);

	(void)fd;
	(void)what;
	accesslog_flush(w->node->log, w->logbuf);
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
	n->icp = icpsock_new(s->base, s->inbox, n->peers,
	    (struct sockaddr *)&ss, (socklen_t)len, c->icp_timeout_ms,
	    request_icp_lookup, s, err, sizeof(err));
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

/* The node's clients' requests so far, every worker's: what auto's
 * threshold weighs the peers' losses against (publisher.h). */
static uint64_t
client_requests(void *arg)
{
	const struct node *n = arg;
	uint64_t sum = 0;

	for (unsigned i = 0; i < n->nworkers; i++)
		sum += metrics_requests(&n->workers[i]->m);
	return sum;
}

static int
peers_init(struct worker *s)
{
	struct node *n = s->node;
	const struct conf *c = &n->conf;
	char err[512];
	struct peers_conf pc = server_peers_conf(s->node, c);

	n->peers = peers_new(s->base, s->curl, s->inbox, &pc, c->peers,
	    c->n_peers, err, sizeof(err));
	if (n->peers == NULL) {
		fprintf(stderr, "sumcache: %s\n", err);
		return -1;
	}
	peers_count_requests(n->peers, client_requests, n);
	if (c->sharing == SHARING_SUMMARY && feed_start(n->tiers, n->peers) < 0)
		return -1;
	if (c->cluster_key != NULL && ((n->cluster = cluster_id_new(
	    c->cluster_key, c->cluster_key_len, c->node_name, err,
	    sizeof(err))) == NULL || (n->link = tls_link_new(n->cluster,
	    err, sizeof(err))) == NULL)) {
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
	/* no other thread touches a loop's events (work for it goes to its
	 * inbox): libevent need not lock the base, even with its threads
	 * on (main.c: the file segments workers share take their locks) */
	if (event_config_set_max_dispatch_interval(cfg, &slice, -1,
	    LOOP_PRIO_BULK) == 0 && event_config_set_flag(cfg,
	    EVENT_BASE_FLAG_NOLOCK) == 0)
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
	s->gauges.conn_mem_bound = client_buffers_bound(&s->limits) +
	    fetch_mem_bound();
}

/* What every worker has: its loop, resolver, libcurl multi handle,
 * busy table, inbox, and access log buffer with its flush timer. The
 * listener comes last, once the node is ready (accept_start). */
static int
worker_start(struct worker *w)
{
	struct node *n = w->node;
	/* the kept origin connections are the node's budget of
	 * descriptors, shared out */
	unsigned pool = n->curl_pool / n->nworkers;

	w->base = new_base();
	if (w->base == NULL || dns_init(w) < 0)
		return -1;
	w->busy = busy_table_new();
	w->curl = curlev_new(w->base, (long)(pool < 4 ? 4 : pool));
	w->inbox = inbox_new(w->base);
	w->logbuf = accesslog_buf_new();
	w->flush_timer = event_new(w->base, -1, EV_PERSIST, on_flush, w);
	if (w->busy == NULL || w->curl == NULL || w->inbox == NULL ||
	    w->logbuf == NULL || w->flush_timer == NULL)
		return -1;
	struct timeval tv = tv_ms(250);
	evtimer_add(w->flush_timer, &tv);
	return 0;
}

/* Starts the node from its conf: its workers' loops, then what the node
 * shares, on the home worker's loop (the signals, the cache's timers and
 * disk, the peers, the status sampler), then the listeners. */
static int
start(struct node *n)
{
	struct worker *s = n->home;
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};

	snprintf(n->via, sizeof(n->via), "1.1 %s", n->conf.node_name);
	server_apply_limits(n, &n->conf);
	n->gauges.max_connections = n->max_connections;
	n->listen_len = sizeof(n->listen_addr);
	if (evutil_parse_sockaddr_port(n->conf.http_listen,
	    (struct sockaddr *)&n->listen_addr, &n->listen_len) < 0) {
		fprintf(stderr, "sumcache: http_listen %s: not an address:port\n",
		    n->conf.http_listen);
		return -1;
	}
	set_peer_source(s, (struct sockaddr *)&n->listen_addr);
	for (unsigned i = 0; i < n->nworkers; i++)
		if (worker_start(n->workers[i]) < 0)
			return -1;
	n->store = store_new(n->conf.cache_mem);
	size_t inflight = n->conf.inflight_mem;
	if (inflight == 0)
		inflight = n->conf.max_memory_object_size > 64u << 20 ?
		    n->conf.max_memory_object_size : 64u << 20;
	n->budget = budget_new(s->base, s->inbox, inflight);
	n->pass = pass_new();
	if (n->nworkers > 1 && (n->crowd = crowd_new()) == NULL)
		return -1;
	n->log = accesslog_open(n->conf.access_log);
	if (n->log == NULL) {
		fprintf(stderr, "sumcache: access_log %s: %s\n",
		    n->conf.access_log, strerror(errno));
		return -1;
	}
	if (n->store == NULL || n->budget == NULL || n->pass == NULL ||
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
		if ((n->tls = tls_server_new(&n->conf, err,
		    sizeof(err))) == NULL) {
			fprintf(stderr, "sumcache: %s\n", err);
			return -1;
		}
	}
	n->shutdown_timer = evtimer_new(s->base, on_shutdown_timeout, s);
	if (n->shutdown_timer == NULL)
		return -1;
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
	if (n->status == NULL)
		return -1;
	for (unsigned i = 0; i < n->nworkers; i++)
		if (accept_start(n->workers[i]) < 0)
			return -1;
	return 0;
}

int
server_init(struct node *n, unsigned nworkers)
{
	pthread_mutex_init(&n->pause.lock, NULL);
	pthread_cond_init(&n->pause.cv, NULL);
	n->workers = calloc(nworkers, sizeof(*n->workers));
	if (n->workers == NULL)
		return -1;
	for (unsigned i = 0; i < nworkers; i++) {
		struct worker *w = calloc(1, sizeof(*w));
		if (w == NULL)
			return -1;
		w->magic = WORKER_MAGIC;
		w->node = n;
		w->id = i;
		atomic_init(&w->oldest_us, UINT64_MAX);
		n->workers[n->nworkers++] = w;
	}
	n->home = n->workers[0];
	return start(n);
}

/* Stops what worker_start and the worker's clients started. */
static void
worker_stop(struct worker *w)
{
	if (w->base != NULL) {
		client_free_all(w);
		tunnel_free_all(w);
		fetch_free_shared(w);
		txn_clientless_free_all(w);
		busy_followers_free(w);
	}
	busy_table_free(&w->busy);
	accept_free(w);
	if (w->flush_timer)
		event_free(w->flush_timer);
	w->flush_timer = NULL;
	if (w->logbuf != NULL)
		accesslog_flush(w->node->log, w->logbuf);
	accesslog_buf_free(&w->logbuf);
}

/* What worker_stop left: the loop and what lives on it to the last (the
 * node's transfers go before curl's multi). */
static void
worker_free_loop(struct worker *w)
{
	curlev_free(&w->curl);
	inbox_free(&w->inbox);
	if (w->dns)
		evdns_base_free(w->dns, 0);
	w->dns = NULL;
	if (w->base)
		event_base_free(w->base);
	w->base = NULL;
}

/* Stops what start started, in the order the objects' events need. */
static void
stop(struct node *n)
{
	for (unsigned i = 0; i < n->nworkers; i++)
		worker_stop(n->workers[i]);
	/* what still holds stored bodies goes before the store: the
	 * crowd's notes not yet run, and the outputs of freed clients
	 * (libevent frees a bufferevent in a turn of its loop); the disk's
	 * jobs report to home alone first, so none reaches a loop after
	 * its inbox was emptied (a discarded job's report runs here) */
	tiers_home_only(n->tiers);
	for (unsigned i = 0; i < n->nworkers; i++) {
		struct worker *w = n->workers[i];
		inbox_discard(w->inbox);
		if (w->base != NULL)
			event_base_loop(w->base, EVLOOP_NONBLOCK);
	}
	crowd_free(&n->crowd);
	pass_free(&n->pass);
	/* may run one loop turn, so before anything its events touch */
	discover_free(&n->discover);
	icpsock_free(&n->icp);
	for (size_t i = 0; i < sizeof(n->signals) / sizeof(n->signals[0]); i++)
		if (n->signals[i])
			event_free(n->signals[i]);
	if (n->shutdown_timer)
		event_free(n->shutdown_timer);
	status_free(&n->status);
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
	budget_free(&n->budget);   /* its timers are on home's loop */
	for (unsigned i = 0; i < n->nworkers; i++)
		worker_free_loop(n->workers[i]);
	accesslog_close(&n->log);
}

void
server_fini(struct node *n)
{
	if (n->workers != NULL)
		stop(n);
	for (unsigned i = 0; i < n->nworkers; i++) {
		n->workers[i]->magic = 0;
		free(n->workers[i]);
	}
	free(n->workers);
	n->workers = NULL;
	n->home = NULL;
	n->nworkers = 0;
	conf_clear(&n->conf);
}
