/*
 * Strict HTTP/1.1 head parser (RFC 9112) and chunked decoder.
 *
 * A proxy sits between two parties who may parse the same bytes differently;
 * every ambiguity an attacker can exploit for request smuggling is an error
 * here rather than a guess: bare CR or LF, NUL and other controls, obs-fold,
 * whitespace before a colon, conflicting or malformed Content-Length,
 * Content-Length together with Transfer-Encoding, Transfer-Encoding in
 * HTTP/1.0, and codings other than a single final "chunked". Lines end in
 * CRLF only. Because sumcache re-frames every message it forwards, nothing
 * that is accepted here reaches an origin in a form the origin could read
 * differently.
 *
 * The head is copied once into http_head.buf; fields are views into it.
 */
#include "http_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const unsigned char tchar_map[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
	['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
	['`'] = 1, ['|'] = 1, ['~'] = 1,
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
	['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1,
	['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
	['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
	['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
	['Y'] = 1, ['Z'] = 1,
	['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
	['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1,
	['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
	['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
	['y'] = 1, ['z'] = 1,
};

static bool
is_tchar(unsigned char c)
{
	return tchar_map[c] != 0;
}

/* field-vchar, SP, HTAB; obs-text (0x80-0xff) is allowed as opaque data */
static bool
is_value_char(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* request-target: visible ASCII only; anything else is an error, not escaped */
static bool
is_target_char(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

size_t
http_head_end(const char *buf, size_t len, size_t *scan)
{
	size_t i = *scan;
	const char *lf;

	while (i < len && (lf = memchr(buf + i, '\n', len - i)) != NULL) {
		i = (size_t)(lf - buf);
		if (i == 0 || buf[i - 1] != '\r')
			return HTTP_HEAD_BARE_LF;
		if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
		i++;
	}
	*scan = len;
	return 0;
}

int
http_err_status(int err)
{
	switch (err) {
	case HTTP_ERR_URI_TOO_LONG: return 414;
	case HTTP_ERR_HEAD_TOO_BIG: return 431;
	case HTTP_ERR_VERSION: return 505;
	case HTTP_ERR_NOT_IMPL: return 501;
	default: return 400;
	}
}

bool
http_token_eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && strncasecmp(s, lit, n) == 0;
}

bool
http_field_is(const struct http_field *f, const char *name)
{
	return http_token_eq(f->name, f->nlen, name);
}

const struct http_field *
http_field_find(const struct http_head *h, const char *name)
{
	for (unsigned i = 0; i < h->nfields; i++)
		if (http_field_is(&h->fields[i], name))
			return &h->fields[i];
	return NULL;
}

bool
http_list_next(const char *v, size_t vlen, size_t *pos, const char **elem,
    size_t *elen)
{
	size_t i = *pos;

	for (;;) {
		while (i < vlen && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		if (i >= vlen) {
			*pos = i;
			return false;
		}
		size_t start = i;
		bool quoted = false;
		while (i < vlen && (quoted || v[i] != ',')) {
			if (v[i] == '"')
				quoted = !quoted;
			else if (v[i] == '\\' && quoted && i + 1 < vlen)
				i++;
			i++;
		}
		size_t end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		*elem = v + start;
		*elen = end - start;
		*pos = i;
		return true;
	}
}

void
http_head_clear(struct http_head *h)
{
	free(h->buf);
	free(h->fields);
	memset(h, 0, sizeof(*h));
	h->content_length = -1;
}

/* Parses decimal digits only; false on anything else or overflow. */
static bool
parse_length(const char *s, size_t n, int64_t *out)
{
	int64_t v = 0;

	if (n == 0 || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

static int
parse_version(const char *s, size_t n, int *version)
{
	if (n != 8 || memcmp(s, "HTTP/", 5) != 0 || s[6] != '.' ||
	    s[5] < '0' || s[5] > '9' || s[7] < '0' || s[7] > '9')
		return HTTP_ERR_BAD;
	if (s[5] != '1' || (s[7] != '0' && s[7] != '1'))
		return HTTP_ERR_VERSION;
	*version = s[7] == '1' ? 11 : 10;
	return 0;
}

/*
 * Splits buf (a copy that ends in CRLF CRLF) into fields. *line points at
 * the first field line.
 */
static int
parse_fields(struct http_head *h, char *p, char *end,
    const struct http_limits *lim, const char **why)
{
	unsigned cap = 16;

	h->fields = malloc(cap * sizeof(*h->fields));
	if (h->fields == NULL) {
		*why = "out of memory";
		return HTTP_ERR_BAD;
	}
	for (;;) {
		char *eol = memchr(p, '\r', (size_t)(end - p));
		if (eol == NULL || eol + 1 >= end || eol[1] != '\n') {
			*why = "bare CR in header section";
			return HTTP_ERR_BAD;
		}
		if (eol == p)
			return 0; /* the blank line */
		if (*p == ' ' || *p == '\t') {
			*why = "obs-fold line folding";
			return HTTP_ERR_BAD;
		}
		char *c = p;
		while (c < eol && is_tchar((unsigned char)*c))
			c++;
		if (c == p || c == eol || *c != ':') {
			*why = c < eol && (*c == ' ' || *c == '\t') ?
			    "whitespace before colon" : "bad header name";
			return HTTP_ERR_BAD;
		}
		char *v = c + 1;
		for (char *q = v; q < eol; q++) {
			if (!is_value_char((unsigned char)*q)) {
				*why = *q == '\0' ? "NUL in header value" :
				    *q == '\n' ? "bare LF in header value" :
				    "control character in header value";
				return HTTP_ERR_BAD;
			}
		}
		char *ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (h->nfields == lim->max_fields) {
			*why = "too many header fields";
			return HTTP_ERR_HEAD_TOO_BIG;
		}
		if (h->nfields == cap) {
			cap *= 2;
			void *n = realloc(h->fields, cap * sizeof(*h->fields));
			if (n == NULL) {
				*why = "out of memory";
				return HTTP_ERR_BAD;
			}
			h->fields = n;
		}
		h->fields[h->nfields++] = (struct http_field){
			.name = p, .nlen = (uint32_t)(c - p),
			.value = v, .vlen = (uint32_t)(ve - v),
		};
		p = eol + 2;
	}
}

/* Content-Length and Connection, for requests and responses alike. */
static int
scan_common(struct http_head *h, const char **why)
{
	for (unsigned i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];
		const char *e;
		size_t el, pos = 0;

		if (http_field_is(f, "content-length")) {
			/* "5, 5" and repeated equal fields are one length
			 * (RFC 9110 8.6); anything else is ambiguous. */
			if (f->vlen == 0) {
				*why = "empty Content-Length";
				return HTTP_ERR_BAD;
			}
			while (http_list_next(f->value, f->vlen, &pos, &e, &el)) {
				int64_t v;
				if (!parse_length(e, el, &v)) {
					*why = "malformed Content-Length";
					return HTTP_ERR_BAD;
				}
				if (h->content_length >= 0 &&
				    h->content_length != v) {
					*why = "conflicting Content-Length";
					return HTTP_ERR_BAD;
				}
				h->content_length = v;
			}
			if (h->content_length < 0) {
				*why = "malformed Content-Length";
				return HTTP_ERR_BAD;
			}
		} else if (http_field_is(f, "connection")) {
			while (http_list_next(f->value, f->vlen, &pos, &e, &el)) {
				if (http_token_eq(e, el, "close"))
					h->conn_close = true;
				else if (http_token_eq(e, el, "keep-alive"))
					h->conn_keep_alive = true;
			}
		}
	}
	return 0;
}

int
http_transfer_coding(const struct http_head *h, bool *te, bool *chunked,
    const char **why)
{
	*te = *chunked = false;
	for (unsigned i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];
		const char *e;
		size_t el, pos = 0;

		if (!http_field_is(f, "transfer-encoding"))
			continue;
		*te = true;
		while (http_list_next(f->value, f->vlen, &pos, &e, &el)) {
			if (*chunked) {
				*why = "transfer coding after chunked";
				return HTTP_ERR_BAD;
			}
			if (!http_token_eq(e, el, "chunked")) {
				*why = "unsupported transfer coding";
				return HTTP_ERR_NOT_IMPL;
			}
			*chunked = true;
		}
	}
	if (*te && !*chunked) {
		*why = "empty Transfer-Encoding";
		return HTTP_ERR_BAD;
	}
	return 0;
}

static int
scan_request_framing(struct http_head *h, const char **why)
{
	unsigned hosts = 0;
	bool te;
	int rc = http_transfer_coding(h, &te, &h->chunked, why);

	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < h->nfields; i++)
		hosts += http_field_is(&h->fields[i], "host");
	if (te && h->content_length >= 0) {
		*why = "Content-Length with Transfer-Encoding";
		return HTTP_ERR_BAD;
	}
	if (te && h->version == 10) {
		*why = "Transfer-Encoding in HTTP/1.0";
		return HTTP_ERR_BAD;
	}
	if (hosts > 1 || (hosts == 0 && h->version == 11)) {
		*why = hosts ? "more than one Host" : "missing Host";
		return HTTP_ERR_BAD;
	}
	return 0;
}

static int
copy_head(const char *buf, size_t hlen, struct http_head *h, const char **why)
{
	memset(h, 0, sizeof(*h));
	h->content_length = -1;
	if (hlen < 4 || memcmp(buf + hlen - 4, "\r\n\r\n", 4) != 0) {
		*why = "incomplete head";
		return HTTP_ERR_BAD;
	}
	h->buf = malloc(hlen + 1);
	if (h->buf == NULL) {
		*why = "out of memory";
		return HTTP_ERR_BAD;
	}
	memcpy(h->buf, buf, hlen);
	h->buf[hlen] = '\0';
	h->len = hlen;
	return 0;
}

static int
request_line(struct http_head *h, char *p, char *eol,
    const struct http_limits *lim, const char **why)
{
	if ((size_t)(eol - p) > lim->max_line) {
		*why = "request line too long";
		return HTTP_ERR_URI_TOO_LONG;
	}
	char *m = p;
	while (p < eol && is_tchar((unsigned char)*p))
		p++;
	if (p == m || p == eol || *p != ' ') {
		*why = "bad method";
		return HTTP_ERR_BAD;
	}
	h->method = m;
	h->method_len = (uint32_t)(p - m);
	char *t = ++p;
	while (p < eol && is_target_char((unsigned char)*p))
		p++;
	if (p == t || p == eol || *p != ' ') {
		*why = "bad request target";
		return HTTP_ERR_BAD;
	}
	h->target = t;
	h->target_len = (uint32_t)(p - t);
	p++;
	int rc = parse_version(p, (size_t)(eol - p), &h->version);
	if (rc < 0)
		*why = "bad HTTP version";
	return rc;
}

static int
first_line(const struct http_head *h, char **eol, const char **why)
{
	char *e = memchr(h->buf, '\r', h->len);

	if (e == NULL || e[1] != '\n' || memchr(h->buf, '\n', (size_t)(e -
	    h->buf)) != NULL || memchr(h->buf, '\0', (size_t)(e - h->buf))) {
		*why = "bad start line";
		return HTTP_ERR_BAD;
	}
	*eol = e;
	return 0;
}

int
http_parse_request(const char *buf, size_t hlen, const struct http_limits *lim,
    struct http_head *h, const char **why)
{
	char *eol;
	int rc;

	*why = "";
	if (hlen > lim->max_head + 4) {
		*why = "header section too large";
		return HTTP_ERR_HEAD_TOO_BIG;
	}
	if ((rc = copy_head(buf, hlen, h, why)) < 0 ||
	    (rc = first_line(h, &eol, why)) < 0 ||
	    (rc = request_line(h, h->buf, eol, lim, why)) < 0 ||
	    (rc = parse_fields(h, eol + 2, h->buf + hlen, lim, why)) < 0 ||
	    (rc = scan_common(h, why)) < 0 ||
	    (rc = scan_request_framing(h, why)) < 0) {
		http_head_clear(h);
		return rc;
	}
	return 0;
}

int
http_parse_response(const char *buf, size_t hlen, const struct http_limits *lim,
    struct http_head *h, const char **why)
{
	char *eol, *p;
	int rc;

	*why = "";
	if (hlen > lim->max_head + 4) {
		*why = "header section too large";
		return HTTP_ERR_HEAD_TOO_BIG;
	}
	if ((rc = copy_head(buf, hlen, h, why)) < 0 ||
	    (rc = first_line(h, &eol, why)) < 0)
		goto fail;
	p = h->buf;
	rc = HTTP_ERR_BAD;
	*why = "bad status line";
	if (eol - p < 12 || p[8] != ' ' ||
	    parse_version(p, 8, &h->version) < 0 || p[9] < '1' || p[9] > '5' ||
	    p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (eol - p > 12 && p[12] != ' '))
		goto fail;
	h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	h->reason = eol - p > 12 ? p + 13 : eol;
	h->reason_len = (uint32_t)(eol - h->reason);
	for (const char *q = h->reason; q < eol; q++)
		if (!is_value_char((unsigned char)*q))
			goto fail;
	if ((rc = parse_fields(h, eol + 2, h->buf + hlen, lim, why)) < 0 ||
	    (rc = scan_common(h, why)) < 0)
		goto fail;
	return 0;
fail:
	http_head_clear(h);
	return rc;
}

/* ---- chunked bodies ---- */

enum {
	CH_SIZE = 0, /* reading hex digits */
	CH_EXT,      /* after the size: BWS, extensions, until CR */
	CH_SIZE_LF,  /* CR seen after the size line */
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,    /* at the start of a trailer line or the final CRLF */
	CH_TRAILER_IN, /* inside a trailer line */
	CH_TRAILER_LF,
	CH_END_LF,     /* CR of the final CRLF seen */
	CH_DONE,
};

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
http_chunked_done(const struct http_chunked *c)
{
	return c->state == CH_DONE;
}

ssize_t
http_chunked_feed(struct http_chunked *c, const char *in, size_t len,
    const char **data, size_t *dlen, const char **why)
{
	size_t i = 0;

	*dlen = 0;
	*data = NULL;
	while (i < len && c->state != CH_DONE) {
		unsigned char ch = (unsigned char)in[i];
		int hv;

		switch (c->state) {
		case CH_SIZE:
			if ((hv = hexval(ch)) >= 0) {
				/* 15 digits keep the size below 2^60 */
				if (++c->digits > 15) {
					*why = "chunk size too large";
					return HTTP_ERR_BAD;
				}
				c->remaining = c->remaining * 16 + (uint64_t)hv;
				break;
			}
			if (c->digits == 0) {
				*why = "bad chunk size";
				return HTTP_ERR_BAD;
			}
			c->state = CH_EXT;
			c->side_len = 0;
			continue; /* look at ch again as an extension char */
		case CH_EXT:
			if (ch == '\r') {
				c->state = CH_SIZE_LF;
			} else if (ch == '\t' || (ch >= 0x20 && ch != 0x7f)) {
				if (c->side_len == 0 && ch != ';' && ch != ' ' &&
				    ch != '\t') {
					*why = "bad chunk size";
					return HTTP_ERR_BAD;
				}
				if (ch == ';' || c->side_len > 0)
					c->side_len++;
				if (c->side_len > HTTP_CHUNK_EXT_MAX) {
					*why = "chunk extension too long";
					return HTTP_ERR_BAD;
				}
			} else {
				*why = "bad character in chunk extension";
				return HTTP_ERR_BAD;
			}
			break;
		case CH_SIZE_LF:
			if (ch != '\n') {
				*why = "chunk size line not ended by CRLF";
				return HTTP_ERR_BAD;
			}
			c->digits = 0;
			if (c->remaining == 0) {
				c->state = CH_TRAILER;
				c->side_len = 0;
			} else {
				c->state = CH_DATA;
			}
			break;
		case CH_DATA: {
			size_t n = len - i;
			if (n > c->remaining)
				n = (size_t)c->remaining;
			*data = in + i;
			*dlen = n;
			c->remaining -= n;
			c->total += n;
			if (c->remaining == 0)
				c->state = CH_DATA_CR;
			return (ssize_t)(i + n);
		}
		case CH_DATA_CR:
			if (ch != '\r') {
				*why = "chunk data not followed by CRLF";
				return HTTP_ERR_BAD;
			}
			c->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (ch != '\n') {
				*why = "chunk data not followed by CRLF";
				return HTTP_ERR_BAD;
			}
			c->state = CH_SIZE;
			break;
		case CH_TRAILER:
			if (ch == '\r') {
				c->state = CH_END_LF;
				break;
			}
			c->state = CH_TRAILER_IN;
			continue;
		case CH_TRAILER_IN:
			/* trailers are read and dropped: we forward none */
			if (++c->side_len > HTTP_CHUNK_TRAILER_MAX) {
				*why = "trailer section too large";
				return HTTP_ERR_BAD;
			}
			if (ch == '\r')
				c->state = CH_TRAILER_LF;
			else if (ch == '\n' || ch == '\0') {
				*why = "bad character in trailer";
				return HTTP_ERR_BAD;
			}
			break;
		case CH_TRAILER_LF:
			if (ch != '\n') {
				*why = "bare CR in trailer";
				return HTTP_ERR_BAD;
			}
			c->state = CH_TRAILER;
			break;
		case CH_END_LF:
			if (ch != '\n') {
				*why = "bare CR after last chunk";
				return HTTP_ERR_BAD;
			}
			c->state = CH_DONE;
			break;
		}
		i++;
	}
	return (ssize_t)i;
}

bool
http_field_hop_by_hop(const struct http_head *h, const struct http_field *f)
{
	static const char *const fixed[] = {"connection", "keep-alive",
	    "proxy-connection", "proxy-authorization", "proxy-authenticate",
	    "te", "trailer", "transfer-encoding", "upgrade"};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (http_field_is(f, fixed[i]))
			return true;
	for (unsigned i = 0; i < h->nfields; i++) {
		const struct http_field *c = &h->fields[i];
		const char *e;
		size_t el, pos = 0;

		if (!http_field_is(c, "connection"))
			continue;
		while (http_list_next(c->value, c->vlen, &pos, &e, &el))
			if (el == f->nlen && strncasecmp(e, f->name, el) == 0)
				return true;
	}
	return false;
}

const char *
http_reason_phrase(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 203: return "Non-Authoritative Information";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 300: return "Multiple Choices";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 422: return "Unprocessable Content";
	case 408: return "Request Timeout";
	case 410: return "Gone";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return status < 300 ? "OK" : status < 400 ? "Redirect" :
	    status < 500 ? "Client Error" : "Server Error";
	}
}

int
http_parse_fields(int status, const char *fields, size_t len,
    const struct http_limits *lim, struct http_head *h, const char **block,
    size_t *block_len, const char **why)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "HTTP/1.1 %03d X\r\n", status);
	size_t total = (size_t)n + len + 2;
	char *buf = malloc(total);
	int rc;

	*why = "out of memory";
	if (buf == NULL)
		return HTTP_ERR_HEAD_TOO_BIG;
	memcpy(buf, line, (size_t)n);
	memcpy(buf + n, fields, len);
	memcpy(buf + n + len, "\r\n", 2);
	rc = http_parse_response(buf, total, lim, h, why);
	free(buf);
	if (rc == 0) {
		*block = h->buf + n;
		*block_len = len;
	}
	return rc;
}

