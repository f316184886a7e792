/*
 * The directives' values: one parser per kind of value, shared by the
 * config file and -o (conf.c's table names which parses what). Each reads
 * the text v into the field at off of c, or returns -1 with *why.
 */
#include "value.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/util.h>

#include "admit.h"
#include "placement.h"

int
value_string(struct conf *c, size_t off, const char *v, const char **why)
{
	char **p = (char **)((char *)c + off);
	char *n = strdup(v);

	if (n == NULL) {
		*why = "out of memory";
		return -1;
	}
	free(*p);
	*p = n;
	return 0;
}

int
value_node_name(struct conf *c, size_t off, const char *v, const char **why)
{
	char host[256];

	if (*v == '\0') {
		if (gethostname(host, sizeof(host)) != 0)
			strcpy(host, "sumcache");
		host[sizeof(host) - 1] = '\0';
		v = host;
	}
	/* peers know us by it: it is the sender of every summary we sign */
	if (strlen(v) > WIRE_MAX_SENDER) {
		*why = "node_name longer than 63 characters (set one shorter "
		    "than the host name)";
		return -1;
	}
	/* node_name goes into Via, so it must be a token */
	if (!wire_name_ok(v, strlen(v))) {
		*why = "node_name may hold only letters, digits, - . _";
		return -1;
	}
	return value_string(c, off, v, why);
}

/* "64", "64k", "16 MB", "1G" (binary multiples) */
int
value_size(struct conf *c, size_t off, const char *v, const char **why)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);

	if (end == v || errno || *v == '-') {
		*why = "expected a size such as 64KB or 256MB";
		return -1;
	}
	while (*end == ' ')
		end++;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (shift && (*end == 'b' || *end == 'B'))
		end++;
	else if (!shift && (*end == 'b' || *end == 'B'))
		end++;
	if (*end != '\0' || n > (SIZE_MAX >> shift)) {
		*why = "expected a size such as 64KB or 256MB";
		return -1;
	}
	*(size_t *)((char *)c + off) = (size_t)n << shift;
	return 0;
}

/* "PATH SIZE", checked as -t promises: the directory exists or can be
 * made, is writable, and SIZE fits its file system (disk.c) */
int
value_cache_dir(struct conf *c, size_t off, const char *v, const char **why)
{
	static char err[PATH_MAX + 128];
	const char *sp = strrchr(v, ' ');

	(void)off;
	if (*v == '\0') {
		free(c->cache_dir);
		c->cache_dir = NULL;
		c->cache_dir_size = 0;
		return 0;
	}
	if (sp == NULL || sp == v || v[0] != '/') {
		*why = "expected \"PATH SIZE\" with an absolute PATH, such as "
		    "\"/var/cache/sumcache 50GB\"";
		return -1;
	}
	if (value_size(c, offsetof(struct conf, cache_dir_size), sp + 1,
	    why) < 0)
		return -1;
	char *path = strndup(v, (size_t)(sp - v));
	if (path == NULL) {
		*why = "out of memory";
		return -1;
	}
	if (c->hooks != NULL && c->hooks->dir_check != NULL &&
	    c->hooks->dir_check(path, c->cache_dir_size, err,
	    sizeof(err)) < 0) {
		free(path);
		*why = err;
		return -1;
	}
	free(c->cache_dir);
	c->cache_dir = path;
	return 0;
}

/* "250ms", "30s", "5m", "1h", plain number = seconds */
int
value_duration(struct conf *c, size_t off, const char *v, const char **why)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	unsigned long long ms;

	if (end == v || errno || *v == '-')
		goto bad;
	while (*end == ' ')
		end++;
	if (strcmp(end, "ms") == 0)
		ms = n;
	else if (*end == '\0' || strcmp(end, "s") == 0)
		ms = n * 1000;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		ms = n * 60000;
	else if (strcmp(end, "h") == 0)
		ms = n * 3600000;
	else
		goto bad;
	if (ms > UINT32_MAX)
		goto bad;
	*(uint32_t *)((char *)c + off) = (uint32_t)ms;
	return 0;
bad:
	*why = "expected a duration such as 250ms, 30s, 5m or 1h";
	return -1;
}

