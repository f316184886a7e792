/*
 * A request body decoded as it arrives (proxy/serve/reqbody.c): a
 * Content-Length body in pieces, a chunked one decoded to its data, a
 * framing error named, a peer's message read whole into one block, and
 * the buffer drained as the origin fetch reads it.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "http_parse.h"
#include "reqbody.h"

static struct reqbody *
body_for(bool chunked, int64_t length)
{
	struct http_head h;
	struct reqbody *b;

	memset(&h, 0, sizeof(h));
	h.chunked = chunked;
	h.content_length = length;
	cr_assert_eq(reqbody_new(&h, &b), 0);
	return b;
}

static enum reqbody_feed
feed(struct reqbody *b, struct evbuffer *in, const char *bytes)
{
	const char *why = NULL;

	evbuffer_add(in, bytes, strlen(bytes));
	return reqbody_feed(b, in, &why);
}

/* What waits for the origin, drained through reqbody_read. */
static void
assert_drains_to(struct reqbody *b, const char *want)
{
	char got[256];
	size_t n = 0, r;

	cr_assert_eq(reqbody_waiting(b), strlen(want));
	while ((r = reqbody_read(b, got + n, 3)) > 0)
		n += r;
	cr_assert_eq(n, strlen(want));
	cr_assert(memcmp(got, want, n) == 0);
	cr_assert_eq(reqbody_waiting(b), 0);
}

Test(reqbody, no_body_announced_is_none)
{
	cr_assert_null(body_for(false, -1));
	cr_assert_null(body_for(false, 0));
}

/* Only the announced bytes are taken: the next request's stay. */
Test(reqbody, length_body_arrives_in_pieces_and_stops_at_its_end)
{
	struct reqbody *b = body_for(false, 10);
	struct evbuffer *in = evbuffer_new();

	cr_assert_eq(feed(b, in, "abcd"), REQBODY_MORE);
	cr_assert_not(reqbody_done(b));
	cr_assert_eq(feed(b, in, "efghijGET / HTTP/1.1"), REQBODY_DONE);
	cr_assert(reqbody_done(b));
	cr_assert_eq(evbuffer_get_length(in), strlen("GET / HTTP/1.1"));
	assert_drains_to(b, "abcdefghij");
	reqbody_free(&b);
	cr_assert_null(b);
	evbuffer_free(in);
}

Test(reqbody, chunked_body_is_decoded_across_feeds)
{
	struct reqbody *b = body_for(true, -1);
	struct evbuffer *in = evbuffer_new();

	cr_assert_eq(feed(b, in, "5\r\nhel"), REQBODY_MORE);
	cr_assert_eq(feed(b, in, "lo\r\n6\r\n world\r\n"), REQBODY_MORE);
	cr_assert_eq(feed(b, in, "0\r\n\r\n"), REQBODY_DONE);
	assert_drains_to(b, "hello world");
	reqbody_free(&b);
	evbuffer_free(in);
}

Test(reqbody, chunked_framing_error_is_named)
{
	struct reqbody *b = body_for(true, -1);
	struct evbuffer *in = evbuffer_new();
	const char *why = NULL;

	evbuffer_add(in, "zz\r\nabc\r\n", 9);
	cr_assert_eq(reqbody_feed(b, in, &why), REQBODY_BAD);
	cr_assert_not_null(why);
	cr_assert_not(reqbody_done(b));
	reqbody_free(&b);
	evbuffer_free(in);
}

/* A peer's message goes to one block, not the origin's buffer, and
 * its owner takes it. */
Test(reqbody, peer_message_is_read_whole_into_a_block)
{
	struct reqbody *b = body_for(false, 6);
	struct evbuffer *in = evbuffer_new();

	cr_assert_eq(reqbody_into_block(b), 0);
	cr_assert_eq(feed(b, in, "sum"), REQBODY_MORE);
	cr_assert_eq(feed(b, in, "mary"), REQBODY_DONE);
	cr_assert_eq(evbuffer_get_length(in), 1);
	cr_assert_eq(reqbody_waiting(b), 0);
	uint8_t *block = reqbody_take_block(b);
	cr_assert_not_null(block);
	cr_assert(memcmp(block, "summar", 6) == 0);
	cr_assert_null(reqbody_take_block(b));
	free(block);
	reqbody_free(&b);
	evbuffer_free(in);
}

/* A chunked message has no length to make a block of. */
Test(reqbody, chunked_body_has_no_block)
{
	struct reqbody *b = body_for(true, -1);

	cr_assert_eq(reqbody_into_block(b), -1);
	reqbody_free(&b);
}
