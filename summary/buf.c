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