/* A count of 1 to max in v, into the uint32_t at off. */
static int
count_upto(struct conf *c, size_t off, const char *v, unsigned long max)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);

	if (end == v || *end || errno || n == 0 || n > max || *v == '-')
		return -1;
	*(uint32_t *)((char *)c + off) = (uint32_t)n;
	return 0;
}

int
value_count(struct conf *c, size_t off, const char *v, const char **why)
{
	if (count_upto(c, off, v, 100000) < 0) {
		*why = "expected a count from 1 to 100000";
		return -1;
	}
	return 0;
}

/* "auto" (stored as 0: the daemon derives the value), or a size */
int
value_size_auto(struct conf *c, size_t off, const char *v, const char **why)
{
	if (strcmp(v, "auto") == 0) {
		*(size_t *)((char *)c + off) = 0;
		return 0;
	}
	if (value_size(c, off, v, why) < 0)
		return -1;
	if (*(size_t *)((char *)c + off) == 0) {
		*why = "expected auto or a size above 0";
		return -1;
	}
	return 0;
}

/* "auto" (0), or a count from 1 to max: why names the range. */
static int
count_or_auto(struct conf *c, size_t off, const char *v, unsigned long max,
    const char *range, const char **why)
{
	if (strcmp(v, "auto") == 0) {
		*(uint32_t *)((char *)c + off) = 0;
		return 0;
	}
	if (count_upto(c, off, v, max) < 0) {
		*why = range;
		return -1;
	}
	return 0;
}

/* "auto" (0, derived), or a count of 1 or more */
int
value_count_auto(struct conf *c, size_t off, const char *v, const char **why)
{
	return count_or_auto(c, off, v, 10000000,
	    "expected auto or a count from 1 to 10000000", why);
}

/* "auto" (0: the CPUs, conf_workers), or 1 to CONF_WORKERS_MAX */
int
value_workers(struct conf *c, size_t off, const char *v, const char **why)
{
	return count_or_auto(c, off, v, CONF_WORKERS_MAX,
	    "expected auto or a count from 1 to 64", why);
}

/* Checked with the parser main() binds with, so -t catches what start-up
 * would refuse: a numeric address and a port ("[::1]:3128" for IPv6). */
int
value_hostport(struct conf *c, size_t off, const char *v, const char **why)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	int rc = evutil_parse_sockaddr_port(v, (struct sockaddr *)&ss, &len);
	uint16_t port = rc < 0 ? 0 : ss.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port;
	if (port == 0) {
		*why = "expected address:port, such as 127.0.0.1:3128";
		return -1;
	}
	return value_string(c, off, v, why);
}

/* "auto" (with sharing icp, http_listen's address and port 3130; else
 * off), "none", or an address:port */
int
value_icp_listen(struct conf *c, size_t off, const char *v,
    const char **why)
{
	if (strcmp(v, "auto") == 0 || strcmp(v, "none") == 0)
		return value_string(c, off, v, why);
	return value_hostport(c, off, v, why);
}

int
value_onoff(struct conf *c, size_t off, const char *v, const char **why)
{
	bool *b = (bool *)((char *)c + off);

	if (strcmp(v, "on") == 0)
		*b = true;
	else if (strcmp(v, "off") == 0)
		*b = false;
	else {
		*why = "expected on or off";
		return -1;
	}
	return 0;
}

int
value_allow(struct conf *c, size_t off, const char *v, const char **why)
{
	return acl_add((struct acl *)((char *)c + off), v, why);
}

int
value_host_pattern(struct conf *c, size_t off, const char *v,
    const char **why)
{
	return hostpat_add((struct hostpats *)((char *)c + off), v, why);
}

/* A CA file, checked where it is read (the file and line are named). */
int
value_bundle(struct conf *c, size_t off, const char *v, const char **why)
{
	static char err[512];

	if (c->hooks != NULL && c->hooks->bundle_check != NULL &&
	    c->hooks->bundle_check(v, err, sizeof(err)) < 0) {
		*why = err;
		return -1;
	}
	return value_string(c, off, v, why);
}

int
value_refresh_pattern(struct conf *c, size_t off, const char *v,
    const char **why)
{
	(void)off;
	return refresh_add(&c->refresh, v, why);
}

