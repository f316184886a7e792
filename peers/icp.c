/*
 * See icp.h.
 */
#include "icp.h"

#include <string.h>

#include "netorder.h"

static int
known_op(unsigned op)
{
	switch (op) {
	case ICP_OP_QUERY: case ICP_OP_HIT: case ICP_OP_MISS: case ICP_OP_ERR:
	case ICP_OP_MISS_NOFETCH: case ICP_OP_DENIED: case ICP_OP_HIT_OBJ:
		return 1;
	default:
		return 0;
	}
}

enum icp_err
icp_decode(const uint8_t *buf, size_t len, struct icp_msg *m)
{
	if (len < ICP_HEADER)
		return ICP_ERR_SHORT;
	if (get16(buf + 2) != len)
		return ICP_ERR_LENGTH;
	if (buf[1] != ICP_VERSION)
		return ICP_ERR_VERSION;
	if (!known_op(buf[0]))
		return ICP_ERR_OPCODE;
	m->op = (enum icp_op)buf[0];
	m->reqnum = get32(buf + 4);
	/* options, option data and the sender address are not used: Squid
	 * sends the latter as 0 and the datagram's source is what counts */
	size_t off = ICP_HEADER;
	if (m->op == ICP_OP_QUERY) {
		if (len < off + 4)
			return ICP_ERR_SHORT;
		off += 4;  /* requester address, usually 0 */
	}
	const uint8_t *url = buf + off;
	const uint8_t *nul = memchr(url, '\0', len - off);
	if (nul == NULL || nul == url)
		return ICP_ERR_URL;
	m->url = (const char *)url;
	m->url_len = (size_t)(nul - url);
	return ICP_OK;
}

size_t
icp_encode(uint8_t *out, enum icp_op op, uint32_t reqnum, const char *url,
    size_t url_len)
{
	size_t off = ICP_HEADER + (op == ICP_OP_QUERY ? 4 : 0);
	size_t len = off + url_len + 1;

	if (len > ICP_MAX)
		return 0;
	memset(out, 0, off);
	out[0] = (uint8_t)op;
	out[1] = ICP_VERSION;
	put16(out + 2, (uint16_t)len);
	put32(out + 4, reqnum);
	memcpy(out + off, url, url_len);
	out[off + url_len] = '\0';
	return len;
}
