/*
 * Strict HTTP/1.1 message-head and chunked-body parser.
 *
 * Pure functions over caller-owned bytes: no I/O, no allocation except the
 * head's own copy, no globals, so the fuzz target drives them directly.
 */
#ifndef HTTP_PARSE_H
#define HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Errors; each maps to the status the client is sent (http_err_status). */
enum http_err {
	HTTP_ERR_BAD = -1,          /* 400: malformed or ambiguous */
	HTTP_ERR_URI_TOO_LONG = -2, /* 414: request line over the limit */
	HTTP_ERR_HEAD_TOO_BIG = -3, /* 431: header section or field count */
	HTTP_ERR_VERSION = -4,      /* 505: not HTTP/1.0 or HTTP/1.1 */
	HTTP_ERR_NOT_IMPL = -5,     /* 501: transfer coding we do not do */
};

struct http_limits {
	size_t max_line;     /* request line, bytes */
	size_t max_head;     /* whole header section, bytes */
	unsigned max_fields; /* header field count */
};

struct http_field {
	const char *name;  /* points into http_head.buf, not NUL-terminated */
	const char *value; /* OWS trimmed */
	uint32_t nlen;
	uint32_t vlen;
};

struct http_head {
	char *buf; /* owned copy of the head */
	size_t len;
	/* request line, or status line for a response */
	const char *method;
	const char *target;
	const char *reason;
	uint32_t method_len, target_len, reason_len;
	int version; /* 10 or 11 */
	int status;  /* responses only */
	struct http_field *fields;
	unsigned nfields;
	/* framing, checked for requests */
	int64_t content_length; /* -1 when absent */
	bool chunked;
	bool conn_close;
	bool conn_keep_alive;
};

/*
 * Finds the end of a head ("\r\n\r\n") in buf[0..len). *scan carries the
 * position already searched between calls so slow senders cost O(n) in all.
 * Returns the head length including the blank line, 0 if not there yet, or
 * HTTP_HEAD_BARE_LF at the first LF without its CR: no valid head has one,
 * so the sender is refused at once instead of waiting for a blank line
 * that, written with bare LFs, never comes.
 */
#define HTTP_HEAD_BARE_LF ((size_t)-1)
size_t http_head_end(const char *buf, size_t len, size_t *scan);

/*
 * Parses a complete head of hlen bytes (as found by http_head_end). Fills
 * *h, which then owns a copy of the bytes: free with http_head_clear().
 * Returns 0, or an enum http_err with *why naming the rule broken.
 */
int http_parse_request(const char *buf, size_t hlen,
    const struct http_limits *lim, struct http_head *h, const char **why);
int http_parse_response(const char *buf, size_t hlen,
    const struct http_limits *lim, struct http_head *h, const char **why);
/* A response of status whose fields are the block fields (len bytes,
 * "Name: value" lines each ended by CRLF, as the store keeps a head),
 * parsed as http_parse_response parses one; *block is set to where the
 * fields start in h->buf, *block_len to their length. */
int http_parse_fields(int status, const char *fields, size_t len,
    const struct http_limits *lim, struct http_head *h, const char **block,
    size_t *block_len, const char **why);

void http_head_clear(struct http_head *h);

/* Status code a client is sent for a parse error. */
int http_err_status(int err);
/* The reason phrase of a status code (RFC 9110's, or its class's). */
const char *http_reason_phrase(int status);

/* Field lookup, case-insensitive; returns the first match or NULL. */
const struct http_field *http_field_find(const struct http_head *h,
    const char *name);
bool http_field_is(const struct http_field *f, const char *name);

/*
 * Walks a comma-separated list value: returns the next element (trimmed) in
 * elem and elen, and advances pos; false at the end.
 */
bool http_list_next(const char *v, size_t vlen, size_t *pos,
    const char **elem, size_t *elen);

/* Case-insensitive comparison of a counted string with a C string. */
bool http_token_eq(const char *s, size_t n, const char *lit);

/* Incremental decoder for a chunked request body. */
struct http_chunked {
	int state;
	uint64_t remaining;  /* bytes left in the current chunk */
	unsigned digits;     /* hex digits read for the size */
	size_t side_len;     /* extension or trailer bytes read so far */
	uint64_t total;      /* decoded body bytes */
};

#define HTTP_CHUNK_EXT_MAX 4096
#define HTTP_CHUNK_TRAILER_MAX 65536

/*
 * Consumes framing bytes from in[0..len) and at most one run of body data.
 * Returns bytes consumed (>= 0) or HTTP_ERR_BAD. When body data was
 * consumed, *data and *dlen point at it inside in; otherwise *dlen is 0.
 * http_chunked_done() says when the terminating chunk and trailers are in.
 */
ssize_t http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
    const char **data, size_t *dlen, const char **why);
bool http_chunked_done(const struct http_chunked *c);

/*
 * The message's transfer coding, as this code can decode it: none, or
 * exactly one final "chunked". *te says whether the head has the field at
 * all. 0, or HTTP_ERR_NOT_IMPL for a coding we do not decode and
 * HTTP_ERR_BAD for a malformed list, with *why.
 */
int http_transfer_coding(const struct http_head *h, bool *te, bool *chunked,
    const char **why);

/* Hop-by-hop fields (RFC 9110 7.6.1), including those h's Connection
 * names, which a proxy must not forward. */
bool http_field_hop_by_hop(const struct http_head *h,
    const struct http_field *f);

#endif
