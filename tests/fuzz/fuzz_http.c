/*
 * libFuzzer target for sumcache's own parsers: request and response heads,
 * chunked bodies (split at every position the input chooses) and URLs.
 * Built by tests/run.sh with clang; see README "Fuzzing".
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "http_parse.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct http_limits lim = {1024, 8192, 64};
	struct http_head h;
	const char *why;
	size_t scan = 0;

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
