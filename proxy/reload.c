/*
 * Reading the configuration, at start-up and again on SIGHUP, and
 * applying a reload to the running node, as operators expect of Squid's
 * -k reconfigure and nginx's reload: the cache, the connections and the
 * summaries stay.
 *
 * What changes live: peers and peer_dns, allow and connect_ports, the
 * limits and timeouts, the summary's threshold and max interval, the
 * access log's path. What cannot (conf.c's table marks them restart):
 * the listener, the memory and disk laid out at start, the node's name
 * and key and what peers must agree on (sharing, the summary's hash and
 * size); a reload that changes one names it in the log and keeps it.
 *
 * All or nothing: the new configuration must pass what -t checks, and
 * the steps that can fail (a peer host that does not resolve, an access
 * log that cannot be opened) run before anything is changed; a failure
 * leaves the old configuration whole and counts a refused reload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca.h"
#include "discover.h"
#include "disk.h"
#include "icpsock.h"
#include "peers.h"
#include "reload.h"
#include "server.h"

/* What the directives' values are checked against beyond their form. */
static const struct conf_hooks hooks = {.dir_check = disk_check,
    .ca_check = ca_check, .bundle_check = ca_bundle_check};

int
reload_read_conf(struct conf *c, const struct server_conf_src *src,
    const struct conf *running, char *err, size_t elen)
{
	int kept = 0;

	if (conf_read(c, src->file, src->ovr, src->novr, &hooks, err,
	    elen) < 0)
		return -1;
	if (running != NULL &&
	    (kept = conf_keep_restart_only(running, c, err, elen)) < 0)
		return -1;
	if (conf_finish(c, err, elen) < 0) {
		if (src->file != NULL) {
			char why[1024];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, elen, "%s: %s", src->file, why);
		}
		return -1;
	}
	if (conf_load_key(c, err, elen) < 0)
		return -1;
	return kept;
}

static bool
same_peer_dns(const struct conf *a, const struct conf *b)
{
	return strcmp(a->peer_dns.host, b->peer_dns.host) == 0 &&
	    a->peer_dns.port == b->peer_dns.port &&
	    a->peer_dns.proxy_only == b->peer_dns.proxy_only &&
	    a->peer_dns.weight == b->peer_dns.weight &&
	    a->peer_dns_interval_ms == b->peer_dns_interval_ms;
}

/* peer_dns, set, changed or dropped: a new lookup from now on. */
static int
redo_discover(struct worker *s, const struct conf *next)
{
	struct node *n = s->node;
	discover_free(&n->discover);
	if (next->peer_dns.host[0] == '\0') {
		/* the peers it found leave with it */
		peers_found(n->peers, &next->peer_dns, NULL, 0);
		return 0;
	}
	n->discover = discover_new(s->base, s->dns, n->peers,
	    &next->peer_dns, next->peer_dns_interval_ms);
	return n->discover != NULL ? 0 : -1;
}

static void
refuse(struct worker *s, const char *why)
{
	METRIC_INC(s->m.reloads_refused);
	fprintf(stderr, "sumcache: reload refused, the running configuration "
	    "stays: %s\n", why);
}

void
reload_conf(struct worker *s)
{
	struct node *n = s->node;
	struct conf next;
	char err[1024];
	struct accesslog *log = NULL;

	memset(&next, 0, sizeof(next));
	int kept = reload_read_conf(&next, &n->conf_src, &n->conf, err,
	    sizeof(err));
	if (kept < 0) {
		refuse(s, err);
		conf_clear(&next);
		return;
	}
	/* what may fail, first */
	bool new_log = strcmp(next.access_log, n->conf.access_log) != 0;
	if (new_log && (log = accesslog_open(next.access_log)) == NULL) {
		snprintf(err, sizeof(err), "access_log %s: %s",
		    next.access_log, strerror(errno));
		refuse(s, err);
		conf_clear(&next);
		return;
	}
	if (n->peers != NULL) {
		struct peers_conf pc = server_peers_conf(s->node, &next);
		if (peers_reconfigure(n->peers, &pc, next.peers, next.n_peers,
		    err, sizeof(err)) < 0) {
			accesslog_close(&log);
			refuse(s, err);
			conf_clear(&next);
			return;
		}
		if (!same_peer_dns(&n->conf, &next) && redo_discover(s,
		    &next) < 0)
			fprintf(stderr, "sumcache: reload: peer_dns %s: cannot "
			    "start its lookups\n", next.peer_dns.host);
	}
	/* from here nothing fails */
	const char *changed[CONF_MAX_DIRECTIVES];
	size_t nchanged = conf_changed(&n->conf, &next, changed,
	    CONF_MAX_DIRECTIVES);
	if (new_log) {
		accesslog_close(&n->log);
		n->log = log;
	} else if (accesslog_reopen(n->log) < 0) {
		fprintf(stderr, "sumcache: cannot reopen %s: %s\n",
		    n->conf.access_log, strerror(errno));
	}
	if (n->icp != NULL)
		icpsock_set_timeout(n->icp, next.icp_timeout_ms);
	server_apply_limits(s->node, &next);
	conf_adopt_restart_only(&n->conf, &next);
	struct conf old = n->conf;
	n->conf = next;
	conf_clear(&old);
	METRIC_INC(s->m.reloads_applied);
	char list[512] = "";
	for (size_t i = 0, at = 0; i < nchanged && at < sizeof(list); i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
		    i ? ", " : "", changed[i]);
	fprintf(stderr, "sumcache: reloaded %s: %s%s; %d kept until a "
	    "restart\n", n->conf_src.file ? n->conf_src.file :
	    "the command line", nchanged ? "changed " :
	    "lists only (no single-valued directive changed)", list, kept);
}
