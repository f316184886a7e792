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

/* Unsigned LEB128, as protobuf writes it: 7 bits a byte, low first. */
int sum_buf_varint(struct sum_buf *b, uint64_t v);
size_t sum_varint_len(uint64_t v);
/* Reads one from in[0..len): bytes used, or 0 when it is cut short or
 * longer than 64 bits. */
size_t sum_varint_read(const uint8_t *in, size_t len, uint64_t *v);

#endif
