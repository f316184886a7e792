/*
 * A request's body, decoded as it arrives. Content-Length bytes are moved
 * as they are; chunked bodies are decoded from a window of the input,
 * so the origin sees the body without its framing (libcurl sends it
 * chunked again, or with a length, as it knows). How much waits is
 * bounded by the caller, which stops reading past CLIENT_BODY_HIGH; a
 * block is only made for a peer's message whose declared length pages.c
 * accepted (peers_receive_begin bounds a summary, INVAL_MAX_BYTES an
 * invalidation).
 */
#include "reqbody.h"

#include <stdlib.h>

#include <event2/buffer.h>

#include "http_parse.h"

/* the contiguous window a chunked body is decoded from */
#define REQBODY_WINDOW 65536

struct reqbody {
	bool chunked;
	bool done;
	uint64_t length;             /* Content-Length; 0 when chunked */
	uint64_t left;               /* of it, still to come */
	struct http_chunked chunk;   /* the chunked decoder's state */
	struct evbuffer *buf;        /* decoded, for the origin */
	uint8_t *block;              /* or one block, for a peer */
};

int
reqbody_new(const struct http_head *h, struct reqbody **out)
{
	struct reqbody *b;

	*out = NULL;
	if (!h->chunked && h->content_length <= 0)
		return 0;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return -1;
	b->chunked = h->chunked;
	b->length = h->chunked ? 0 : (uint64_t)h->content_length;
	b->left = b->length;
	if ((b->buf = evbuffer_new()) == NULL) {
		free(b);
		return -1;
	}
	*out = b;
	return 0;
}

void
reqbody_free(struct reqbody **bp)
{
	struct reqbody *b = *bp;

	if (b == NULL)
		return;
	*bp = NULL;
	if (b->buf != NULL)
		evbuffer_free(b->buf);
	free(b->block);
	free(b);
}

int
reqbody_into_block(struct reqbody *b)
{
	if (b->chunked || (b->block = malloc(b->length)) == NULL)
		return -1;
	return 0;
}

static enum reqbody_feed
feed_length(struct reqbody *b, struct evbuffer *in)
{
	size_t avail = evbuffer_get_length(in);
	size_t n = avail < b->left ? avail : (size_t)b->left;

	if (b->block != NULL)
		evbuffer_remove(in, b->block + (b->length - b->left), n);
	else
		evbuffer_remove_buffer(in, b->buf, n);
	b->left -= n;
	b->done = b->left == 0;
	return b->done ? REQBODY_DONE : REQBODY_MORE;
}

enum reqbody_feed
reqbody_feed(struct reqbody *b, struct evbuffer *in, const char **why)
{
	size_t avail;

	if (!b->chunked)
		return feed_length(b, in);
	while (!b->done && (avail = evbuffer_get_length(in)) > 0) {
		size_t win = avail < REQBODY_WINDOW ? avail : REQBODY_WINDOW;
		const char *p = (const char *)evbuffer_pullup(in,
		    (ev_ssize_t)win);
		const char *data;
		size_t dlen;
		ssize_t used = http_chunked_feed(&b->chunk, p, win, &data,
		    &dlen, why);
		if (used < 0)
			return REQBODY_BAD;
		if (dlen > 0)
			evbuffer_add(b->buf, data, dlen);
		evbuffer_drain(in, (size_t)used);
		b->done = http_chunked_done(&b->chunk);
	}
	return b->done ? REQBODY_DONE : REQBODY_MORE;
}

size_t
reqbody_waiting(const struct reqbody *b)
{
	return b->buf != NULL ? evbuffer_get_length(b->buf) : 0;
}

size_t
reqbody_read(struct reqbody *b, void *dst, size_t n)
{
	int got = evbuffer_remove(b->buf, dst, n);

	return got > 0 ? (size_t)got : 0;
}

bool
reqbody_done(const struct reqbody *b)
{
	return b->done;
}

uint8_t *
reqbody_take_block(struct reqbody *b)
{
	uint8_t *block = b->block;

	b->block = NULL;
	return block;
}
