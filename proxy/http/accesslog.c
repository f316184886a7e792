/*
 * Squid native access.log lines:
 *   time.ms elapsed client code/status bytes method URL ident hier/host type
 *
 * Each worker formats its lines into a buffer of its own (struct
 * accesslog_buf) and writes it whole with one write(2) on the log's
 * descriptor, opened O_APPEND, when it is nearly full and from the
 * worker's flush timer: a busy proxy makes no write per request, workers
 * share no lock per line, and the kernel appends each write in one
 * piece, so lines of two workers never interleave mid-line (a line
 * longer than a buffer goes alone, in one write). A crash loses at most
 * the last flush interval. Lines of two workers may appear out of time
 * order by up to that interval, as in Squid's SMP logs.
 */
#include "accesslog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sc_assert.h"

#define BUF_BYTES 65536

/* The log's descriptor; a reopen changes it only while every worker is
 * stopped between requests (reload.c). */
struct accesslog {
	char *path;
	int fd;   /* -1: none */
	int kind; /* 0 none, 1 stdout, 2 file */
};

struct accesslog_buf {
	size_t len;
	char data[BUF_BYTES];
};

struct accesslog *
accesslog_open(const char *path)
{
	struct accesslog *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->fd = -1;
	if (strcmp(path, "none") == 0)
		return l;
	if (strcmp(path, "stdout") == 0) {
		l->kind = 1;
		l->fd = STDOUT_FILENO;
		return l;
	}
	l->kind = 2;
	l->path = strdup(path);
	l->fd = l->path ? open(path, O_WRONLY | O_APPEND | O_CREAT |
	    O_CLOEXEC, 0640) : -1;
	if (l->fd < 0) {
		int err = errno;
		free(l->path);
		free(l);
		errno = err;
		return NULL;
	}
	return l;
}

struct accesslog_buf *
accesslog_buf_new(void)
{
	return calloc(1, sizeof(struct accesslog_buf));
}

void
accesslog_buf_free(struct accesslog_buf **b)
{
	free(*b);
	*b = NULL;
}

/* One write, retried where it stopped; a failing log loses the lines
 * rather than stop the proxy. */
static void
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static int
format(char *out, size_t room, const struct accesslog_entry *e)
{
	long elapsed = (e->end.tv_sec - e->start.tv_sec) * 1000 +
	    (e->end.tv_usec - e->start.tv_usec) / 1000;

	return snprintf(out, room,
	    "%ld.%03ld %6ld %s %s%s/%03d %llu %.*s %s - %s/%s %.*s\n",
	    (long)e->end.tv_sec, (long)e->end.tv_usec / 1000, elapsed,
	    e->client, squid_code_name(e->code), e->cut == CUT_TIMEDOUT ?
	    "_TIMEDOUT" : e->cut == CUT_ABORTED ? "_ABORTED" : "",
	    e->status, (unsigned long long)e->bytes,
	    e->method_len, e->method, e->url, squid_hier_name(e->hier),
	    e->hier_host, e->content_type_len ? e->content_type_len : 1,
	    e->content_type_len ? e->content_type : "-");
}

void
accesslog_write(struct accesslog *l, struct accesslog_buf *b,
    const struct accesslog_entry *e)
{
	if (l == NULL || l->fd < 0)
		return;
	int n = format(b->data + b->len, BUF_BYTES - b->len, e);
	if (n < 0)
		return;
	if ((size_t)n < BUF_BYTES - b->len) {
		b->len += (size_t)n;
		return;
	}
	/* no room left for it: what is there goes first, then the line */
	accesslog_flush(l, b);
	if ((size_t)n < BUF_BYTES) {
		b->len = (size_t)format(b->data, BUF_BYTES, e);
		return;
	}
	char *line = malloc((size_t)n + 1);
	if (line == NULL)
		return;
	format(line, (size_t)n + 1, e);
	write_all(l->fd, line, (size_t)n);
	free(line);
}

void
accesslog_flush(struct accesslog *l, struct accesslog_buf *b)
{
	if (l != NULL && l->fd >= 0 && b->len > 0)
		write_all(l->fd, b->data, b->len);
	b->len = 0;
}

int
accesslog_reopen(struct accesslog *l)
{
	if (l == NULL || l->kind != 2)
		return 0;
	int fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0640);
	if (fd < 0)
		return -1;
	close(l->fd);
	l->fd = fd;
	return 0;
}

void
accesslog_close(struct accesslog **lp)
{
	struct accesslog *l = *lp;

	if (l == NULL)
		return;
	*lp = NULL;
	if (l->kind == 2)
		close(l->fd);
	free(l->path);
	free(l);
}

const char *
squid_code_name(enum squid_code c)
{
	static const char *const names[SQ_NCODES] = {
#define SQUID_CODE_NAME(name, status) #name,
		SQUID_CODES(SQUID_CODE_NAME)
#undef SQUID_CODE_NAME
	};

	SC_ASSERT((unsigned)c < SQ_NCODES);
	return names[c];
}

const char *
squid_code_cache_status(enum squid_code c)
{
	static const char *const params[SQ_NCODES] = {
#define SQUID_CODE_STATUS(name, status) status,
		SQUID_CODES(SQUID_CODE_STATUS)
#undef SQUID_CODE_STATUS
	};

	SC_ASSERT((unsigned)c < SQ_NCODES);
	return params[c];
}

const char *
squid_hier_name(enum squid_hier h)
{
	static const char *const names[SQ_NHIERS] = {
#define SQUID_HIER_NAME(name) #name,
		SQUID_HIERS(SQUID_HIER_NAME)
#undef SQUID_HIER_NAME
	};

	SC_ASSERT((unsigned)h < SQ_NHIERS);
	return names[h];
}
