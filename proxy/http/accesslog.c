/*
 * Squid native access.log lines:
 *   time.ms elapsed client code/status bytes method URL ident hier/host type
 * Lines are buffered and flushed by a timer so a busy proxy does not make a
 * write() per request; a crash loses at most the last flush interval.
 */
#include "accesslog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_assert.h"

struct accesslog {
	char *path;
	FILE *f;
	int kind; /* 0 none, 1 stdout, 2 file */
};

struct accesslog *
accesslog_open(const char *path)
{
	struct accesslog *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	if (strcmp(path, "none") == 0)
		return l;
	if (strcmp(path, "stdout") == 0) {
		l->kind = 1;
		l->f = stdout;
		return l;
	}
	l->kind = 2;
	l->path = strdup(path);
	l->f = l->path ? fopen(path, "a") : NULL;
	if (l->f == NULL) {
		free(l->path);
		free(l);
		return NULL;
	}
	setvbuf(l->f, NULL, _IOFBF, 65536);
	return l;
}

void
accesslog_write(struct accesslog *l, const struct accesslog_entry *e)
{
	if (l == NULL || l->f == NULL)
		return;
	long elapsed = (e->end.tv_sec - e->start.tv_sec) * 1000 +
	    (e->end.tv_usec - e->start.tv_usec) / 1000;
	fprintf(l->f, "%ld.%03ld %6ld %s %s%s/%03d %llu %.*s %s - %s/%s %.*s\n",
	    (long)e->end.tv_sec, (long)e->end.tv_usec / 1000, elapsed,
	    e->client, squid_code_name(e->code), e->cut == CUT_TIMEDOUT ?
	    "_TIMEDOUT" : e->cut == CUT_ABORTED ? "_ABORTED" : "",
	    e->status, (unsigned long long)e->bytes,
	    e->method_len, e->method, e->url, squid_hier_name(e->hier), e->hier_host,
	    e->content_type_len ? e->content_type_len : 1,
	    e->content_type_len ? e->content_type : "-");
}

void
accesslog_flush(struct accesslog *l)
{
	if (l != NULL && l->f != NULL)
		fflush(l->f);
}

int
accesslog_reopen(struct accesslog *l)
{
	if (l == NULL || l->kind != 2)
		return 0;
	FILE *f = fopen(l->path, "a");
	if (f == NULL)
		return -1;
	setvbuf(f, NULL, _IOFBF, 65536);
	fclose(l->f);
	l->f = f;
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
		fclose(l->f);
	else if (l->f)
		fflush(l->f);
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
