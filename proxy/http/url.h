/*
 * Request targets: absolute-form URLs and CONNECT authorities, and the
 * normalized URL that is sumcache's cache key and summary key.
 */
#ifndef URL_H
#define URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct url {
	char *norm;      /* owned, NUL-terminated normalized absolute URL */
	size_t len;
	size_t host_off; /* host inside norm (brackets kept for IPv6) */
	size_t host_len;
	size_t path_off; /* path and query inside norm, starts with '/' */
	uint16_t port;   /* explicit or the scheme's default */
	bool https;
};

/*
 * Parses an absolute-form target ("http://Host:80/p?q") and normalizes it:
 * scheme and host lower-cased, the scheme's default port dropped, an empty
 * path made "/". Userinfo and fragments are refused. Returns 0, or -1 with
 * *why set; on success *u owns norm (url_clear frees it).
 */
int url_parse_absolute(const char *s, size_t n, struct url *u,
    const char **why);

/* Parses a CONNECT target "host:port"; port is required. */
int url_parse_authority(const char *s, size_t n, struct url *u,
    const char **why);

void url_clear(struct url *u);

/* u's host as a name or address (an IPv6 address without the URL's
 * brackets) into out (truncated to n - 1). */
void url_host(const struct url *u, char *out, size_t n);

#endif