int
value_port(struct conf *c, size_t off, const char *v, const char **why)
{
	char *end;
	unsigned long p = strtoul(v, &end, 10);

	(void)off;
	if (end == v || *end || p == 0 || p > 65535) {
		*why = "expected a port number";
		return -1;
	}
	if (c->n_connect_ports == CONF_MAX_PORTS) {
		*why = "too many connect_ports";
		return -1;
	}
	c->connect_ports[c->n_connect_ports++] = (uint16_t)p;
	return 0;
}

int
value_sharing(struct conf *c, size_t off, const char *v, const char **why)
{
	(void)off;
	if (strcmp(v, "none") == 0) {
		c->sharing = SHARING_NONE;
		return 0;
	}
	if (strcmp(v, "summary") == 0) {
		c->sharing = SHARING_SUMMARY;
		return 0;
	}
	if (strcmp(v, "icp") == 0) {
		c->sharing = SHARING_ICP;
		return 0;
	}
	*why = "expected none, summary or icp";
	return -1;
}

int
value_placement(struct conf *c, size_t off, const char *v, const char **why)
{
	(void)off;
	if (strcmp(v, "none") != 0 && strcmp(v, "hash") != 0) {
		*why = "expected none or hash";
		return -1;
	}
	c->placement_hash = strcmp(v, "hash") == 0;
	return 0;
}

/* 0 (no copies), or a count of requests to ADMIT_HITS_MAX. */
int
value_admit_hits(struct conf *c, size_t off, const char *v, const char **why)
{
	if (strcmp(v, "0") == 0) {
		*(uint32_t *)((char *)c + off) = 0;
		return 0;
	}
	if (count_upto(c, off, v, ADMIT_HITS_MAX) < 0) {
		*why = "expected a count from 0 to 15";
		return -1;
	}
	return 0;
}

/* A weight, as a peer line's weight= takes it. */
int
value_weight(struct conf *c, size_t off, const char *v, const char **why)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);

	if (end == v || *end || errno || !(x > 0) || x > PLACE_WEIGHT_MAX) {
		*why = "expected a number over 0, at most 1000000";
		return -1;
	}
	*(double *)((char *)c + off) = x;
	return 0;
}

int
value_forwarded_for(struct conf *c, size_t off, const char *v,
    const char **why)
{
	/* in enum forwarded_for's order */
	static const char *const names[] = {"add", "forwarded", "keep",
	    "strip"};

	(void)off;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(v, names[i]) == 0) {
			c->forwarded_for = (enum forwarded_for)i;
			return 0;
		}
	*why = "expected add, forwarded, keep or strip";
	return -1;
}

int
value_peer(struct conf *c, size_t off, const char *v, const char **why)
{
	(void)off;
	if (c->n_peers == CONF_MAX_PEERS) {
		*why = "too many peers";
		return -1;
	}
	if (peer_spec_parse(v, &c->peers[c->n_peers], why) < 0)
		return -1;
	c->n_peers++;
	return 0;
}

/* "HOST:PORT [proxy_only]": every address HOST resolves to is a peer;
 * each names itself in its own messages */
int
value_peer_dns(struct conf *c, size_t off, const char *v, const char **why)
{
	(void)off;
	memset(&c->peer_dns, 0, sizeof(c->peer_dns));
	if (peer_target_parse(v, &c->peer_dns, "expected HOST:PORT",
	    why) < 0) {
		c->peer_dns.host[0] = '\0';
		return -1;
	}
	if (c->peer_dns.type != PEER_SUMCACHE) {
		*why = "peer_dns finds sumcache nodes; list each Squid on a "
		    "peer line";
		c->peer_dns.host[0] = '\0';
		return -1;
	}
	return 0;
}

