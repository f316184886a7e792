/*
 * See buf.h.
 */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

int
sum_buf_reserve(struct sum_buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *np = realloc(b->p, cap);
		if (np == NULL)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	return 0;
}

int
sum_buf_put(struct sum_buf *b, const void *p, size_t n)
{
	if (sum_buf_reserve(b, n) < 0)
		return -1;
	if (n > 0)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

void
sum_buf_free(struct sum_buf *b)
{
	free(b->p);
	*b = (struct sum_buf){0};
}

size_t
sum_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int
sum_buf_varint(struct sum_buf *b, uint64_t v)
{
	uint8_t out[10];
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return sum_buf_put(b, out, n);
}

size_t
sum_varint_read(const uint8_t *in, size_t len, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < len && i < 10; i++) {
		/* the tenth byte holds bit 63 alone */
		if (i == 9 && in[i] > 1)
			return 0;
		x |= (uint64_t)(in[i] & 0x7f) << (7 * i);
		if (!(in[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}
