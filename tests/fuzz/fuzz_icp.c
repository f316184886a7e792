/*
 * libFuzzer target for the ICP decoder: any datagram either decodes or
 * is refused, never read out of bounds; what decodes encodes back to a
 * message that decodes to the same fields.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "icp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[ICP_MAX];
	struct icp_msg m, again;

	if (icp_decode(data, size, &m) != ICP_OK)
		return 0;
	size_t n = icp_encode(out, m.op, m.reqnum, m.url, m.url_len);
	if (n == 0)
		return 0;  /* a reply URL that fits no QUERY */
	if (icp_decode(out, n, &again) != ICP_OK || again.op != m.op ||
	    again.reqnum != m.reqnum || again.url_len != m.url_len ||
	    memcmp(again.url, m.url, m.url_len) != 0)
		abort();
	return 0;
}