/* "IP[:PORT] ...": numeric, so that the resolver needs no resolver */
int
value_nameservers(struct conf *c, size_t off, const char *v,
    const char **why)
{
	char buf[512], *save;
	struct sockaddr_storage ss;
	int n = 0;

	if (strlen(v) >= sizeof(buf)) {
		*why = "too long";
		return -1;
	}
	strcpy(buf, v);
	for (char *tok = strtok_r(buf, " \t,", &save); tok != NULL;
	    tok = strtok_r(NULL, " \t,", &save), n++) {
		int len = sizeof(ss);
		if (evutil_parse_sockaddr_port(tok, (struct sockaddr *)&ss,
		    &len) < 0) {
			*why = "expected IP addresses, each with an optional "
			    ":PORT";
			return -1;
		}
	}
	if (n == 0) {
		*why = "expected at least one IP address";
		return -1;
	}
	return value_string(c, off, v, why);
}

int
value_hash(struct conf *c, size_t off, const char *v, const char **why)
{
	(void)off;
	if (strcmp(v, "xxh3") == 0)
		c->summary_hash = SUM_XXH3;
	else if (strcmp(v, "squid-md5") == 0)
		c->summary_hash = SUM_SQUID_MD5;
	else {
		*why = "expected xxh3 or squid-md5";
		return -1;
	}
	return 0;
}

/* "1%", "0.5 %" or a fraction such as 0.01; (0, 100 %] */
int
value_share(struct conf *c, size_t off, const char *v, const char **why)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);

	while (*end == ' ')
		end++;
	if (*end == '%') {
		x /= 100;
		end++;
	}
	if (end == v || *end || errno || !(x > 0 && x <= 1)) {
		*why = "expected a share such as 1% or 0.01";
		return -1;
	}
	*(double *)((char *)c + off) = x;
	return 0;
}

/* "auto" (stored as 0: the daemon derives the value), or a share */
int
value_share_auto(struct conf *c, size_t off, const char *v, const char **why)
{
	if (strcmp(v, "auto") == 0) {
		*(double *)((char *)c + off) = 0;
		return 0;
	}
	if (value_share(c, off, v, why) < 0) {
		*why = "expected auto or a share such as 1% or 0.01";
		return -1;
	}
	return 0;
}

static const struct {
	conf_parse_f *parse;
	const char *syntax;
} syntaxes[] = {
	{value_string, "TEXT"},
	{value_node_name, "NAME (letters, digits, - . _; 63 at most)"},
	{value_size, "SIZE (bytes, or with K, M or G: 64KB, 256MB)"},
	{value_cache_dir, "\"PATH SIZE\" (PATH absolute)"},
	{value_duration, "DURATION (250ms, 30s, 5m, 1h; a number alone is "
	    "seconds)"},
	{value_count, "COUNT (1 to 100000)"},
	{value_size_auto, "SIZE | auto"},
	{value_count_auto, "COUNT | auto"},
	{value_workers, "COUNT (1 to 64) | auto"},
	{value_hostport, "ADDRESS:PORT"},
	{value_icp_listen, "ADDRESS:PORT | auto | none"},
	{value_onoff, "on | off"},
	{value_allow, "CIDR (10.0.0.0/8, ::1/128)"},
	{value_refresh_pattern, "\"[-i] REGEX MIN PERCENT MAX\" (minutes)"},
	{value_host_pattern, "HOST (a name, *.domain, or *)"},
	{value_bundle, "FILE (PEM certificates)"},
	{value_port, "PORT"},
	{value_sharing, "none | summary | icp"},
	{value_placement, "none | hash"},
	{value_weight, "WEIGHT (over 0, at most 1000000)"},
	{value_admit_hits, "COUNT (0 to 15)"},
	{value_forwarded_for, "add | forwarded | keep | strip"},
	{value_peer, "\"NAME HOST:PORT [type=sumcache|squid-digest] "
	    "[icp=PORT] [proxy_only] [weight=W]\""},
	{value_peer_dns, "\"HOST:PORT [proxy_only]\""},
	{value_nameservers, "\"IP[:PORT] ...\""},
	{value_hash, "xxh3 | squid-md5"},
	{value_share, "SHARE (1% or 0.01)"},
	{value_share_auto, "SHARE (1% or 0.01) | auto"},
};

const char *
value_syntax(conf_parse_f *parse)
{
	for (size_t i = 0; i < sizeof(syntaxes) / sizeof(syntaxes[0]); i++)
		if (syntaxes[i].parse == parse)
			return syntaxes[i].syntax;
	return "VALUE";
}
