/*
 * The configuration as a whole, once every directive is read (conf.c
 * reads them one at a time): the rules between directives, and the
 * cluster key file, read only when sharing needs it. Each refusal says
 * which directives and why; -t runs the same checks as start-up.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include "conf.h"

#include <sched.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* With a cache_dir, max_object_size's auto: what package mirrors and
 * software downloads need, which memory could not hold. */
#define DISK_MAX_OBJECT (1ull << 30)

/* Interception needs a CA that can sign leaves, checked as start-up
 * will load it: a node must not start (or pass -t) only to fail at the
 * first intercepted connection. */
static int
tls_check(const struct conf *c, char *err, size_t elen)
{
	bool ca_given = c->tls_ca_cert != NULL || c->tls_ca_key != NULL;

	if ((c->tls_intercept.n > 0 || ca_given) &&
	    (c->tls_ca_cert == NULL || c->tls_ca_key == NULL)) {
		snprintf(err, elen, "%s needs both tls_ca_cert and tls_ca_key "
		    "(sumcache --make-ca DIR writes a pair)",
		    c->tls_intercept.n > 0 ? "tls_intercept" : "a CA");
		return -1;
	}
	if (c->hooks == NULL)
		return 0;
	if (ca_given && c->hooks->ca_check != NULL &&
	    c->hooks->ca_check(c->tls_ca_cert, c->tls_ca_key,
	    &c->tls_intercept, err, elen) < 0)
		return -1;
	return 0;
}

unsigned
conf_workers(const struct conf *c)
{
	cpu_set_t set;
	unsigned n = c->workers;

	if (n == 0)
		n = sched_getaffinity(0, sizeof(set), &set) == 0 ?
		    (unsigned)CPU_COUNT(&set) : 1;
	return n < 1 ? 1 : n > CONF_WORKERS_MAX ? CONF_WORKERS_MAX : n;
}

