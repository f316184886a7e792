/*
 * ICP v2 (RFC 2186) messages as Squid speaks them (PROTOCOLS.md section
 * 3): a 20-byte header in network byte order, then for a QUERY a 4-byte
 * requester address and the NUL-terminated URL, for a reply the URL
 * alone. Pure code, no I/O; every read is bounds-checked.
 */
#ifndef ICP_H
#define ICP_H

#include <stddef.h>
#include <stdint.h>

#define ICP_VERSION 2
#define ICP_HEADER 20
#define ICP_MAX 16384      /* largest message either side sends */
#define ICP_PORT 3130
/* A HIT is answered for a copy that stays fresh this many seconds more,
 * as Squid answers (icpCheckUdpHit: the copy must outlive the fetch that
 * follows). */
#define ICP_HIT_FRESH 30

enum icp_op {
	ICP_OP_QUERY = 1,
	ICP_OP_HIT = 2,
	ICP_OP_MISS = 3,
	ICP_OP_ERR = 4,
	ICP_OP_MISS_NOFETCH = 21,
	ICP_OP_DENIED = 22,
	ICP_OP_HIT_OBJ = 23,
};

/* Why a datagram was dropped (the reason label of its counter). */
enum icp_err {
	ICP_OK = 0,
	ICP_ERR_SHORT,      /* under a header, or a QUERY without its address */
	ICP_ERR_LENGTH,     /* header length differs from the datagram's */
	ICP_ERR_VERSION,
	ICP_ERR_OPCODE,     /* unknown opcode: ignored, never answered */
	ICP_ERR_URL,        /* no NUL, or an empty URL */
	ICP_NERRS
};

struct icp_msg {
	enum icp_op op;
	uint32_t reqnum;     /* echoed in the reply */
	const char *url;     /* inside the datagram, NUL-terminated */
	size_t url_len;      /* without the NUL */
};

/* Decodes a datagram; url points into buf. */
enum icp_err icp_decode(const uint8_t *buf, size_t len, struct icp_msg *m);

/*
 * Writes a message (a QUERY gets the zero requester address) into out,
 * which holds ICP_MAX bytes. Returns its length, or 0 when the URL does
 * not fit.
 */
size_t icp_encode(uint8_t *out, enum icp_op op, uint32_t reqnum,
    const char *url, size_t url_len);

#endif
