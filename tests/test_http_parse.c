#include <criterion/criterion.h>
#include <string.h>

#include "http_parse.h"

static const struct http_limits lim = {8192, 65536, 100};

static int
parse(const char *s, struct http_head *h)
{
	const char *why;
	size_t scan = 0, end = http_head_end(s, strlen(s), &scan);

	cr_assert_neq(end, 0, "no end of head in %s", s);
	return http_parse_request(s, end, &lim, h, &why);
}

Test(http_parse, request_fields_and_framing)
{
	struct http_head h;

	cr_assert_eq(parse("POST http://a/b HTTP/1.1\r\nHost: a\r\n"
	    "Content-Length:  12 \r\nConnection: keep-alive, X-Foo\r\n\r\n",
	    &h), 0);
	cr_assert(http_token_eq(h.method, h.method_len, "POST"));
	cr_assert(http_token_eq(h.target, h.target_len, "http://a/b"));
	cr_assert_eq(h.version, 11);
	cr_assert_eq(h.nfields, 3);
	cr_assert_eq(h.content_length, 12);
	cr_assert(h.conn_keep_alive);
	const struct http_field *cl = http_field_find(&h, "CONTENT-length");
	cr_assert(cl && cl->vlen == 2 && memcmp(cl->value, "12", 2) == 0);
	struct http_field xfoo = {"x-foo", NULL, 5, 0};
	cr_assert(http_field_hop_by_hop(&h, &xfoo), "named by Connection");
	http_head_clear(&h);
}

Test(http_parse, equal_duplicate_lengths_are_one)
{
	struct http_head h;

	cr_assert_eq(parse("POST http://a/ HTTP/1.1\r\nHost: a\r\n"
	    "Content-Length: 5\r\nContent-Length: 5, 5\r\n\r\n", &h), 0);
	cr_assert_eq(h.content_length, 5);
	http_head_clear(&h);
}

Test(http_parse, rejections_map_to_statuses)
{
	struct { const char *req; int status; } v[] = {
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n", 400},
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\nX: \x01\r\n\r\n", 400},
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\n\tX: 1\r\n\r\n", 400},
		{"GET http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
		    "br\r\n\r\n", 501},
		{"GET http://a/ HTTP/3.0\r\nHost: a\r\n\r\n", 505},
		{"GET  http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"GET http://a/ HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
		{"G(T http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
		{"GET http://a/\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct http_head h;
		int rc = parse(v[i].req, &h);
		cr_expect(rc < 0 && http_err_status(rc) == v[i].status,
		    "case %zu: rc %d", i, rc);
	}
}

Test(http_parse, limits)
{
	struct http_limits small = {20, 200, 2};
	struct http_head h;
	const char *why;
	const char *long_line = "GET http://a/aaaaaaaaaaaaaaaaaaaaaaa HTTP/1.1"
	    "\r\nHost: a\r\n\r\n";
	const char *many = "GET http://a/ HTTP/1.1\r\nHost: a\r\nA: 1\r\n"
	    "B: 2\r\n\r\n";

	cr_assert_eq(http_parse_request(long_line, strlen(long_line), &small,
	    &h, &why), HTTP_ERR_URI_TOO_LONG);
	small.max_line = 100;
	cr_assert_eq(http_parse_request(many, strlen(many), &small, &h, &why),
	    HTTP_ERR_HEAD_TOO_BIG);
}

Test(http_parse, head_end_is_incremental)
{
	const char *s = "GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
	size_t scan = 0;

	cr_assert_eq(http_head_end(s, 10, &scan), 0);
	cr_assert_leq(scan, 10);
	cr_assert_eq(http_head_end(s, strlen(s), &scan), strlen(s) - 4);
}

Test(http_parse, head_end_refuses_a_bare_lf_at_once)
{
	const char *lf = "GET / HTTP/1.1\nHost: a\n\n";
	const char *late = "GET / HTTP/1.1\r\nHost: a\n";
	size_t scan = 0;

	cr_assert_eq(http_head_end(lf, strlen(lf), &scan), HTTP_HEAD_BARE_LF);
	scan = 0;
	/* found where it arrives, before any blank line */
	cr_assert_eq(http_head_end(late, 16, &scan), 0);
	cr_assert_eq(http_head_end(late, strlen(late), &scan),
	    HTTP_HEAD_BARE_LF);
}

Test(http_parse, response_status_line)
{
	const char *r = "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n";
	struct http_head h;
	const char *why;

	cr_assert_eq(http_parse_response(r, strlen(r), &lim, &h, &why), 0);
	cr_assert_eq(h.status, 304);
	cr_assert(http_token_eq(h.reason, h.reason_len, "Not Modified"));
	http_head_clear(&h);
	const char *bad = "HTTP/1.1 3x4 No\r\n\r\n";
	cr_assert_lt(http_parse_response(bad, strlen(bad), &lim, &h, &why), 0);
}

static size_t
decode(const char *in, size_t len, char *out, int *err, bool *done)
{
	struct http_chunked c = {0};
	size_t n = 0, i = 0;

	*err = 0;
	/* feed one byte at a time: framing must survive any split */
	while (i < len && !http_chunked_done(&c)) {
		const char *data, *why;
		size_t dlen;
		ssize_t used = http_chunked_feed(&c, in + i, 1, &data, &dlen,
		    &why);
		if (used < 0) {
			*err = 1;
			break;
		}
		if (dlen > 0)
			memcpy(out + n, data, dlen);
		n += dlen;
		i += (size_t)used;
	}
	*done = http_chunked_done(&c);
	return n;
}

Test(http_parse, chunked_decoding)
{
	const char *ok = "5;ext=1\r\nhello\r\nA \r\n0123456789\r\n0\r\n"
	    "Trailer: x\r\n\r\n";
	char out[64];
	int err;
	bool done;
	size_t n = decode(ok, strlen(ok), out, &err, &done);

	cr_assert_eq(err, 0);
	cr_assert(done);
	cr_assert_eq(n, 15);
	cr_assert(memcmp(out, "hello0123456789", 15) == 0);

	const char *bad[] = {"x\r\n", "5\r\nhelloX\r\n", "5\nhello\r\n",
	    "1234567890123456\r\n", "5 x\r\nhello\r\n", "0\r\nTr\rx\r\n\r\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		decode(bad[i], strlen(bad[i]), out, &err, &done);
		cr_expect_eq(err, 1, "case %zu accepted", i);
	}
}

Test(http_parse, list_walk_keeps_quoted_commas)
{
	const char *v = " a , \"b,c\" ,,d";
	const char *e;
	size_t el, pos = 0;
	const char *want[] = {"a", "\"b,c\"", "d"};

	for (int i = 0; i < 3; i++) {
		cr_assert(http_list_next(v, strlen(v), &pos, &e, &el));
		cr_assert(el == strlen(want[i]) && memcmp(e, want[i], el) == 0);
	}
	cr_assert(!http_list_next(v, strlen(v), &pos, &e, &el));
}
