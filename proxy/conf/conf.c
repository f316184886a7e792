/*
 * Directive table and the config file reader.
 *
 * The values' parsers are value.c's. The file is libconfig syntax
 * ("name = value;"), read with libconfig so that quoting, comments,
 * includes and line numbers are somebody's well-tested code. Each scalar
 * setting is turned into text and handed to the same per-type parser as a
 * -o override, so the two can never disagree.
 * A repeatable directive takes a list ("allow = [\"10.0.0.0/8\", ...];") or
 * may appear once per -o; the first value a user gives replaces the default.
 * The rules between directives, checked once all are read, are
 * confcheck.c's.
 */
#include "conf.h"

#include <errno.h>
#include <inttypes.h>
#include <libconfig.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <unistd.h>

#include <netinet/in.h>

#include <event2/util.h>

#include "admit.h"  /* ADMIT_HITS_DEFAULT */
#include "value.h"

struct directive {
	const char *name;
	conf_parse_f *parse;
	size_t off;
	const char *dflt;  /* text fed to parse for the default; NULL = none */
	bool repeatable;
	const char *help;
	/* a reload keeps the running value: the listener, the memory and
	 * disk already laid out, what peers must agree on */
	bool restart;
};

#define RESTART .restart = true
#define LIVE .restart = false

#define OFF(f) offsetof(struct conf, f)
#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)
#define PEERS_ASKED_TEXT TEXT(PEERS_ASKED_DEFAULT)

