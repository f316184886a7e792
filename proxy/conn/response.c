/*
 * See response.h.
 */
#include "response.h"

#include <stdarg.h>
#include <stdio.h>

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

void
response_status(struct evbuffer *out, int status, const char *reason,
    size_t reason_len)
{
	if (reason == NULL) {
		evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\n", status,
		    response_reason(status));
		return;
	}
	evbuffer_add_printf(out, "HTTP/1.1 %d %.*s\r\n", status,
	    (int)reason_len, reason);
}

void
response_connection_field(struct txn *t, struct evbuffer *out)
{
	/* unread request body would be parsed as the next request */
	if (t->body_unread)
		t->keep_alive = false;
	if (t->srv->draining)
		t->keep_alive = false;
	if (!t->keep_alive)
		evbuffer_add(out, "Connection: close\r\n", 19);
	else if (t->req.version == 10)
		evbuffer_add(out, "Connection: keep-alive\r\n", 24);
}

/* Appends to buf[*n..len) what fmt makes; the caller's buffer always
 * has room (the lines are short and their parts bounded). */
static void
put(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	SC_ASSERT(k >= 0 && (size_t)k < len - *n);
	*n += (size_t)k;
}

/*
 * Cache-Status (RFC 9211): what this node did, after whatever an upstream
 * cache said (a stored or passed-on field of theirs comes first, as the
 * RFC orders them). The parameters are the access log's code's
 * (accesslog.h), but for a method that is never cached, and a miss a
 * peer answered.
 */
static void
cache_status(const struct server *s, const struct txn *t, char *buf,
    size_t cap, size_t *n)
{
	const char *params = squid_code_cache_status(t->code);
	const char *more = "";

	if (t->code == SQ_TCP_MISS && !t->is_get && !t->is_head)
		params = "fwd=method";
	else if (t->code == SQ_TCP_MISS && (t->hier == SQ_SIBLING_HIT ||
	    t->hier == SQ_CD_SIBLING_HIT || t->hier == SQ_CARP))
		more = "; detail=peer";
	put(buf, cap, n, "Cache-Status: sumcache-%s; %s%s\r\n",
	    s->conf.node_name, params, more);
}

void
response_end(const struct server *s, struct txn *t, struct evbuffer *out,
    const struct head_tail *tl)
{
	/* the hit path's tail: composed once, added to out once */
	char buf[64 + sizeof(s->via) + 2 * WIRE_MAX_SENDER + 192];
	size_t n = 0;

	if (tl->age >= 0)
		put(buf, sizeof(buf), &n, "Age: %lld\r\n", (long long)(tl->age <
		    2147483648LL ? tl->age : 2147483648LL));
	if (tl->via)
		put(buf, sizeof(buf), &n, "Via: %s\r\n", s->via);
	if (tl->x_cache != NULL)
		put(buf, sizeof(buf), &n, "X-Cache: %s from %s\r\n",
		    tl->x_cache, s->conf.node_name);
	if (t != NULL && !tl->internal)
		cache_status(s, t, buf, sizeof(buf), &n);
	if (tl->length >= 0)
		put(buf, sizeof(buf), &n, "Content-Length: %lld\r\n",
		    (long long)tl->length);
	else if (tl->chunked)
		put(buf, sizeof(buf), &n, "Transfer-Encoding: chunked\r\n");
	evbuffer_add(out, buf, n);
	if (t != NULL && t->c != NULL)
		client_response_begins(t->c, tl->length);
	if (t != NULL)
		response_connection_field(t, out);
	else
		evbuffer_add(out, "Connection: close\r\n", 19);
	evbuffer_add(out, "\r\n", 2);
}
