/*
 * URL parsing and normalization.
 *
 * The normalized URL names an object everywhere: in the store, in the access
 * log, and (with the summary library) in the Bloom filters peers exchange.
 * Two spellings of one resource must therefore produce the same bytes, and
 * the rules are deliberately the small set every Summary Cache and Squid
 * Cache Digest peer agrees on: lower-case scheme and host, default port
 * dropped, empty path "/". Path and query are kept byte for byte, because
 * decoding percent-escapes could merge URLs an origin treats as distinct.
 */
#include "url.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool
is_regname_char(unsigned char c)
{
	return isalnum(c) || strchr("-._~%!$&'()*+,;=", c) != NULL;
}

static bool
is_ipv6_char(unsigned char c)
{
	return isxdigit(c) || c == ':' || c == '.';
}

/*
 * Splits "host[:port]" at s[0..n). Host is a reg-name or a bracketed IPv6
 * literal. *port is 0 when absent or empty.
 */
static int
split_authority(const char *s, size_t n, size_t *hlen, unsigned *port,
    const char **why)
{
	size_t i = 0;

	if (n == 0) {
		*why = "empty host";
		return -1;
	}
	/* before the port is looked for: in "a:b@host" the colon is not
	 * the port's */
	if (memchr(s, '@', n) != NULL) {
		*why = "userinfo in URL (user:password@ is not allowed in "
		    "http URLs, RFC 9110 4.2.4)";
		return -1;
	}
	if (s[0] == '[') {
		for (i = 1; i < n && s[i] != ']'; i++) {
			if (!is_ipv6_char((unsigned char)s[i])) {
				*why = "bad IPv6 literal";
				return -1;
			}
		}
		if (i == n || i == 1) {
			*why = "bad IPv6 literal";
			return -1;
		}
		i++;
	} else {
		for (; i < n && s[i] != ':'; i++) {
			if (!is_regname_char((unsigned char)s[i])) {
				*why = "bad character in host";
				return -1;
			}
		}
		if (i == 0) {
			*why = "empty host";
			return -1;
		}
	}
	*hlen = i;
	*port = 0;
	if (i == n)
		return 0;
	if (s[i] != ':') {
		*why = "bad authority";
		return -1;
	}
	if (n - i - 1 > 5) {
		*why = "bad port";
		return -1;
	}
	for (i++; i < n; i++) {
		if (s[i] < '0' || s[i] > '9') {
			*why = "bad port";
			return -1;
		}
		*port = *port * 10 + (unsigned)(s[i] - '0');
	}
	if (*port > 65535) {
		*why = "bad port";
		return -1;
	}
	return 0;
}

static int
build(struct url *u, bool https, const char *host, size_t hlen, unsigned port,
    const char *path, size_t plen)
{
	unsigned dflt = https ? 443 : 80;
	const char *scheme = https ? "https://" : "http://";
	size_t slen = strlen(scheme);
	char portbuf[16] = "";

	if (port == 0)
		port = dflt;
	if (port != dflt)
		snprintf(portbuf, sizeof(portbuf), ":%u", port);
	size_t plen_eff = plen ? plen : 1;
	size_t len = slen + hlen + strlen(portbuf) + plen_eff;
	char *p = malloc(len + 1);
	if (p == NULL)
		return -1;
	memcpy(p, scheme, slen);
	for (size_t i = 0; i < hlen; i++)
		p[slen + i] = (char)tolower((unsigned char)host[i]);
	size_t off = slen + hlen;
	memcpy(p + off, portbuf, strlen(portbuf));
	off += strlen(portbuf);
	if (plen)
		memcpy(p + off, path, plen);
	else
		p[off] = '/';
	p[len] = '\0';
	*u = (struct url){
		.norm = p, .len = len, .host_off = slen, .host_len = hlen,
		.path_off = off, .port = (uint16_t)port, .https = https,
	};
	return 0;
}

int
url_parse_absolute(const char *s, size_t n, struct url *u, const char **why)
{
	bool https;
	size_t i;

	memset(u, 0, sizeof(*u));
	if (n >= 7 && strncasecmp(s, "http://", 7) == 0) {
		https = false;
		i = 7;
	} else if (n >= 8 && strncasecmp(s, "https://", 8) == 0) {
		https = true;
		i = 8;
	} else {
		*why = "not an http or https URL";
		return -1;
	}
	size_t a = i;
	while (i < n && s[i] != '/' && s[i] != '?' && s[i] != '#')
		i++;
	size_t hlen;
	unsigned port;
	if (split_authority(s + a, i - a, &hlen, &port, why) < 0)
		return -1;
	if (memchr(s + i, '#', n - i) != NULL) {
		*why = "fragment in request target";
		return -1;
	}
	/* "http://h?q" has an empty path: the normal form is "http://h/?q" */
	if (i < n && s[i] == '?') {
		char *tmp = malloc(n - i + 2);
		if (tmp == NULL)
			return -1;
		tmp[0] = '/';
		memcpy(tmp + 1, s + i, n - i);
		int rc = build(u, https, s + a, hlen, port, tmp, n - i + 1);
		free(tmp);
		return rc;
	}
	return build(u, https, s + a, hlen, port, s + i, n - i);
}

int
url_parse_authority(const char *s, size_t n, struct url *u, const char **why)
{
	size_t hlen;
	unsigned port;

	memset(u, 0, sizeof(*u));
	if (split_authority(s, n, &hlen, &port, why) < 0)
		return -1;
	if (port == 0) {
		*why = "CONNECT target needs a port";
		return -1;
	}
	/* the normal form of an authority is "host:port", always with port */
	size_t len = hlen + 6;
	char *p = malloc(len + 1);
	if (p == NULL)
		return -1;
	for (size_t i = 0; i < hlen; i++)
		p[i] = (char)tolower((unsigned char)s[i]);
	int w = snprintf(p + hlen, 7, ":%u", port & 0xffff);
	*u = (struct url){
		.norm = p, .len = hlen + (size_t)w, .host_off = 0,
		.host_len = hlen, .path_off = hlen + (size_t)w,
		.port = (uint16_t)port,
	};
	return 0;
}

void
url_clear(struct url *u)
{
	free(u->norm);
	memset(u, 0, sizeof(*u));
}

void
url_host(const struct url *u, char *out, size_t n)
{
	const char *h = u->norm + u->host_off;
	size_t len = u->host_len;

	/* brackets are URL syntax, not part of an IPv6 address */
	if (len >= 2 && h[0] == '[') {
		h++;
		len -= 2;
	}
	snprintf(out, n, "%.*s", (int)len, h);
}