static const struct directive directives[] = {
	{"node_name", value_node_name, OFF(node_name), "", false,
	    "name in Via and peer messages (at most 63 characters); default: "
	    "the host name", RESTART},
	{"http_listen", value_hostport, OFF(http_listen), "127.0.0.1:3128",
	    false, "address and port for client connections", RESTART},
	{"cache_mem", value_size, OFF(cache_mem), "256MB", false,
	    "memory budget for cached objects, headers and keys included", RESTART},
	{"max_object_size", value_size_auto, OFF(max_object_size), "auto",
	    false, "largest response body that is cached (larger ones stream "
	    "through); auto: max_memory_object_size, or with a cache_dir 1GB "
	    "(at most a quarter of it)", RESTART},
	{"max_memory_object_size", value_size, OFF(max_memory_object_size),
	    "16MB", false, "largest body the memory tier holds (with a "
	    "cache_dir, larger ones are kept on disk only)", RESTART},
	{"cache_dir", value_cache_dir, OFF(cache_dir), "", false,
	    "\"PATH SIZE\": a disk tier of SIZE bytes of segment files under "
	    "PATH, kept across restarts (created if need be; one node each); "
	    "empty: memory only", RESTART},
	{"inflight_mem", value_size_auto, OFF(inflight_mem), "auto", false,
	    "memory for copies of responses being fetched to be cached; when "
	    "it is taken, further misses stream through uncached; auto: 64MB, "
	    "or max_memory_object_size if larger", RESTART},
	{"max_connections", value_count_auto, OFF(max_connections), "auto",
	    false, "client connections and tunnels open at once (then new ones "
	    "wait in the backlog); auto: 3/4 of what ulimit -n leaves, two "
	    "descriptors each", RESTART},
	{"workers", value_workers, OFF(workers), "auto", false,
	    "event loops, each on a thread of its own, sharing one cache (a "
	    "client's connection stays on one); auto: the CPUs the process "
	    "may run on, at most 64", RESTART},
	{"allow", value_allow, OFF(allow), "127.0.0.0/8 ::1/128", true,
	    "client networks allowed to use the proxy (CIDR)", LIVE},
	{"purge_allow", value_allow, OFF(purge_allow), "127.0.0.0/8 ::1/128",
	    true, "client networks whose PURGE requests drop a URL from the "
	    "cache (CIDR); others get 403", LIVE},
	{"connect_ports", value_port, 0, "443", true,
	    "ports CONNECT may reach", LIVE},
	{"access_log", value_string, OFF(access_log), "stdout", false,
	    "access log in Squid's native format: a path, stdout or none", LIVE},
	{"sharing", value_sharing, OFF(sharing), "none", false,
	    "cache sharing with peers: none, summary or icp", RESTART},
	{"placement", value_placement, 0, "none", false,
	    "which node fetches a miss that no summary claims: none (this "
	    "one), or hash (the key's owner among the live nodes, by "
	    "rendezvous hashing of node names: the cluster caches each "
	    "object once); with sharing none, hash is CARP", RESTART},
	{"placement_weight", value_weight, OFF(placement_weight), "1", false,
	    "this node's share of keys under placement hash, as its peers' "
	    "lines say weight= (a node with twice the cache: 2)", RESTART},
	{"placement_admit_hits", value_admit_hits, OFF(placement_admit_hits),
	    TEXT(ADMIT_HITS_DEFAULT), false, "under placement hash, keep "
	    "a copy of another node's object at this node's Nth recent "
	    "request for it (1: every copy; 0: none)", RESTART},
	{"forwarded_for", value_forwarded_for, OFF(forwarded_for), "add",
	    false, "what requests sent on say of the client: add (appended "
	    "to X-Forwarded-For), forwarded (a for= element appended to "
	    "Forwarded, RFC 7239), keep (both as the client sent them), strip "
	    "(neither)", LIVE},
	{"peer", value_peer, 0, NULL, true,
	    "a peer: \"NAME HOST:PORT [type=sumcache|squid-digest] "
	    "[proxy_only] [icp=PORT] [weight=W]\" (ICP port 3130 unless "
	    "given; weight: its share of keys under placement hash)", LIVE},
	{"peer_dns", value_peer_dns, 0, NULL, false,
	    "peers by DNS: \"HOST:PORT [proxy_only]\"; every address HOST "
	    "resolves to (a headless Service) is a peer", LIVE},
	{"peer_dns_interval", value_duration, OFF(peer_dns_interval_ms), "30s",
	    false, "how often peer_dns is resolved again", LIVE},
	{"dns_nameservers", value_nameservers, OFF(dns_nameservers), NULL,
	    false, "DNS servers \"IP[:PORT] ...\"; default: /etc/resolv.conf",
	    RESTART},
	{"icp_listen", value_icp_listen, OFF(icp_listen), "auto", false,
	    "ICP (UDP): address:port, none, or auto (with sharing icp or a "
	    "squid-digest peer, http_listen's address, port 3130)", RESTART},
	{"icp_timeout", value_duration, OFF(icp_timeout_ms), "0", false,
	    "wait for ICP replies; 0: 2 x the peers' mean round trip, "
	    "5 ms to 2 s", LIVE},
	{"digest_generation", value_onoff, OFF(digest_generation), "on", false,
	    "serve a Squid Cache Digest of the cache to Squid siblings", RESTART},
	{"digest_rebuild_period", value_duration,
	    OFF(digest_rebuild_period_ms), "5m", false,
	    "how often the digest served is renewed (its Expires)", RESTART},
	{"cluster_key_file", value_string, OFF(cluster_key_file), NULL, false,
	    "file holding the cluster's shared key (16 bytes or more): signs "
	    "summaries, and is the peer links' identity", RESTART},
	{"summary_hash", value_hash, OFF(summary_hash), "xxh3", false,
	    "hash of summary keys: xxh3, or squid-md5 (Squid's, k = 4)", RESTART},
	{"summary_bits_per_entry", value_count, OFF(summary_bits_per_entry),
	    "16", false, "bits of summary per cached object (4 to 64)", RESTART},
	{"summary_hash_functions", value_count, OFF(summary_hash_functions),
	    "4", false, "hash functions of the summary (1 to 16)", RESTART},
	{"summary_threshold", value_share_auto, OFF(summary_threshold), "auto",
	    false, "publish when this share of cached objects has changed; "
	    "auto: when what the pending changes have cost the peers (their "
	    "requests for our keys, measured) is worth a message to each, or "
	    "costs them 0.35% of this node's own requests, between 0.5% and "
	    "10%; under placement hash 10%, where a miss goes "
	    "to the key's owner whatever the summaries say", LIVE},
	{"summary_max_size", value_size_auto, OFF(summary_max_size), "auto",
	    false, "largest summary taken from a peer (4 of them may arrive "
	    "at once); auto: the largest a node with this cache_mem, cache_dir "
	    "and summary_bits_per_entry sends", RESTART},
	{"summary_max_interval", value_duration,
	    OFF(summary_max_interval_ms), "60s", false,
	    "publish pending changes at least this often (0: only at the "
	    "threshold)", LIVE},
	{"peers_asked", value_count, OFF(peers_asked),
	    PEERS_ASKED_TEXT, false, "on a miss, at most this many of the "
	    "peers whose summaries claim the object are asked, one after the "
	    "other: first those whose claims have been right, then the "
	    "fastest (1 to 16)", LIVE},
	{"peer_connect_timeout", value_duration, OFF(peer_connect_timeout_ms),
	    "500ms", false, "time to connect to a peer (then it is down)", LIVE},
	{"peer_timeout", value_duration, OFF(peer_timeout_ms), "2s", false,
	    "time a peer may stay silent on a request (then it is down)", LIVE},
	{"header_timeout", value_duration, OFF(header_timeout_ms), "30s",
	    false, "time a client has to send a complete request head", LIVE},
	{"idle_timeout", value_duration, OFF(idle_timeout_ms), "60s", false,
	    "how long an idle persistent client connection is kept", LIVE},
	{"connect_timeout", value_duration, OFF(connect_timeout_ms), "10s",
	    false, "time to connect to an origin (then 504)", LIVE},
	{"origin_timeout", value_duration, OFF(origin_timeout_ms), "60s",
	    false, "time an origin may stay silent (then 504)", LIVE},
	{"collapsed_forwarding_timeout", value_duration,
	    OFF(collapsed_forwarding_timeout_ms), "10s", false, "a request "
	    "for a URL being fetched waits this long at most for the fetch's "
	    "answer, then fetches alone; 0: every request fetches alone",
	    LIVE},
	{"range_fetch_limit", value_size, OFF(range_fetch_limit), "16MB",
	    false, "a range request on a miss fetches the whole object for "
	    "the cache, and is answered from it, when the object is no "
	    "larger than this (one of unknown length is not); larger, the "
	    "range goes to the origin and is not kept; 0: every range goes "
	    "to the origin", LIVE},
	{"refresh_pattern", value_refresh_pattern, 0, NULL, true,
	    "\"[-i] REGEX MIN PERCENT MAX\", Squid's rule: a response whose "
	    "URL matches REGEX (the first rule that does) and whose origin "
	    "gave no freshness (no max-age, s-maxage or Expires) is fresh for "
	    "PERCENT of its Last-Modified age, at least MIN and at most MAX "
	    "minutes, and without validators for MIN; no rule: 10% of the "
	    "Last-Modified age, at most a day", LIVE},
	{"tls_intercept", value_host_pattern, OFF(tls_intercept), NULL, true,
	    "CONNECT hosts whose TLS is intercepted so their https:// "
	    "objects are cached: *, *.DOMAIN or a host name; empty: none "
	    "(needs tls_ca_cert and tls_ca_key)", LIVE},
	{"tls_no_intercept", value_host_pattern, OFF(tls_no_intercept), NULL,
	    true, "hosts never intercepted, whatever tls_intercept says "
	    "(banks, apps that pin their certificates)", LIVE},
	{"tls_splice_after_reject", value_duration,
	    OFF(tls_splice_after_reject_ms), "1h", false, "a host a client "
	    "refused our certificate for (a pinned app, a machine without "
	    "the CA) is tunnelled, not intercepted, for that client's "
	    "address, for this long; 0: never",
	    LIVE},
	{"tls_ca_cert", value_string, OFF(tls_ca_cert), NULL, false,
	    "the CA certificate that signs intercepted hosts' leaves (PEM; "
	    "sumcache --make-ca DIR writes one); needed by tls_intercept",
	    RESTART},
	{"tls_ca_key", value_string, OFF(tls_ca_key), NULL, false,
	    "the CA's private key (PEM, unencrypted); refused unless only its "
	    "owner may read it", RESTART},
	{"tls_upstream_ca", value_bundle, OFF(tls_upstream_ca), NULL, false,
	    "a PEM file of CA certificates trusted for https origins beside "
	    "the system's (private origins, tests); origins are always "
	    "verified, and nothing turns that off", LIVE},
	{"tunnel_idle_timeout", value_duration, OFF(tunnel_idle_timeout_ms),
	    "5m", false, "a CONNECT tunnel with no traffic this long closes", LIVE},
	{"shutdown_timeout", value_duration, OFF(shutdown_timeout_ms), "10s",
	    false, "on SIGTERM, how long in-flight requests may take", LIVE},
	{"status_interval", value_duration, OFF(status_interval_ms), "5s",
	    false, "the status page samples counters this often (keeps 720)", LIVE},
	{"max_header_size", value_size, OFF(max_header_size), "64KB", false,
	    "largest request header section (then 431)", LIVE},
	{"max_request_line", value_size, OFF(max_request_line), "8KB", false,
	    "longest request line (then 414)", LIVE},
	{"max_headers", value_count, OFF(max_headers), "100", false,
	    "most header fields in a request (then 431)", LIVE},
};

