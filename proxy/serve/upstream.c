/*
 * The request head a fetch sends upstream (an origin, or a peer asked as a
 * proxy): the client's fields without hop-by-hop ones and those curl
 * writes itself (Host, Content-Length, Expect), our Via, only-if-cached
 * for a sibling (PROTOCOLS.md 4), the hop field for a key's owner (and
 * nobody else: a client's or a peer's is dropped), and for a
 * revalidation our validators
 * instead of the client's; what it says of the client as forwarded_for
 * asks. A field is as long as the client's limits let it be: no buffer
 * of ours cuts it.
 */
#include "upstream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

/* A line as it is ("Name:" tells curl not to send its own Name). */
static bool
add_line(struct curl_slist **list, const char *line)
{
	struct curl_slist *l = curl_slist_append(*list, line);

	if (l == NULL)
		return false;
	*list = l;
	return true;
}

static bool
add_header(struct curl_slist **list, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A field line of any length the request's limits let in: most fit the
 * stack, a long one (up to max_header_size) gets the heap. */
static bool
add_header(struct curl_slist **list, const char *fmt, ...)
{
	char stack[512], *line = stack;
	va_list ap, again;

	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(stack, sizeof(stack), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= sizeof(stack) &&
	    (line = malloc((size_t)n + 1)) != NULL)
		vsnprintf(line, (size_t)n + 1, fmt, again);
	va_end(again);
	bool ok = n >= 0 && line != NULL && add_line(list, line);
	if (line != stack)
		free(line);
	return ok;
}

/* The field "name: value" (or "name;", curl's way to send an empty
 * value: it drops "name:" lines); put together without printf, as this
 * runs for every field of every miss. */
static bool
add_field(struct curl_slist **list, const char *name, size_t nlen,
    const char *value, size_t vlen)
{
	char stack[512], *line = stack;
	size_t n = nlen + 2 + vlen + 1;

	if (n > sizeof(stack) && (line = malloc(n)) == NULL)
		return false;
	memcpy(line, name, nlen);
	if (vlen == 0) {
		line[nlen] = ';';
		line[nlen + 1] = '\0';
	} else {
		memcpy(line + nlen, ": ", 2);
		memcpy(line + nlen + 2, value, vlen);
		line[nlen + 2 + vlen] = '\0';
	}
	bool ok = add_line(list, line);
	if (line != stack)
		free(line);
	return ok;
}

static bool
skip_request_field(const struct http_head *req, const struct http_field *fl,
    bool own_conditionals, bool whole)
{
	static const char *const own[] = {"host", "content-length", "expect",
		UPSTREAM_HOP_FIELD};

	if (http_field_hop_by_hop(req, fl))
		return true;
	/* a range answered from the whole object (range.c) */
	if (whole && (http_field_is(fl, "range") ||
	    http_field_is(fl, "if-range")))
		return true;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (http_field_is(fl, own[i]))
			return true;
	/* a revalidation carries our validators, not the client's; a
	 * fetch for the cache asks for the whole object */
	return own_conditionals &&
	    (http_field_is(fl, "if-none-match") ||
		http_field_is(fl, "if-modified-since"));
}

/* The field forwarded_for rewrites, the client appended (NULL: none). */
static const char *
client_field(enum forwarded_for mode)
{
	switch (mode) {
	case FORWARDED_FOR_ADD: return "x-forwarded-for";
	case FORWARDED_FOR_FORWARDED: return "forwarded";
	default: return NULL;
	}
}

/* Whether the client's field fl is left out: stripped, or sent again
 * rewritten (add_client). */
static bool
drops_client_field(enum forwarded_for mode, const struct http_field *fl)
{
	const char *own = client_field(mode);

	if (mode == FORWARDED_FOR_STRIP)
		return http_field_is(fl, "x-forwarded-for") ||
		    http_field_is(fl, "forwarded");
	return own != NULL && http_field_is(fl, own);
}

/*
 * The client's X-Forwarded-For or Forwarded fields as one, this client
 * appended: "a, b, 10.0.0.1", or "for=a, for=\"[::1]\"" (RFC 7239 6: an
 * IPv6 address in brackets and quotes). false on ENOMEM.
 */
static bool
add_client(struct curl_slist **l, const struct txn *t, enum forwarded_for mode)
{
	const struct http_head *req = &t->req;
	const char *name = client_field(mode);
	struct evbuffer *v = evbuffer_new();
	bool ok = v != NULL;

	for (unsigned i = 0; ok && i < req->nfields; i++) {
		const struct http_field *fl = &req->fields[i];
		if (!http_field_is(fl, name) || fl->vlen == 0)
			continue;
		ok = evbuffer_add_printf(v, "%s%.*s", evbuffer_get_length(v) ?
		    ", " : "", (int)fl->vlen, fl->value) >= 0;
	}
	const char *sep = ok && evbuffer_get_length(v) ? ", " : "";
	const char *a = t->c->addr;
	if (ok && mode == FORWARDED_FOR_FORWARDED)
		ok = evbuffer_add_printf(v, strchr(a, ':') ? "%sfor=\"[%s]\"" :
		    "%sfor=%s", sep, a) >= 0;
	else if (ok)
		ok = evbuffer_add_printf(v, "%s%s", sep, a) >= 0;
	size_t len = ok ? evbuffer_get_length(v) : 0;
	const char *s = ok ? (const char *)evbuffer_pullup(v, -1) : NULL;
	ok = ok && s != NULL && add_header(l, "%s: %.*s",
	    mode == FORWARDED_FOR_ADD ? "X-Forwarded-For" : "Forwarded",
	    (int)len, s);
	if (v != NULL)
		evbuffer_free(v);
	return ok;
}

struct curl_slist *
upstream_fields(const struct txn *t, bool revalidate, bool whole,
    enum upstream_to to)
{
	const struct http_head *req = &t->req;
	enum forwarded_for mode = t->w->node->conf.forwarded_for;
	struct curl_slist *l = NULL;
	bool ok = true;

	for (unsigned i = 0; i < req->nfields && ok; i++) {
		const struct http_field *fl = &req->fields[i];
		if (skip_request_field(req, fl, revalidate || whole,
		    t->range_whole) || ((t->c != NULL ||
		    mode == FORWARDED_FOR_STRIP) && drops_client_field(mode,
		    fl)))
			continue;
		ok = add_field(&l, fl->name, fl->nlen, fl->value, fl->vlen);
	}
	const char *via = t->w->node->via;
	ok = ok && add_field(&l, "Via", 3, via, strlen(via));
	/* a revalidation behind a stale answer has no client to name: the
	 * fields go as they came */
	if (ok && t->c != NULL && client_field(mode) != NULL)
		ok = add_client(&l, t, mode);
	/* PROTOCOLS.md 4: a sibling answers from its cache or says 504 */
	if (to == UPSTREAM_SIBLING)
		ok = ok && add_header(&l, "Cache-Control: only-if-cached");
	if (to == UPSTREAM_OWNER)
		ok = ok && add_header(&l, "Sumcache-Hop: owner");
	/* over a peer link curl would name the link (fetch.c) */
	if (to != UPSTREAM_ORIGIN && t->url.https)
		ok = ok && add_header(&l, "Host: %.*s", (int)(t->url.path_off -
		    t->url.host_off), t->url.norm + t->url.host_off);
	/* no Expect round trip to the origin: we already have the body */
	ok = ok && add_line(&l, "Expect:");
	if (ok && http_field_find(req, "accept") == NULL)
		ok = add_line(&l, "Accept:");
	if (ok && revalidate) {
		const char *v;
		size_t vl;
		if (store_head_find(t->stale, "etag", &v, &vl))
			ok = add_header(&l, "If-None-Match: %.*s", (int)vl, v);
		if (ok && store_head_find(t->stale, "last-modified", &v,
		    &vl))
			ok = add_header(&l, "If-Modified-Since: %.*s", (int)vl,
			    v);
	}
	if (!ok) {
		curl_slist_free_all(l);
		return NULL;
	}
	return l;
}
