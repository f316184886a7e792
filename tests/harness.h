/*
 * Integration-test harness: real processes on loopback. Starts the
 * test origin and the sumcache binary on free ports, talks to them with
 * libcurl or raw sockets, and stops them by PID.
 */
#ifndef HARNESS_H
#define HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct env {
	pid_t origin;
	pid_t proxy;
	int oport;
	int tport;      /* the origin's TLS port (origin_start_tls), or 0 */
	int pport;
	char dir[256];  /* per-test scratch directory */
	char log[300];  /* the proxy's access log */
	int nofile;     /* the proxy's RLIMIT_NOFILE, or 0 as inherited */
	const char *conf_file; /* the proxy's -c, read before the -o's */
};

struct resp {
	long status;
	char *body;
	size_t len;
	char *head;     /* all response head lines */
};

int harness_free_port(void);
pid_t harness_spawn(char *const argv[], const char *out_path);
/* The same with RLIMIT_NOFILE (soft and hard) set to nofile, if > 0. */
pid_t harness_spawn_nofile(char *const argv[], const char *out_path,
    int nofile);
bool harness_wait_port(int port, int ms);
bool harness_wait_addr(const char *host, int port, int ms);
/* Sends sig and waits up to ms; returns the exit status or -1. */
int harness_stop(pid_t pid, int sig, int ms);

/* The environment of the running test (each Criterion test is a process
 * of its own), and suite fixtures that start and stop it with defaults. */
extern struct env E;
void env_up(void);
void env_down(void);

/* The test origin alone, in a fresh scratch directory. */
void origin_start(struct env *e);
/* The same, answering over TLS too on e->tport with the certificate and
 * key at these paths (tests/tlsfiles.h); the dir is made first by
 * origin_dir, so the files can be written into it. */
void origin_dir(struct env *e);
void origin_start_tls(struct env *e, const char *cert, const char *key);

/* Origin plus one sumcache with extra "-o name=value" arguments (NULL
 * terminated). */
void env_start(struct env *e, const char *const *opts);
/* The same with the proxy's RLIMIT_NOFILE set to nofile (soft and hard). */
void env_start_nofile(struct env *e, const char *const *opts, int nofile);
void env_stop(struct env *e);
/* The proxy alone, on a free port, after origin_start. */
void proxy_start(struct env *e, const char *const *opts);
/* Stops e's proxy with sig (SIGTERM must end in a clean exit) and starts
 * it again on its port with opts. */
void proxy_restart(struct env *e, const char *const *opts, int sig);

/* GET through the proxy; extra is a NULL-terminated list of header lines. */
void proxy_get(const struct env *e, const char *url,
    const char *const *extra, struct resp *r);
/* Any method through the proxy with an optional body; chunked uploads the
 * body with Transfer-Encoding: chunked. */
void proxy_request(const struct env *e, const char *method, const char *url,
    const char *const *extra, const char *body, size_t blen, bool chunked,
    struct resp *r);
/* The same through any proxy port, or straight to the URL's server when
 * via_port is 0. */
void http_request(int via_port, const char *method, const char *url,
    const char *const *extra, const char *body, size_t blen, bool chunked,
    struct resp *r);
/* The same through a proxy at host:via_port (an IPv4 address). */
void http_request_at(const char *host, int via_port, const char *method,
    const char *url, const char *const *extra, const char *body,
    size_t blen, bool chunked, struct resp *r);
/* A client that keeps its connection to the proxy from one request to
 * the next, so that one worker answers them all (at workers N each
 * connection lives on one): for what a worker keeps between requests,
 * such as its origin connections. */
struct keepalive;
struct keepalive *keepalive_new(void);
/* GET through e's proxy on k's connection (a new one the first time, or
 * if the proxy closed it). */
void keepalive_get(struct keepalive *k, const struct env *e,
    const char *url, struct resp *r);
/* Accepts NULL; clears *k. */
void keepalive_free(struct keepalive **k);
void resp_free(struct resp *r);
/* Value of a response header (first match), or NULL; static storage. */
const char *resp_header(const struct resp *r, const char *name);

/* How many requests the origin received whose target contains needle;
 * *conditional (if not NULL) counts those that were conditional. */
int origin_count(const struct env *e, const char *needle, int *conditional);

/* A TCP connection to 127.0.0.1:port (the test fails if it cannot). */
int harness_connect(int port);

/* Writes raw bytes to the proxy and reads until the proxy closes or ms
 * pass; returns what was read (malloc'd) and whether it closed. */
char *raw_exchange(int port, const char *req, size_t len, int ms,
    bool *closed);
char *raw_exchange_at(const char *host, int port, const char *req,
    size_t len, int ms, bool *closed);

/* A metric's value from /metrics (family{labels} or a bare name); -1
 * when absent. */
double proxy_metric(const struct env *e, const char *series);
/* Polls the proxy's metric until it is >= want or ms pass; returns it. */
double proxy_wait_metric(const struct env *e, const char *series,
    double want, int ms);
double port_metric(int port, const char *series);
double metric_at(const char *host, int port, const char *series);
/* Polls series at host:port until it reaches want or ms pass; its last
 * value. */
double metric_wait_at(const char *host, int port, const char *series,
    double want, int ms);

/* A TCP echo server on 127.0.0.1:port (one connection at a time), ready
 * when this returns. */
pid_t harness_echo_server(int port);

/* A cluster of sumcache nodes sharing summaries, all peered with each
 * other, over the origin of an env started with origin_start. */
