/*
 * Rice-coded lists of strictly increasing bit positions: the body of every
 * summary update. Self-delimiting, so lists can follow one another:
 *
 *   varint count | byte r | bitstream of count gaps | zero pad to a byte
 *
 * gap 0 is the first position, gap i is pos[i] - pos[i-1] - 1; each gap is
 * its quotient (gap >> r) in unary (ones ended by a zero) followed by its r
 * low bits, most significant first; bits fill bytes from the top bit.
 */
#ifndef RICE_H
#define RICE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The Rice parameter that makes this list smallest. */
unsigned rice_best_param(const uint64_t *pos, size_t n);

/* Encoded size in bytes of the list with parameter r. */
size_t rice_size(const uint64_t *pos, size_t n, unsigned r);

/* Appends the list (pos strictly increasing) with the best parameter.
 * Returns 0, or -1 on ENOMEM. */
int rice_encode(struct sum_buf *out, const uint64_t *pos, size_t n);

/*
 * Decodes one list from in[0..len) for a filter of m bits into a new array
 * *pos (caller frees) of *n entries. Strict: every position < m, the count
 * at most m, padding bits zero. Returns bytes consumed (> 0) or a negative
 * error (SUM_ERR_MALFORMED, SUM_ERR_NOMEM).
 */
long rice_decode(const uint8_t *in, size_t len, uint64_t m, uint64_t **pos,
    size_t *n);

enum sum_err {
	SUM_ERR_MALFORMED = -1, /* not a valid encoding */
	SUM_ERR_NOMEM = -2,
	SUM_ERR_PARAMS = -3,    /* scheme, m or k differ from the summary's */
	SUM_ERR_GAP = -4,       /* not the next sequence: pull a full one */
	SUM_ERR_CHECKSUM = -5,  /* decoded, but the result is not the sender's */
};

#endif
