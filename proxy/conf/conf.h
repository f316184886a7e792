/*
 * Configuration: one table of directives drives the config file, -o
 * overrides, the -t check, --help and the documented defaults.
 */
#ifndef CONF_H
#define CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "acl.h"
#include "hostpat.h"
#include "peers.h"
#include "refresh.h"

enum sharing {
	SHARING_NONE = 0,
	SHARING_SUMMARY = 1,
	SHARING_ICP = 2,
};

/* What a request sent upstream says of the client (upstream.c). */
enum forwarded_for {
	FORWARDED_FOR_ADD = 0,       /* X-Forwarded-For: ..., CLIENT */
	FORWARDED_FOR_FORWARDED = 1, /* Forwarded: ..., for=CLIENT (RFC 7239) */
	FORWARDED_FOR_KEEP = 2,      /* both as the client sent them */
	FORWARDED_FOR_STRIP = 3,     /* neither */
};

/* Checks a configuration cannot make by itself, by the rooms that own
 * what they check (a cache_dir is the disk tier's), run where the value
 * is read so that an error names its file and line. Any may be NULL. */
struct conf_hooks {
	/* A cache_dir of size bytes at path can be used: 0, or -1 with a
	 * sentence in err. */
	int (*dir_check)(const char *path, uint64_t size, char *err,
	    size_t elen);
	/* The interception CA in these files can sign leaves, for every
	 * host intercept names: 0, or -1 with a sentence (naming the file)
	 * in err. */
	int (*ca_check)(const char *cert, const char *key,
	    const struct hostpats *intercept, char *err, size_t elen);
	/* path is a PEM file of CA certificates: 0, or -1 with a
	 * sentence in err. */
	int (*bundle_check)(const char *path, char *err, size_t elen);
};

#define CONF_MAX_PORTS 32
#define CONF_MAX_PEERS 64
#define CONF_MAX_DIRECTIVES 64

struct conf {
	char *node_name;
	char *http_listen;       /* "addr:port" as given */
	size_t cache_mem;
	size_t max_object_size;     /* 0 in the table: auto, conf_finish */
	size_t max_memory_object_size;
	char *cache_dir;            /* NULL: memory only */
	size_t cache_dir_size;
	size_t inflight_mem;     /* copies of misses being stored; 0: auto */
	uint32_t max_connections; /* 0: derived (accept.c) */
	uint32_t workers;         /* 0: auto (conf_workers) */
	struct acl allow;
	struct acl purge_allow;  /* who may PURGE */
	uint16_t connect_ports[CONF_MAX_PORTS];
	unsigned n_connect_ports;
	char *access_log;        /* path, "stdout" or "none" */
	enum sharing sharing;
	bool placement_hash;        /* placement hash: keys have owners */
	double placement_weight;    /* this node's, as peers' lines say */
	uint32_t placement_admit_hits;  /* admit.h */
	enum forwarded_for forwarded_for;
	struct peer_spec peers[CONF_MAX_PEERS];
	unsigned n_peers;
	struct peer_spec peer_dns;  /* host "" = not set */
	uint32_t peer_dns_interval_ms;
	char *dns_nameservers;      /* "IP[:PORT] ...", NULL = resolv.conf */
	char *icp_listen;           /* "addr:port", "auto" or "none" */
	uint32_t icp_timeout_ms;    /* 0: from the peers' round trips */
	bool digest_generation;     /* serve a Squid Cache Digest */
	uint32_t digest_rebuild_period_ms;
	char *cluster_key_file;
	uint8_t *cluster_key;    /* the file's bytes, read by conf_load_key */
	size_t cluster_key_len;
	enum sum_scheme summary_hash;
	uint32_t summary_bits_per_entry;
	uint32_t summary_hash_functions;
	uint32_t peers_asked;      /* claimants asked on a miss, at most */
	double summary_threshold;  /* share of cached objects; 0: auto */
	uint32_t summary_max_interval_ms;
	size_t summary_max_size;    /* 0: derived from cache_mem */
	uint32_t peer_connect_timeout_ms;
	uint32_t peer_timeout_ms;
	uint32_t header_timeout_ms;
	uint32_t idle_timeout_ms;
	uint32_t connect_timeout_ms;
	uint32_t origin_timeout_ms;
	uint32_t collapsed_forwarding_timeout_ms;
	uint64_t range_fetch_limit;
	struct refresh_rules refresh;  /* refresh_pattern, in order */
	uint32_t tunnel_idle_timeout_ms;
	/* TLS interception (proxy/cert/): the CONNECT hosts intercepted,
	 * those never intercepted (they win), the CA; and the CAs trusted
	 * for https origins beside the system's */
	struct hostpats tls_intercept;
	struct hostpats tls_no_intercept;
	char *tls_ca_cert;
	char *tls_ca_key;
	char *tls_upstream_ca;      /* NULL: the system's trust only */
	uint32_t tls_splice_after_reject_ms; /* 0: never splice */
	uint32_t shutdown_timeout_ms;
	uint32_t status_interval_ms;  /* status page sampling */
	size_t max_header_size;
	size_t max_request_line;
	uint32_t max_headers;
	/* which directives the user has set (a repeatable one's first
	 * value replaces its defaults) */
	uint64_t set_mask;
	/* the text each scalar directive was set from, defaults included,
	 * by table order: what a reload compares */
	char *given[CONF_MAX_DIRECTIVES];
	const struct conf_hooks *hooks;  /* conf_read's; borrowed */
};

