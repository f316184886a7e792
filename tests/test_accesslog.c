/*
 * The access log with several workers (proxy/http/accesslog.c): four
 * threads, each with its own buffer, write lines of every length (one
 * longer than a buffer) into one file at once; every line in the file is
 * whole, and none is lost.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accesslog.h"

#define THREADS 4
#define LINES 5000

struct writer {
	struct accesslog *log;
	int id;
};

static void *
write_lines(void *arg)
{
	struct writer *w = arg;
	struct accesslog_buf *b = accesslog_buf_new();
	static char long_url[80000];
	char url[300];

	cr_assert_not_null(b);
	memset(long_url, 'u', sizeof(long_url) - 1);
	for (int i = 0; i < LINES; i++) {
		/* a URL of 1 to 250 bytes, and now and then one larger than
		 * the buffer: every line ends "t<id>-<i>" */
		int len = snprintf(url, sizeof(url), "http://x/%.*s",
		    i % 240, long_url);
		(void)len;
		char tail[32];
		snprintf(tail, sizeof(tail), "t%d-%d", w->id, i);
		struct accesslog_entry e = {
			.client = "127.0.0.1", .code = SQ_TCP_MEM_HIT,
			.status = 200, .bytes = (uint64_t)i, .method = "GET",
			.method_len = 3, .url = i % 997 == 0 ? long_url : url,
			.hier = SQ_HIER_NONE, .hier_host = "-",
			.content_type = tail, .content_type_len =
			    (int)strlen(tail)};
		accesslog_write(w->log, b, &e);
	}
	accesslog_flush(w->log, b);
	accesslog_buf_free(&b);
	return NULL;
}

Test(accesslog, workers_write_whole_lines_into_one_file)
{
	char path[] = "/tmp/sumcache-accesslog-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	struct accesslog *log = accesslog_open(path);
	cr_assert_not_null(log);
	struct writer w[THREADS];
	pthread_t th[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct writer){log, i};
		cr_assert_eq(pthread_create(&th[i], NULL, write_lines, &w[i]),
		    0);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	accesslog_close(&log);

	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t cap = 1 << 17;
	char *line = malloc(cap);
	int seen[THREADS] = {0}, bad = 0;
	while (fgets(line, (int)cap, f) != NULL) {
		/* whole: its method, and its own tail last, in order */
		int id, n;
		char *last = strrchr(line, ' ');
		if (strncmp(line + strlen(line) - 1, "\n", 1) != 0 ||
		    strstr(line, " GET ") == NULL || last == NULL ||
		    sscanf(last, " t%d-%d", &id, &n) != 2 || id < 0 ||
		    id >= THREADS || n != seen[id]) {
			if (bad++ == 0)
				fprintf(stderr, "not whole: %.120s\n", line);
			continue;
		}
		seen[id]++;
	}
	fclose(f);
	free(line);
	unlink(path);
	cr_assert_eq(bad, 0, "%d lines were not whole or out of order", bad);
	for (int i = 0; i < THREADS; i++)
		cr_assert_eq(seen[i], LINES, "thread %d: %d of %d lines", i,
		    seen[i], LINES);
}
