/*
 * Reading a Squid native access.log as a trace: the replayer and the
 * simulator read traces the same way, so a simulated cluster sees the
 * same clients on the same proxies as a replayed one.
 *
 *   time elapsed client code/status bytes method URL ...
 *
 * Only GETs of http:// URLs are requests; other lines are counted and left
 * out. Clients are numbered in address order (numerically for IPv4), and
 * client c goes through proxy c mod N: the paper's assignment, and the
 * generator's sites.
 */
#ifndef TRACE_H
#define TRACE_H

#include <stddef.h>

struct trace_line {
	const char *path;
	size_t lineno;
	double time;           /* seconds, as logged */
	unsigned client;       /* first-seen number: see trace_read */
	unsigned long long bytes;
	const char *url;
};

/* Called for each request in log order; a negative return stops the read
 * (the callback has said why on stderr). */
typedef int (*trace_fn)(void *arg, const struct trace_line *l);

struct trace_clients {
	size_t n;
	unsigned *order;  /* first-seen number -> number in address order */
	size_t skipped;   /* lines that were not GET http:// */
};

/*
 * Reads path, calling fn per request with the client's first-seen number;
 * the caller renumbers what it kept with c->order once the whole log is
 * read. Returns 0, or -1 with the file and line on stderr (prefixed by
 * prog) for a line that is not a Squid native log line or is too long.
 */
int trace_read(const char *path, const char *prog, trace_fn fn, void *arg,
    struct trace_clients *c);
void trace_clients_free(struct trace_clients *c);

/*
 * The demo-origin target (path and query) a logged URL is replayed as,
 * newly allocated (NULL on ENOMEM): a URL already on a demo origin keeps
 * its path and query; any other (a real log) becomes /real/HASH?size=BYTES,
 * one object per distinct URL, of the size the log gave it.
 */
char *trace_demo_target(const char *url, unsigned long long bytes);

#endif
