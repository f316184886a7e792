/*
 * test-origin's answers, by path (the list is origin.c's opening
 * comment): what each path writes, and the timers of the answers that
 * come in parts (?pause=, chunked or not; /steady). The request has
 * been read whole; delays and drops were origin.c's.
 */
#include "origin.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

long
qparam(const struct conn *c, const char *name, long dflt)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=", name);
	for (const char *p = c->query; p && *p;) {
		if (strncmp(p, key, strlen(key)) == 0)
			return strtol(p + strlen(key), NULL, 10);
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return dflt;
}

const char *
qstr(const struct conn *c, const char *name, char *out, size_t len)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=", name);
	for (const char *p = c->query; p && *p;) {
		if (strncmp(p, key, strlen(key)) == 0) {
			size_t n = strcspn(p + strlen(key), "&");
			snprintf(out, len, "%.*s", (int)n, p + strlen(key));
			return out;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return NULL;
}

void
fill(char *buf, size_t n, const char *name, size_t offset)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < n; i++)
		buf[i] = name[(offset + i) % nl];
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	(void)what;
	bufferevent_write_buffer(c->bev, c->rest);
}

/* /steady's next part, and the timer for the one after */
static void
on_steady(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char chunk[65536];
	uint64_t n = c->steady_size - c->steady_at;
	(void)fd;
	(void)what;
	if (n > c->steady_part)
		n = c->steady_part;
	for (uint64_t done = 0; done < n;) {
		size_t k = n - done < sizeof(chunk) ? (size_t)(n - done) :
		    sizeof(chunk);
		fill(chunk, k, "steady", (size_t)(c->steady_at + done));
		bufferevent_write(c->bev, chunk, k);
		done += k;
	}
	c->steady_at += n;
	c->steady_sent++;
	if (c->steady_at == c->steady_size || (c->steady_stall > 0 &&
	    c->steady_sent >= c->steady_stall))
		return;
	struct timeval tv = {c->steady_ms / 1000, (c->steady_ms % 1000) * 1000};
	evtimer_add(c->steady, &tv);
}

/* A 200's head for a body of len bytes (chunked, when chunked), fresh
 * for max_age seconds (no-store when negative). */
static void
head_of_length(struct evbuffer *out, long max_age, uint64_t len,
    bool chunked)
{
	char cc[32] = "no-store", framing[48] = "Transfer-Encoding: chunked";

	if (max_age >= 0)
		snprintf(cc, sizeof(cc), "max-age=%ld", max_age);
	if (!chunked)
		snprintf(framing, sizeof(framing), "Content-Length: %llu",
		    (unsigned long long)len);
	evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: %s\r\n"
	    "%s\r\n\r\n", cc, framing);
}