int
conf_finish(struct conf *c, char *err, size_t elen)
{
	if (c->max_object_size == 0 && c->cache_dir == NULL)
		c->max_object_size = c->max_memory_object_size;
	else if (c->max_object_size == 0)
		/* a small cache_dir keeps several of its largest */
		c->max_object_size = c->cache_dir_size / 4 < DISK_MAX_OBJECT ?
		    c->cache_dir_size / 4 : DISK_MAX_OBJECT;
	/* nothing larger than max_object_size is kept anywhere */
	if (c->max_memory_object_size > c->max_object_size)
		c->max_memory_object_size = c->max_object_size;
	if (c->max_memory_object_size > c->cache_mem) {
		snprintf(err, elen, "max_memory_object_size (%zu) exceeds "
		    "cache_mem (%zu)", c->max_memory_object_size, c->cache_mem);
		return -1;
	}
	if (c->cache_dir == NULL && c->max_object_size > c->cache_mem) {
		snprintf(err, elen, "max_object_size (%zu) exceeds cache_mem "
		    "(%zu), and there is no cache_dir", c->max_object_size,
		    c->cache_mem);
		return -1;
	}
	if (c->cache_dir != NULL && c->max_object_size > c->cache_dir_size / 2) {
		snprintf(err, elen, "max_object_size (%zu) exceeds half the "
		    "cache_dir (%zu)", c->max_object_size, c->cache_dir_size);
		return -1;
	}
	if (c->inflight_mem != 0 &&
	    c->max_memory_object_size > c->inflight_mem) {
		snprintf(err, elen, "max_memory_object_size (%zu) exceeds "
		    "inflight_mem (%zu): such an object could never be cached",
		    c->max_memory_object_size, c->inflight_mem);
		return -1;
	}
	if (c->max_request_line > c->max_header_size) {
		snprintf(err, elen, "max_request_line exceeds max_header_size");
		return -1;
	}
	if (tls_check(c, err, elen) < 0)
		return -1;
	if (c->status_interval_ms < 100) {
		snprintf(err, elen, "status_interval must be at least 100ms");
		return -1;
	}
	if (c->max_header_size < 1024) {
		snprintf(err, elen, "max_header_size must be at least 1KB");
		return -1;
	}
	if (c->summary_bits_per_entry < 4 || c->summary_bits_per_entry > 64) {
		snprintf(err, elen, "summary_bits_per_entry must be 4 to 64");
		return -1;
	}
	if (c->summary_hash_functions > CBF_MAX_K ||
	    (c->summary_hash == SUM_SQUID_MD5 &&
	    c->summary_hash_functions != SUM_SQUID_K)) {
		snprintf(err, elen, "summary_hash_functions must be 1 to 16, "
		    "and 4 with squid-md5");
		return -1;
	}
	if (c->peers_asked < 1 || c->peers_asked > PEERS_ASKED_MAX) {
		snprintf(err, elen, "peers_asked must be 1 to %d",
		    PEERS_ASKED_MAX);
		return -1;
	}
	if (c->placement_hash && c->sharing == SHARING_ICP) {
		snprintf(err, elen, "placement hash works with sharing summary "
		    "or none (ICP would ask every peer before the owner)");
		return -1;
	}
	if (c->sharing != SHARING_NONE && c->n_peers == 0 &&
	    c->peer_dns.host[0] == '\0') {
		snprintf(err, elen, "sharing %s needs a peer or peer_dns",
		    c->sharing == SHARING_ICP ? "icp" : "summary");
		return -1;
	}
	size_t squids = 0;
	for (size_t i = 0; i < c->n_peers; i++)
		squids += c->peers[i].type == PEER_SQUID_DIGEST;
	if (squids > 0 && c->sharing != SHARING_SUMMARY) {
		snprintf(err, elen, "peer type=squid-digest needs sharing "
		    "summary (with sharing icp, a Squid is an ordinary peer)");
		return -1;
	}
	/* the key signs summaries; Squid peers read our digest instead */
	if (c->sharing == SHARING_SUMMARY && c->cluster_key_file == NULL &&
	    (squids < c->n_peers || c->peer_dns.host[0] != '\0')) {
		snprintf(err, elen, "sharing summary with sumcache peers needs "
		    "cluster_key_file");
		return -1;
	}
	return 0;
}

int
conf_warn(const struct conf *c, FILE *out)
{
	int n = 0;

	if (c->sharing == SHARING_NONE && !c->placement_hash &&
	    (c->n_peers > 0 || c->peer_dns.host[0] != '\0')) {
		fprintf(out, "sumcache: warning: %u peer line(s)%s configured, "
		    "but sharing none leaves them unused (set sharing summary "
		    "or icp, or placement hash)\n", c->n_peers, c->peer_dns.host[0] != '\0' ?
		    " and peer_dns" : "");
		n++;
	}
	return n;
}

int
conf_load_key(struct conf *c, char *err, size_t elen)
{
	/* under any sharing mode: the key is the peer links' identity too
	 * (cert/cluster.h); conf_finish said whether it may be missing */
	if (c->cluster_key_file == NULL)
		return 0;
	FILE *f = fopen(c->cluster_key_file, "rb");
	uint8_t buf[4096];
	size_t n = 0;

	if (f == NULL) {
		snprintf(err, elen, "cluster_key_file %s: %s",
		    c->cluster_key_file, strerror(errno));
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	/* a trailing newline from an editor or echo is not key material */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n < WIRE_KEY_MIN) {
		snprintf(err, elen, "cluster_key_file %s: %zu bytes; the key "
		    "needs at least %d (try: head -c 32 /dev/urandom | "
		    "base64 > FILE)", c->cluster_key_file, n, WIRE_KEY_MIN);
		return -1;
	}
	free(c->cluster_key);
	c->cluster_key = malloc(n);
	if (c->cluster_key == NULL) {
		snprintf(err, elen, "out of memory");
		return -1;
	}
	memcpy(c->cluster_key, buf, n);
	c->cluster_key_len = n;
	return 0;
}
