/* Access log in Squid's native format, so existing log tools read it. */
#ifndef ACCESSLOG_H
#define ACCESSLOG_H

#include <stdint.h>
#include <sys/time.h>

struct accesslog;

struct accesslog_entry {
	struct timeval start;
	struct timeval end;
	const char *client;  /* address text */
	const char *code;    /* TCP_MISS, TCP_MEM_HIT, ... */
	int status;
	uint64_t bytes;      /* sent to the client, head included */
	const char *method;
	int method_len;
	const char *url;
	const char *hier;    /* HIER_DIRECT, HIER_NONE, ... */
	const char *hier_host; /* "-" when none */
	const char *content_type;
	int content_type_len;
};

/* Opens path ("stdout", "none", or a file appended to). NULL on error with
 * errno set. */
struct accesslog *accesslog_open(const char *path);
void accesslog_write(struct accesslog *l, const struct accesslog_entry *e);
/* Flushes buffered lines; called from a timer and at exit. */
void accesslog_flush(struct accesslog *l);
/* Reopens the file (SIGHUP, after rotation); -1 keeps the old one. */
int accesslog_reopen(struct accesslog *l);
void accesslog_close(struct accesslog **l);

#endif
