/*
 * libFuzzer target for sumcache's own parsers: request and response heads,
 * chunked bodies (split at every position the input chooses) and URLs;
 * and what interception makes of a CONNECT's host: the first line as an
 * authority, its host against host patterns (one made of the host itself
 * must match it) and whether a leaf may name it.
 * Built by tests/run.sh with clang; see tests/README.md.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cert.h"
#include "hostpat.h"
#include "http_parse.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
authority(const char *s, size_t n)
{
	static const char *const lists[] = {"*.debian.org", "example.org",
	    "::1", "127.0.0.1"};
	struct hostpats pats = {0}, own = {0};
	struct url u;
	const char *why;
	char host[300];

	if (url_parse_authority(s, n, &u, &why) < 0)
		return;
	url_host(&u, host, sizeof(host));
	url_clear(&u);
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (hostpat_add(&pats, lists[i], &why) < 0)
			__builtin_trap();
	(void)hostpat_match(&pats, host);
	(void)cert_host_ok(host);
	if (strchr(host, '*') == NULL && hostpat_add(&own, host, &why) == 0 &&
	    !hostpat_match(&own, host))
		__builtin_trap();   /* a name must match itself */
	hostpat_clear(&pats);
	hostpat_clear(&own);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct http_limits lim = {1024, 8192, 64};
	struct http_head h;
	const char *why;
	size_t scan = 0;

	const char *nl = memchr(s, '\n', size);
	authority(s, nl != NULL ? (size_t)(nl - s) : size);

	size_t end = http_head_end(s, size, &scan);
	if (end == HTTP_HEAD_BARE_LF)
		end = 0; /* refused: the whole input is body, below */
	if (end > 0) {
		if (http_parse_request(s, end, &lim, &h, &why) == 0) {
			struct url u;
			if (url_parse_absolute(h.target, h.target_len, &u,
			    &why) == 0)
				url_clear(&u);
			for (unsigned i = 0; i < h.nfields; i++)
				(void)http_field_hop_by_hop(&h, &h.fields[i]);
			http_head_clear(&h);
		}
		if (http_parse_response(s, end, &lim, &h, &why) == 0)
			http_head_clear(&h);
	}
	/* the rest is a chunked body, fed in pieces of the first byte's size */
	const char *body = s + end;
	size_t left = size - end, step = size ? (size_t)data[0] % 7 + 1 : 1;
	struct http_chunked c = {0};
	while (left > 0) {
		const char *d;
		size_t dlen, n = left < step ? left : step;
		ssize_t used = http_chunked_feed(&c, body, n, &d, &dlen, &why);
		if (used < 0 || http_chunked_done(&c))
			break;
		if (dlen > 0 && (d < body || d + dlen > body + n))
			__builtin_trap(); /* data must lie inside the input */
		body += used;
		left -= (size_t)used;
		if (used == 0)
			break;
	}
	return 0;
}
