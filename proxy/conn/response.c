/*
 * See response.h.
 */
#include "response.h"

#include <stdint.h>
#include <string.h>

#include <event2/buffer.h>

#include "client.h"
#include "sc_assert.h"
#include "wire.h"

const char *
response_reason(int status)
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

/*
 * The status line and the tail below are made by hand, not with printf:
 * on a 1 KB hit printf's formatting was 5 % of the node's CPU (perf,
 * issue 37), more than the lookup. Each put has room by its caller's
 * bound: the parts are short and their lengths known.
 */
static void
put_mem(char *buf, size_t cap, size_t *n, const char *s, size_t len)
{
	SC_ASSERT(len < cap - *n);
	memcpy(buf + *n, s, len);
	*n += len;
}

static void
put_str(char *buf, size_t cap, size_t *n, const char *s)
{
	put_mem(buf, cap, n, s, strlen(s));
}

static void
put_num(char *buf, size_t cap, size_t *n, uint64_t v)
{
	char digits[20];
	size_t k = sizeof(digits);

	do
		digits[--k] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	put_mem(buf, cap, n, digits + k, sizeof(digits) - k);
}

void
response_status(struct evbuffer *out, int status, const char *reason,
    size_t reason_len)
{
	char line[32];
	size_t n = 0;

	if (reason == NULL) {
		reason = response_reason(status);
		reason_len = strlen(reason);
	}
	/* three digits (http_parse.c takes no other), and any number
	 * would fit */
	put_str(line, sizeof(line), &n, "HTTP/1.1 ");
	put_num(line, sizeof(line), &n, (uint64_t)status);
	put_mem(line, sizeof(line), &n, " ", 1);
	evbuffer_add(out, line, n);
	evbuffer_add(out, reason, reason_len);
	evbuffer_add(out, "\r\n", 2);
}

void
response_connection_field(struct txn *t, struct evbuffer *out)
{
	/* unread request body would be parsed as the next request */
	if (t->body_unread)
		t->keep_alive = false;
	if (t->w->node->draining)
		t->keep_alive = false;
	if (!t->keep_alive)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (t->req.version == 10)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
}

/*
 * Cache-Status (RFC 9211): what this node did, after whatever an upstream
 * cache said (a stored or passed-on field of theirs comes first, as the
 * RFC orders them). The parameters are the access log's code's
 * (accesslog.h), but for a method that is never cached, and a miss a
 * peer answered.
 */
static void
cache_status(const struct worker *s, const struct txn *t, char *buf,
    size_t cap, size_t *n)
{
	const char *params = squid_code_cache_status(t->code);
	const char *more = "";

	if (t->code == SQ_TCP_MISS && !t->is_get && !t->is_head)
		params = "fwd=method";
	else if (t->code == SQ_TCP_MISS && (t->hier == SQ_SIBLING_HIT ||
	    t->hier == SQ_CD_SIBLING_HIT || t->hier == SQ_CARP))
		more = "; detail=peer";
	put_str(buf, cap, n, "Cache-Status: sumcache-");
	put_str(buf, cap, n, s->node->conf.node_name);
	put_mem(buf, cap, n, "; ", 2);
	put_str(buf, cap, n, params);
	put_str(buf, cap, n, more);
	put_mem(buf, cap, n, "\r\n", 2);
}

void
response_end(const struct worker *s, struct txn *t, struct evbuffer *out,
    const struct head_tail *tl)
{
	/* the hit path's tail: composed once, added to out once */
	char buf[64 + sizeof(s->node->via) + 2 * WIRE_MAX_SENDER + 192];
	size_t n = 0;

	size_t cap = sizeof(buf);

	if (tl->age >= 0) {
		put_str(buf, cap, &n, "Age: ");
		put_num(buf, cap, &n, (uint64_t)(tl->age < 2147483648LL ?
		    tl->age : 2147483648LL));
		put_mem(buf, cap, &n, "\r\n", 2);
	}
	if (tl->via) {
		put_str(buf, cap, &n, "Via: ");
		put_str(buf, cap, &n, s->node->via);
		put_mem(buf, cap, &n, "\r\n", 2);
	}
	if (tl->x_cache != NULL) {
		put_str(buf, cap, &n, "X-Cache: ");
		put_str(buf, cap, &n, tl->x_cache);
		put_str(buf, cap, &n, " from ");
		put_str(buf, cap, &n, s->node->conf.node_name);
		put_mem(buf, cap, &n, "\r\n", 2);
	}
	if (t != NULL && !tl->internal)
		cache_status(s, t, buf, cap, &n);
	if (tl->length >= 0) {
		put_str(buf, cap, &n, "Content-Length: ");
		put_num(buf, cap, &n, (uint64_t)tl->length);
		put_mem(buf, cap, &n, "\r\n", 2);
	} else if (tl->chunked)
		put_str(buf, cap, &n, "Transfer-Encoding: chunked\r\n");
	evbuffer_add(out, buf, n);
	if (t != NULL && t->c != NULL)
		client_response_begins(t->c, tl->length);
	if (t != NULL)
		response_connection_field(t, out);
	else
		evbuffer_add(out, "Connection: close\r\n", 19);
	evbuffer_add(out, "\r\n", 2);
}