#define NDIRECTIVES (sizeof(directives) / sizeof(directives[0]))
_Static_assert(NDIRECTIVES <= CONF_MAX_DIRECTIVES, "set_mask and given[] "
    "have a place for each directive");

/* A scalar directive keeps the text it was set from: a reload compares
 * texts, whatever the type. Only called after a successful parse. */
static int
remember(struct conf *c, const struct directive *d, const char *v)
{
	char *t = strdup(v);

	if (t == NULL)
		return -1;
	free(c->given[d - directives]);
	c->given[d - directives] = t;
	return 0;
}

static const struct directive *
find_directive(const char *name, size_t len)
{
	for (size_t i = 0; i < NDIRECTIVES; i++)
		if (strlen(directives[i].name) == len &&
		    strncmp(directives[i].name, name, len) == 0)
			return &directives[i];
	return NULL;
}

static void
reset_repeatable(struct conf *c, const struct directive *d)
{
	if (d->parse == value_allow)
		acl_clear((struct acl *)((char *)c + d->off));
	else if (d->parse == value_peer)
		c->n_peers = 0;
	else if (d->parse == value_port)
		c->n_connect_ports = 0;
	else if (d->parse == value_refresh_pattern)
		refresh_clear(&c->refresh);
	else if (d->parse == value_host_pattern)
		hostpat_clear((struct hostpats *)((char *)c + d->off));
}