void
respond(struct conn *c)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	const struct http_field *inm = http_field_find(&c->req, "if-none-match");
	const struct http_field *ims =
	    http_field_find(&c->req, "if-modified-since");
	char date[64], tmp[256];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	const struct http_field *range = http_field_find(&c->req, "range");
	evbuffer_add_printf(reqlog, "%.*s %.*s %s%.*s%s%d\n",
	    (int)c->req.method_len, c->req.method, (int)c->req.target_len,
	    c->req.target, range ? "range=" : "", range ? (int)range->vlen : 0,
	    range ? range->value : "", range ? " " : "",
	    inm != NULL || ims != NULL);

	if (strcmp(c->path, "/__log") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: %zu"
		    "\r\n\r\n", evbuffer_get_length(reqlog));
		evbuffer_add_buffer_reference(out, reqlog);
		return;
	}
	if (strcmp(c->path, "/__bump") == 0) {
		generation++;
		evbuffer_add_printf(out, "HTTP/1.1 204 No Content\r\n"
		    "Cache-Control: no-store\r\n\r\n");
		return;
	}
	if (strcmp(c->path, "/__drop") == 0) {
		if (qstr(c, "how", forced_drop, sizeof(forced_drop)) == NULL ||
		    strcmp(forced_drop, "none") == 0)
			forced_drop[0] = '\0';
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: "
		    "0\r\n\r\n");
		return;
	}
	if (strcmp(c->path, "/__status") == 0) {
		forced_status = qparam(c, "code", 0);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: "
		    "0\r\n\r\n");
		return;
	}
	if (strcmp(c->path, "/__conns") == 0 ||
	    strcmp(c->path, "/__open") == 0) {
		int n = snprintf(tmp, sizeof(tmp), "%u", c->path[3] == 'c' ?
		    connections : open_conns);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Length: %d"
		    "\r\n\r\n%s", n, tmp);
		return;
	}
	if (strcmp(c->path, "/headers") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nConnection: "
		    "X-Internal\r\nX-Internal: secret\r\nKeep-Alive: "
		    "timeout=5\r\nX-Kept: yes\r\nContent-Length: %zu\r\n\r\n",
		    c->req.len);
		evbuffer_add(out, c->req.buf, c->req.len);
		return;
	}
	if (strncmp(c->path, "/obj/", 5) == 0) {
		long size = qparam(c, "size", 100);
		char etag[64] = "";
		if (qparam(c, "etag", 0))
			snprintf(etag, sizeof(etag), qparam(c, "gen", 0) ?
			    "\"%s-%ld.%u\"" : "\"%s-%ld\"", c->path + 5,
			    qparam(c, "version", 1), generation);
		if (!forced_status && inm != NULL && *etag &&
		    (size_t)inm->vlen == strlen(etag) &&
		    memcmp(inm->value, etag, inm->vlen) == 0) {
			revalidations++;
			/* the same freshness a 200 would carry */
			evbuffer_add_printf(out, "HTTP/1.1 304 Not Modified\r\n"
			    "Date: %s\r\nETag: %s\r\nX-Revalidated: %u\r\n",
			    date, etag, revalidations);
			if (qstr(c, "cc", tmp, sizeof(tmp)))
				evbuffer_add_printf(out, "Cache-Control: %s\r\n"
				    "\r\n", tmp);
			else
				evbuffer_add_printf(out, "Cache-Control: "
				    "max-age=%ld\r\n\r\n",
				    qparam(c, "max_age", 0));
			return;
		}
		long status = forced_status ? forced_status :
		    qparam(c, "status", 200);
		long from = 0, to = size - 1;
		char rtmp[64];
		if (status == 200 && range != NULL && range->vlen < sizeof(rtmp)) {
			memcpy(rtmp, range->value, range->vlen);
			rtmp[range->vlen] = '\0';
			int got = strncmp(rtmp, "bytes=", 6) == 0 &&
			    isdigit((unsigned char)rtmp[6]) ? sscanf(rtmp,
			    "bytes=%ld-%ld", &from, &to) : 0;
			if (got >= 1 && from < size) {
				if (got == 1 || to >= size)
					to = size - 1;
				status = 206;
			} else {
				from = 0;
				to = size - 1;
			}
		}
		bool chunked = qparam(c, "chunked", 0) && status == 200;
		evbuffer_add_printf(out, "HTTP/1.1 %ld %s\r\nDate: %s\r\n"
		    "Content-Type: application/octet-stream\r\n", status,
		    status == 200 ? "OK" : "Status", date);
		if (chunked)
			evbuffer_add_printf(out, "Transfer-Encoding: chunked"
			    "\r\n");
		else
			evbuffer_add_printf(out, "Content-Length: %ld\r\n",
			    to - from + 1);
		if (status == 206)
			evbuffer_add_printf(out, "Content-Range: bytes "
			    "%ld-%ld/%ld\r\n", from, to, size);
		if (qstr(c, "age", tmp, sizeof(tmp)))
			evbuffer_add_printf(out, "Age: %s\r\n", tmp);
		if (qstr(c, "expires", tmp, sizeof(tmp))) {
			time_t t = now + 3600;
			struct tm e;
			gmtime_r(&t, &e);
			strftime(tmp, sizeof(tmp), "%a, %d %b %Y %H:%M:%S gmt", &e);
			for (char *p = tmp; *p; p++)
				*p = (char)tolower((unsigned char)*p);
			evbuffer_add_printf(out, "Expires: %s\r\n", tmp);
		}
		if (*etag)
			evbuffer_add_printf(out, "ETag: %s\r\n", etag);
		if (qparam(c, "lm", 0))
			evbuffer_add_printf(out, "Last-Modified: Mon, 01 Jan "
			    "2024 00:00:00 GMT\r\n");
		/* a forced status is a failing server's: no freshness */
		if (qparam(c, "max_age", -1) >= 0 && !forced_status)
			evbuffer_add_printf(out, "Cache-Control: max-age=%ld"
			    "%s%s\r\n", qparam(c, "max_age", 0),
			    qparam(c, "nostore", 0) ? ", no-store" : "",
			    qparam(c, "private", 0) ? ", private" : "");
		if (qstr(c, "cc", tmp, sizeof(tmp)) && !forced_status)
			evbuffer_add_printf(out, "Cache-Control: %s\r\n", tmp);
		evbuffer_add(out, "\r\n", 2);
		if (!http_token_eq(c->req.method, c->req.method_len, "HEAD")) {
			size = to - from + 1;
			char *b = malloc((size_t)size);
			long pause = qparam(c, "pause", 0);
			size_t now_n = pause > 0 ? (size_t)size / 2 : (size_t)size;
			fill(b, (size_t)size, c->path + 5, (size_t)from);
			if (pause > 0)
				c->rest = evbuffer_new();
			if (chunked) {
				/* chunks of 4 KB: at once, or the second
				 * half's after the pause */
				struct evbuffer *dst = out;
				for (size_t at = 0; at < (size_t)size;) {
					size_t k = (size_t)size - at < 4096 ?
					    (size_t)size - at : 4096;
					if (pause > 0 && at >= now_n)
						dst = c->rest;
					evbuffer_add_printf(dst, "%zx\r\n", k);
					evbuffer_add(dst, b + at, k);
					evbuffer_add(dst, "\r\n", 2);
					at += k;
				}
				evbuffer_add(dst, "0\r\n\r\n", 5);
			} else {
				evbuffer_add(out, b, now_n);
				if (pause > 0)
					evbuffer_add(c->rest, b + now_n,
					    (size_t)size - now_n);
			}
			if (pause > 0) {
				struct timeval tv = {pause / 1000,
				    (pause % 1000) * 1000};
				c->resume = evtimer_new(base, on_resume, c);
				evtimer_add(c->resume, &tv);
			}
			free(b);
		}
		return;
	}
	if (strncmp(c->path, "/vary/", 6) == 0) {
		const struct http_field *al =
		    http_field_find(&c->req, "accept-language");
		int n = al ? (int)al->vlen : 4;
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nDate: %s\r\n"
		    "Cache-Control: max-age=300\r\nVary: Accept-Language\r\n"
		    "Content-Length: %d\r\n\r\nlang=%.*s\n", date, n + 6,
		    n, al ? al->value : "none");
		return;
	}
	if (strcmp(c->path, "/echo") == 0) {
		size_t n = evbuffer_get_length(c->body);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nX-Method: %.*s\r\n"
		    "X-Body-Length: %zu\r\nX-Request-Chunked: %d\r\n"
		    "Content-Length: %zu\r\n\r\n", (int)c->req.method_len,
		    c->req.method, n, c->chunked_req, n);
		evbuffer_add_buffer(out, c->body);
		return;
	}
	if (strcmp(c->path, "/big") == 0) {
		long max_age = qparam(c, "max_age", -1);
		c->big_left = (uint64_t)qparam(c, "size", 1 << 20);
		if (qparam(c, "gen", 0))
			snprintf(c->big_fill, sizeof(c->big_fill), "big%u",
			    generation);
		else
			strcpy(c->big_fill, "big");
		c->big_chunked = qparam(c, "chunked", 0);
		head_of_length(out, max_age, c->big_left, c->big_chunked);
		return; /* the body follows in on_write */
	}
	if (strcmp(c->path, "/te") == 0) {
		char coding[64];
		if (qstr(c, "coding", coding, sizeof(coding)) == NULL)
			strcpy(coding, "foo");
		for (char *p = coding; *p; p++)
			if (*p == '+')
				*p = ' ';
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: "
		    "max-age=60\r\nTransfer-Encoding: %s\r\n\r\n"
		    "5\r\nhello\r\n0\r\n\r\n", coding);
		c->close_after = true;
		return;
	}
	if (strcmp(c->path, "/cut") == 0) {
		long size = qparam(c, "size", 100000), at = qparam(c, "at", 0);
		char *b = calloc(1, (size_t)at + 1);
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: "
		    "max-age=60\r\nContent-Length: %ld\r\n\r\n", size);
		fill(b, (size_t)at, "cut", 0);
		evbuffer_add(out, b, (size_t)at);
		free(b);
		c->close_after = true;
		return;
	}
	if (strcmp(c->path, "/steady") == 0) {
		long max_age = qparam(c, "max_age", -1), parts = qparam(c,
		    "parts", 10);
		c->steady_size = (uint64_t)qparam(c, "size", 100000);
		c->steady_part = (c->steady_size + (uint64_t)parts - 1) /
		    (uint64_t)(parts > 0 ? parts : 1);
		c->steady_ms = qparam(c, "step", 100);
		c->steady_stall = qparam(c, "stall", 0);
		c->steady_at = 0;
		c->steady_sent = 0;
		head_of_length(out, max_age, c->steady_size, false);
		if (c->steady == NULL)
			c->steady = evtimer_new(base, on_steady, c);
		on_steady(-1, 0, c);
		return;
	}
	if (strcmp(c->path, "/extra") == 0) {
		long size = qparam(c, "size", 1000), after = qparam(c, "after", 0);
		char *b = malloc((size_t)size);
		struct evbuffer *more = evbuffer_new();
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nCache-Control: "
		    "max-age=60\r\nContent-Length: %ld\r\n\r\n", size);
		fill(b, (size_t)size, "extra", 0);
		evbuffer_add(out, b, (size_t)size);
		free(b);
		if (qparam(c, "junk", 0))
			evbuffer_add_printf(more, "these bytes are past the "
			    "end of the body\r\n");
		else
			evbuffer_add_printf(more, "HTTP/1.1 200 OK\r\n"
			    "Cache-Control: max-age=600\r\nContent-Length: 6"
			    "\r\n\r\nPOISON");
		if (after <= 0) {
			evbuffer_add_buffer(out, more);
			evbuffer_free(more);
			return;
		}
		struct timeval tv = {after / 1000, (after % 1000) * 1000};
		if (c->rest != NULL)
			evbuffer_free(c->rest);
		c->rest = more;
		if (c->resume == NULL)
			c->resume = evtimer_new(base, on_resume, c);
		evtimer_add(c->resume, &tv);
		return;
	}
	if (strcmp(c->path, "/hints") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 103 Early Hints\r\nLink: "
		    "</style.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\n"
		    "Content-Length: 5\r\n\r\nhints");
		return;
	}
	if (strcmp(c->path, "/squid-internal-periodic/store_digest") == 0) {
		/* version 5, required 3, capacity 100, 5 bits per entry so a
		 * 63-byte mask: all as Squid writes them, but 3 hash functions */
		unsigned char d[128 + 63] = {0, 5, 0, 3, 0, 0, 0, 100};
		d[19] = 63;
		d[20] = 5;
		d[21] = 3;
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nContent-Type: "
		    "application/cache-digest\r\nContent-Length: %zu\r\n\r\n",
		    sizeof(d));
		evbuffer_add(out, d, sizeof(d));
		return;
	}
	if (strcmp(c->path, "/chunked") == 0) {
		evbuffer_add_printf(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
		    "chunked\r\nCache-Control: max-age=60\r\n\r\n"
		    "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n");
		return;
	}
	evbuffer_add_printf(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0"
	    "\r\n\r\n");
}
