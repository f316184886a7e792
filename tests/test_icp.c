/*
 * ICP v2 messages (PROTOCOLS.md section 3): the bytes we send, and every
 * way a datagram can be wrong.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "icp.h"

Test(icp, query_bytes_as_rfc2186_lays_them_out)
{
	uint8_t out[ICP_MAX];
	const char *url = "http://a.example/x";
	size_t n = icp_encode(out, ICP_OP_QUERY, 0x01020304, url, strlen(url));

	cr_assert_eq(n, 20 + 4 + strlen(url) + 1);
	const uint8_t head[20] = {1, 2, 0, (uint8_t)n, 1, 2, 3, 4};
	cr_assert_arr_eq(out, head, 20, "opcode, version, length, reqnum; "
	    "options, option data and sender address zero");
	cr_assert_arr_eq(out + 20, "\0\0\0\0", 4, "requester address 0");
	cr_assert_str_eq((char *)out + 24, url);

	struct icp_msg m;
	cr_assert_eq(icp_decode(out, n, &m), ICP_OK);
	cr_assert_eq(m.op, ICP_OP_QUERY);
	cr_assert_eq(m.reqnum, 0x01020304);
	cr_assert_eq(m.url_len, strlen(url));
	cr_assert_arr_eq(m.url, url, m.url_len);
}

Test(icp, reply_carries_the_url_without_an_address)
{
	uint8_t out[ICP_MAX];
	size_t n = icp_encode(out, ICP_OP_HIT, 7, "http://h/", 9);
	struct icp_msg m;

	cr_assert_eq(n, 20 + 10);
	cr_assert_eq(icp_decode(out, n, &m), ICP_OK);
	cr_assert_eq(m.op, ICP_OP_HIT);
	cr_assert_eq(m.reqnum, 7);
	cr_assert_eq(m.url_len, 9);
	cr_assert_eq(m.url, (const char *)out + 20);
}

Test(icp, url_too_long_for_a_datagram_is_not_encoded)
{
	static uint8_t out[ICP_MAX];
	static char url[ICP_MAX];

	memset(url, 'a', sizeof(url));
	/* header 20, requester 4, NUL 1 */
	cr_assert_eq(icp_encode(out, ICP_OP_QUERY, 1, url, ICP_MAX - 24), 0);
	cr_assert_eq(icp_encode(out, ICP_OP_QUERY, 1, url, ICP_MAX - 25),
	    ICP_MAX);
}

Test(icp, every_malformed_datagram_is_refused)
{
	uint8_t good[ICP_MAX], bad[ICP_MAX];
	size_t n = icp_encode(good, ICP_OP_QUERY, 9, "http://h/", 9);
	struct icp_msg m;

	cr_assert_eq(icp_decode(good, 19, &m), ICP_ERR_SHORT);
	cr_assert_eq(icp_decode(good, n - 1, &m), ICP_ERR_LENGTH,
	    "datagram shorter than its header says");

	memcpy(bad, good, n);
	bad[1] = 3;
	cr_assert_eq(icp_decode(bad, n, &m), ICP_ERR_VERSION);

	memcpy(bad, good, n);
	bad[0] = 99;
	cr_assert_eq(icp_decode(bad, n, &m), ICP_ERR_OPCODE);

	memcpy(bad, good, n);
	bad[n - 1] = 'x';
	cr_assert_eq(icp_decode(bad, n, &m), ICP_ERR_URL, "no NUL");

	/* a QUERY too short for its requester address */
	uint8_t q[22] = {1, 2, 0, 22};
	cr_assert_eq(icp_decode(q, sizeof(q), &m), ICP_ERR_SHORT);

	/* an empty URL */
	uint8_t e[25] = {1, 2, 0, 25};
	cr_assert_eq(icp_decode(e, sizeof(e), &m), ICP_ERR_URL);
}