/* Sets one value from the user: the first one for a repeatable directive
 * drops the default list. */
static int
apply(struct conf *c, const struct directive *d, const char *v,
    const char **why)
{
	uint64_t bit = 1ull << (d - directives);

	if (d->repeatable && !(c->set_mask & bit))
		reset_repeatable(c, d);
	c->set_mask |= bit;
	if (d->parse(c, d->off, v, why) < 0)
		return -1;
	if (!d->repeatable && remember(c, d, v) < 0) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

int
conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < NDIRECTIVES; i++) {
		const struct directive *d = &directives[i];
		const char *why;
		char buf[128];

		if (d->dflt == NULL)
			continue;
		if (!d->repeatable) {
			if (d->parse(c, d->off, d->dflt, &why) < 0 ||
			    remember(c, d, d->dflt) < 0)
				return -1;
			continue;
		}
		/* defaults of repeatable directives are space-separated */
		const char *p = d->dflt;
		while (*p) {
			size_t n = strcspn(p, " ");
			if (n >= sizeof(buf))
				return -1;
			memcpy(buf, p, n);
			buf[n] = '\0';
			if (d->parse(c, d->off, buf, &why) < 0)
				return -1;
			p += n;
			while (*p == ' ')
				p++;
		}
	}
	return 0;
}