/* Fills *c with every directive's default. 0, or -1 on ENOMEM. */
int conf_defaults(struct conf *c);

/*
 * Reads a libconfig file over the current values. On error returns -1 and
 * writes "file:line: reason" into err.
 */
int conf_load_file(struct conf *c, const char *path, char *err, size_t elen);

/* Applies one "name=value" override (-o). -1 with the reason in err. */
int conf_override(struct conf *c, const char *nv, char *err, size_t elen);

/* The workers c asks for: workers, or with auto the CPUs this process
 * may run on (its affinity mask), at most CONF_WORKERS_MAX. */
#define CONF_WORKERS_MAX 64
unsigned conf_workers(const struct conf *c);

/* After everything is read: derives the auto values that depend on other
 * directives (max_object_size), then checks the directives against each
 * other. */
int conf_finish(struct conf *c, char *err, size_t elen);

/* Writes to out, one "sumcache: warning: ..." line each, what a finished
 * configuration allows but surely does not mean (peers left unused);
 * returns how many. */
int conf_warn(const struct conf *c, FILE *out);

/* Reads cluster_key_file when sharing needs it. -1 with the reason. */
int conf_load_key(struct conf *c, char *err, size_t elen);

/* Defaults, then file (NULL: none), then the -o overrides ovr[0..novr),
 * each value checked as it is read, with hooks (borrowed while c lives;
 * NULL: none): what conf_finish takes. -1 with the reason (file:line) in
 * err. */
int conf_read(struct conf *c, const char *file, char *const *ovr, int novr,
    const struct conf_hooks *hooks, char *err, size_t elen);

/*
 * A reload: every directive that cannot change on a running node (the
 * table's restart column) and that next sets otherwise than cur is set
 * back to cur's value in next, and named on stderr. Returns how many, or
 * -1 with the reason in err. Before conf_finish(next).
 */
int conf_keep_restart_only(const struct conf *cur, struct conf *next,
    char *err, size_t elen);

/* Swaps the strings of the restart-only directives, which hold the same
 * text in both: the running modules keep pointers to cur's, which must
 * outlive next's. */
void conf_adopt_restart_only(struct conf *cur, struct conf *next);

/* The names of the scalar directives whose text differs between a and
 * b, at most max of them (the lists say what changed themselves). */
size_t conf_changed(const struct conf *a, const struct conf *b,
    const char **names, size_t max);

/* Prints every directive with its default and help text. */
void conf_print_help(FILE *f);

/* The directive table as documentation (the manual, --help): entry i of
 * conf_docs(), all borrowed from the table. */
struct conf_doc {
	const char *name;
	const char *syntax;    /* value.h's value_syntax */
	const char *dflt;      /* NULL: none; "": computed */
	const char *help;
	bool repeatable;
	bool restart;          /* a reload keeps the running value */
};
size_t conf_docs(void);
void conf_doc(size_t i, struct conf_doc *out);

void conf_clear(struct conf *c);

#endif