#define CLUSTER_MAX 4
struct node {
	pid_t pid;
	char host[16];  /* IPv4 address it listens on */
	int port;
	int icp_port;   /* UDP, used with cluster.icp */
	char name[16];
	char log[320];
	char out[320];
	const char *conf_file;  /* -c FILE, holding its peer lines, or NULL */
};
struct cluster {
	int n;
	struct node nodes[CLUSTER_MAX];
	char key_file[320];
	const char *const *opts;  /* extra -o values for every node */
	const char *peer_flags;   /* appended to every peer line, or NULL */
	const char *peer_dns;     /* "HOST:PORT": peer_dns, not peer lines */
	bool icp;                 /* sharing icp, each node on its icp_port */
	const char *cache_dir_size; /* each node a cache_dir of this size */
};
/* Picks ports and names (a, b, c...), all on 127.0.0.1, and starts every
 * node. */
void cluster_start(struct env *e, struct cluster *cl, int n,
    const char *const *opts, const char *peer_flags);
/* The same without starting them, for a test to change first. */
void cluster_init(struct env *e, struct cluster *cl, int n,
    const char *const *opts, const char *peer_flags);
/* (Re)starts node i on its port. */
void node_start(struct env *e, struct cluster *cl, int i);
/* SIGTERM; expects a clean exit (ASan leaks fail it). */
void node_stop(struct node *nd);
void cluster_stop(struct cluster *cl);
/* The origin and the cluster of the running test, for suites of
 * clusters: cluster_suite_up starts the origin, the test starts the
 * nodes it wants in CL, and cluster_suite_down stops all of them. */
extern struct env CE;
extern struct cluster CL;
void cluster_suite_up(void);
void cluster_suite_down(void);
/* GET url through node nd; metric of node nd. */
void node_get(const struct node *nd, const char *url, struct resp *r);
double node_metric(const struct node *nd, const char *series);
/* Polls node nd's metric until it is >= want or ms pass; returns it. */
double node_wait_metric(const struct node *nd, const char *series,
    double want, int ms);
/* Waits (5 s at most, then fails the test) until `to` holds `from`'s
 * current summary, epoch and sequence. */
void node_wait_synced(const struct node *from, const struct node *to);
/* Inter-proxy messages of type nd has sent to peer. */
double node_sent(const struct node *nd, const char *type, const char *peer);
/* nd's series family{peer="peer"}. */
double node_peer_metric(const struct node *nd, const char *family,
    const char *peer);

/*
 * A misbehaving peer (tests/fakepeer.c) on a free port of 127.0.0.1, in
 * cl's cluster key, signing as name: it claims every URL; object requests
 * get a 504 after delay_ms ("false"), nothing ("hang"), or a 200 of
 * answer_bytes in ten parts delay_ms apart ("slow"); pushes and
 * invalidations get answer_bytes of forged log lines. Its output goes to
 * name.out in e's directory. Stop it with harness_stop.
 */
pid_t fakepeer_start(const struct env *e, const struct cluster *cl,
    const char *name, const char *objects, int delay_ms, long answer_bytes,
    int *port);
/* The same answering a peer link over TLS with the certificate and key
 * in these PEM files (NULL, NULL: no TLS). */
pid_t fakepeer_start_tls(const struct env *e, const struct cluster *cl,
    const char *name, const char *objects, int delay_ms, long answer_bytes,
    const char *cert, const char *key, int *port);
/* Node a of the cluster suite's CL alone, its one peer a fake peer z
 * started as fakepeer_start says (objects, delay_ms, answer_bytes), with
 * more -o values (NULL-terminated, or NULL); z's pid in *z, for the
 * suite's end to stop. */
struct node *node_with_fakepeer(const char *objects, int delay_ms,
    long answer_bytes, const char *const *more, pid_t *z);
/* The same, z answering a peer link over TLS with the certificate and
 * key in these PEM files (NULL: plain HTTP only), its port in *zport.
 * The cluster (CL) must have been made by cluster_init, for its key. */
struct node *node_with_fakepeer_tls(const char *objects, int delay_ms,
    long answer_bytes, const char *cert, const char *key,
    const char *const *more, pid_t *z, int *zport);

/* Whether the file at path gets a line holding n1 and n2 (n2 may be
 * NULL) within ms: logs are written through buffers. */
bool harness_file_has(const char *path, const char *n1, const char *n2,
    int ms);

/* The segment file of the cache_dir at cache holding the body of the test
 * origin's /obj/NAME (its first bytes: name repeated), and the body's
 * offset there. */
bool harness_find_in_segments(const char *cache, const char *name,
    char *path, size_t plen, off_t *at);

/* Room for a crowd of a thousand connections (RLIMIT_NOFILE of 4096),
 * in the test and in the nodes it starts. */
void harness_raise_nofile(void);

/* utime + stime of a process, in seconds. */
double harness_cpu_seconds(pid_t pid);

/* VmRSS of a process in KiB. */
long proc_rss_kb(pid_t pid);

/* "http://127.0.0.1:ORIGIN_PORT" path, in one of 8 static buffers used in
 * turn (so a few may be alive at once). */
char *env_url(const struct env *e, const char *path);

/* The monotonic clock in milliseconds. */
long harness_now_ms(void);

/* The sumcache binary the tests run: SUMCACHE_UNDER_TEST from the
 * environment (tests/run.sh's ThreadSanitizer daemon), else this build's
 * (SUMCACHE_BIN). */
const char *harness_sumcache(void);

/* "workers=N" from SUMCACHE_TEST_WORKERS (the suites run again at N
 * workers: tests/run.sh), "workers=1" without it (the default is auto):
 * the first option of every node started, so a test's own workers=
 * wins. */
const char *harness_workers_opt(void);
/* How many workers the suites' nodes run: SUMCACHE_TEST_WORKERS's, or 1. */
int harness_workers(void);

#endif
