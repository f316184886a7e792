/*
 * Strict parsing, end to end: each malformed or ambiguous request gets the
 * right status and its connection closed, and the proxy keeps serving.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static void
up(void)
{
	const char *opts[] = {"header_timeout=400ms", NULL};
	env_start(&E, opts);
}

TestSuite(strict, .init = up, .fini = env_down, .timeout = 60);

struct vector {
	const char *name;
	const char *request; /* %d is the origin port */
	int status;
};

static const struct vector vectors[] = {
	{"CL and TE", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "0\r\n\r\n", 400},
	{"two CLs", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400},
	{"CL list", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 5, 6\r\n\r\nhello!", 400},
	{"signed CL", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: +5\r\n\r\nhello", 400},
	{"obs-fold", "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n"
	    "X-A: 1\r\n  folded\r\n\r\n", 400},
	{"NUL in value", "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n"
	    "X-A: a\0b\r\n\r\n", 400},
	{"bare CR", "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\n"
	    "X-A: a\rb\r\n\r\n", 400},
	{"bare LF", "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\n"
	    "X-A: b\r\n\r\n", 400},
	{"space before colon", "GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
	    "Host : x\r\n\r\n", 400},
	{"TE in HTTP/1.0", "POST http://127.0.0.1:%d/echo HTTP/1.0\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
	{"TE chunked twice", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\n"
	    "Host: x\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400},
	{"TE gzip", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\nHost: x\r\n"
	    "Transfer-Encoding: gzip\r\n\r\n", 501},
	{"bad chunk size", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\n"
	    "Host: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"
	    "0\r\n\r\n", 400},
	{"chunk size overflow", "POST http://127.0.0.1:%d/echo HTTP/1.1\r\n"
	    "Host: x\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "10000000000000005\r\nhello\r\n0\r\n\r\n", 400},
	{"missing Host", "GET http://127.0.0.1:%d/ HTTP/1.1\r\n\r\n", 400},
	{"HTTP/2.0", "GET http://127.0.0.1:%d/ HTTP/2.0\r\nHost: x\r\n\r\n",
	    505},
	{"not a URL", "GET /x%d HTTP/1.1\r\nHost: x\r\n\r\n", 400},
};

static void
send_vector(const struct vector *v)
{
	char req[1024];
	bool closed;
	/* the vectors are this file's own constant table */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	int n = snprintf(req, sizeof(req), v->request, E.oport);
#pragma GCC diagnostic pop

	/* the NUL vector: snprintf stops at it, so copy its tail too */
	if (strstr(v->name, "NUL")) {
		const char *tail = v->request + strlen(v->request) + 1;
		req[n++] = '\0';
		memcpy(req + n, tail, strlen(tail));
		n += (int)strlen(tail);
	}
	char *out = raw_exchange(E.pport, req, (size_t)n, 3000, &closed);
	char want[32];
	snprintf(want, sizeof(want), "HTTP/1.1 %d ", v->status);
	cr_expect(strncmp(out, want, strlen(want)) == 0, "%s: got %.40s",
	    v->name, out);
	if (strcmp(v->name, "not a URL") != 0)
		cr_expect(closed, "%s: connection left open", v->name);
	free(out);
}

Test(strict, smuggling_vectors_rejected_and_closed)
{
	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
		send_vector(&vectors[i]);
	cr_assert_eq(origin_count(&E, "/echo", NULL), 0,
	    "nothing ambiguous reached the origin");
	/* and the proxy still serves */
	struct resp r;
	char u[128];
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/ok?max_age=5", E.oport);
	proxy_get(&E, u, NULL, &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_assert_geq(proxy_metric(&E, "sumcache_client_parse_errors_total"),
	    16);
}

Test(strict, oversize_header_is_431)
{
	size_t big = 70 * 1024;
	char *req = malloc(big + 256);
	bool closed;
	int n = snprintf(req, 256, "GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
	    "Host: x\r\nX-Big: ", E.oport);

	memset(req + n, 'a', big);
	memcpy(req + n + big, "\r\n\r\n", 4);
	char *out = raw_exchange(E.pport, req, (size_t)n + big + 4, 3000,
	    &closed);
	cr_assert(strncmp(out, "HTTP/1.1 431 ", 13) == 0, "%.40s", out);
	cr_assert(closed);
	free(out);
	free(req);
}

Test(strict, long_request_line_is_414)
{
	size_t big = 9000;
	char *req = malloc(big + 256);
	bool closed;
	int n = snprintf(req, 256, "GET http://127.0.0.1:%d/", E.oport);

	memset(req + n, 'a', big);
	n += (int)big;
	n += snprintf(req + n, 128, " HTTP/1.1\r\nHost: x\r\n\r\n");
	char *out = raw_exchange(E.pport, req, (size_t)n, 3000, &closed);
	cr_assert(strncmp(out, "HTTP/1.1 414 ", 13) == 0, "%.40s", out);
	cr_assert(closed);
	free(out);
	free(req);
}

Test(strict, slow_header_gets_408)
{
	bool closed;
	const char *partial = "GET http://127.0.0.1:1/ HTTP/1.1\r\nHost: x\r\n";
	char *out = raw_exchange(E.pport, partial, strlen(partial), 3000,
	    &closed);

	cr_assert(strncmp(out, "HTTP/1.1 408 ", 13) == 0, "%.40s", out);
	cr_assert(closed);
	free(out);
	cr_assert_eq(proxy_metric(&E, "sumcache_client_header_timeouts_total"),
	    1);
}