static int
setting_text(config_setting_t *s, char *buf, size_t len)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_STRING:
		snprintf(buf, len, "%s", config_setting_get_string(s));
		return 0;
	case CONFIG_TYPE_INT:
		snprintf(buf, len, "%d", config_setting_get_int(s));
		return 0;
	case CONFIG_TYPE_INT64:
		snprintf(buf, len, "%lld", config_setting_get_int64(s));
		return 0;
	case CONFIG_TYPE_BOOL:
		snprintf(buf, len, "%s", config_setting_get_bool(s) ?
		    "on" : "off");
		return 0;
	default:
		return -1;
	}
}

static int
file_error(char *err, size_t elen, const char *file, int line,
    const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, elen, "%s:%d: ", file, line);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < elen)
		vsnprintf(err + n, elen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

int
conf_load_file(struct conf *c, const char *path, char *err, size_t elen)
{
	config_t cfg;
	int rc = -1;

	config_init(&cfg);
	if (config_read_file(&cfg, path) != CONFIG_TRUE) {
		if (config_error_type(&cfg) == CONFIG_ERR_FILE_IO)
			snprintf(err, elen, "%s: cannot read: %s", path,
			    strerror(errno));
		else
			file_error(err, elen, config_error_file(&cfg) ?
			    config_error_file(&cfg) : path,
			    config_error_line(&cfg), "%s",
			    config_error_text(&cfg));
		goto fail;
	}
	config_setting_t *root = config_root_setting(&cfg);
	for (int i = 0; i < config_setting_length(root); i++) {
		config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
		const char *name = config_setting_name(s);
		const char *file = config_setting_source_file(s);
		int line = (int)config_setting_source_line(s);
		const struct directive *d = find_directive(name, strlen(name));
		const char *why;
		char buf[1024];

		if (file == NULL)
			file = path;
		if (d == NULL) {
			file_error(err, elen, file, line,
			    "unknown directive '%s'", name);
			goto fail;
		}
		int type = config_setting_type(s);
		if (type == CONFIG_TYPE_LIST || type == CONFIG_TYPE_ARRAY) {
			if (!d->repeatable) {
				file_error(err, elen, file, line,
				    "%s takes one value, not a list", name);
				goto fail;
			}
			for (int j = 0; j < config_setting_length(s); j++) {
				config_setting_t *e =
				    config_setting_get_elem(s, (unsigned)j);
				if (setting_text(e, buf, sizeof(buf)) < 0) {
					file_error(err, elen, file, line,
					    "%s: list elements must be "
					    "strings or numbers", name);
					goto fail;
				}
				if (apply(c, d, buf, &why) < 0) {
					file_error(err, elen, file, line,
					    "%s \"%s\": %s", name, buf, why);
					goto fail;
				}
			}
			continue;
		}
		if (setting_text(s, buf, sizeof(buf)) < 0) {
			file_error(err, elen, file, line,
			    "%s: expected a string or a number", name);
			goto fail;
		}
		if (apply(c, d, buf, &why) < 0) {
			file_error(err, elen, file, line, "%s \"%s\": %s", name,
			    buf, why);
			goto fail;
		}
	}
	rc = 0;
fail:
	config_destroy(&cfg);
	return rc;
}

int
conf_override(struct conf *c, const char *nv, char *err, size_t elen)
{
	const char *eq = strchr(nv, '=');
	const char *why;

	if (eq == NULL) {
		snprintf(err, elen, "-o %s: expected name=value", nv);
		return -1;
	}
	const struct directive *d = find_directive(nv, (size_t)(eq - nv));
	if (d == NULL) {
		snprintf(err, elen, "-o %s: unknown directive '%.*s'", nv,
		    (int)(eq - nv), nv);
		return -1;
	}
	if (apply(c, d, eq + 1, &why) < 0) {
		snprintf(err, elen, "-o %s: %s", nv, why);
		return -1;
	}
	return 0;
}

size_t
conf_docs(void)
{
	return NDIRECTIVES;
}

void
conf_doc(size_t i, struct conf_doc *out)
{
	const struct directive *d = &directives[i];

	*out = (struct conf_doc){
		.name = d->name,
		.syntax = value_syntax(d->parse),
		.dflt = d->dflt,
		.help = d->help,
		.repeatable = d->repeatable,
		.restart = d->restart,
	};
}

void
conf_print_help(FILE *f)
{
	fprintf(f, "Directives (config file: name = value; or -o "
	    "name=value):\n");
	for (size_t i = 0; i < NDIRECTIVES; i++) {
		struct conf_doc d;
		conf_doc(i, &d);
		fprintf(f, "  %-20s %s%s%s\n  %-20s %s; default: %s\n",
		    d.name, d.help, d.repeatable ? " (repeatable)" : "",
		    d.restart ? " (restart to change)" : "", "", d.syntax,
		    d.dflt == NULL ? "(none)" : *d.dflt ? d.dflt :
		    "(computed)");
	}
}

int
conf_read(struct conf *c, const char *file, char *const *ovr, int novr,
    const struct conf_hooks *hooks, char *err, size_t elen)
{
	if (conf_defaults(c) < 0) {
		snprintf(err, elen, "out of memory");
		return -1;
	}
	c->hooks = hooks;
	if (file != NULL && conf_load_file(c, file, err, elen) < 0)
		return -1;
	for (int i = 0; i < novr; i++)
		if (conf_override(c, ovr[i], err, elen) < 0)
			return -1;
	return 0;
}

static bool
same_text(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

int
conf_keep_restart_only(const struct conf *cur, struct conf *next, char *err,
    size_t elen)
{
	int kept = 0;

	for (size_t i = 0; i < NDIRECTIVES; i++) {
		const struct directive *d = &directives[i];
		const char *was = cur->given[i], *why;
		if (!d->restart || same_text(was, next->given[i]))
			continue;
		fprintf(stderr, "sumcache: reload: %s cannot change without a "
		    "restart; kept at \"%s\" (the file says \"%s\")\n",
		    d->name, was ? was : "", next->given[i] ?
		    next->given[i] : "");
		/* it parsed when it was set; a check of the world (a
		 * cache_dir's free space) may say otherwise now */
		if (d->parse(next, d->off, was ? was : "", &why) < 0) {
			snprintf(err, elen, "%s \"%s\", kept as it runs: %s",
			    d->name, was ? was : "", why);
			return -1;
		}
		if (remember(next, d, was ? was : "") < 0) {
			snprintf(err, elen, "out of memory");
			return -1;
		}
		kept++;
	}
	return kept;
}

/* The directives whose value is a string (char * at off). */
static bool
is_text(const struct directive *d)
{
	return d->parse == value_string || d->parse == value_node_name ||
	    d->parse == value_hostport || d->parse == value_icp_listen ||
	    d->parse == value_nameservers || d->parse == value_cache_dir ||
	    d->parse == value_bundle;
}

void
conf_adopt_restart_only(struct conf *cur, struct conf *next)
{
	for (size_t i = 0; i < NDIRECTIVES; i++) {
		const struct directive *d = &directives[i];
		if (!d->restart || !is_text(d))
			continue;
		char **a = (char **)((char *)cur + d->off);
		char **b = (char **)((char *)next + d->off);
		char *t = *a;
		*a = *b;
		*b = t;
	}
}

size_t
conf_changed(const struct conf *a, const struct conf *b, const char **names,
    size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < NDIRECTIVES; i++)
		if (!directives[i].repeatable && n < max &&
		    !same_text(a->given[i], b->given[i]))
			names[n++] = directives[i].name;
	return n;
}

void
conf_clear(struct conf *c)
{
	for (size_t i = 0; i < CONF_MAX_DIRECTIVES; i++)
		free(c->given[i]);
	free(c->node_name);
	free(c->dns_nameservers);
	free(c->icp_listen);
	free(c->http_listen);
	free(c->access_log);
	free(c->cache_dir);
	free(c->cluster_key_file);
	if (c->cluster_key != NULL)
		memset(c->cluster_key, 0, c->cluster_key_len);
	free(c->cluster_key);
	acl_clear(&c->allow);
	acl_clear(&c->purge_allow);
	refresh_clear(&c->refresh);
	hostpat_clear(&c->tls_intercept);
	hostpat_clear(&c->tls_no_intercept);
	free(c->tls_ca_cert);
	free(c->tls_ca_key);
	free(c->tls_upstream_ca);
	memset(c, 0, sizeof(*c));
}
