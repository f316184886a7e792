/*
 * A growable byte buffer owned by its caller: what every encoder in
 * summary/ and peers/ appends to.
 */
#ifndef BUF_H
#define BUF_H

#include <stddef.h>
#include <stdint.h>

struct sum_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

/* Appends n bytes; or makes room for n more (len unchanged). 0 or -1
 * (ENOMEM, b unchanged). */
int sum_buf_put(struct sum_buf *b, const void *p, size_t n);
int sum_buf_reserve(struct sum_buf *b, size_t n);
/* Frees the bytes; b is empty and reusable. */
void sum_buf_free(struct sum_buf *b);

#endif
