/*
 * The cell lists of a timed summary (cbf.h): positions, each with its
 * deadline in whole seconds since the sender's base, grouped by deadline,
 * each group a Rice list (rice.h):
 *
 *   varint groups | per group: varint (its deadline - the previous
 *   group's, the first from 0) | Rice list of its positions, not empty
 *
 * Deadlines rise strictly from group to group, up to CBF_UNTIL_MAX; 0 (a
 * cell cleared) only where clears are allowed (a delta), and then first.
 * A position is in one group at most. Grouping costs about log2(groups)
 * bits a position beyond one Rice list of them all, where a deadline
 * written beside each position would cost 16.
 */
#ifndef TIMED_H
#define TIMED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct timed_cells {
	uint64_t *pos;
	uint16_t *until;
	size_t n;
};

/* Appends the n cells (pos strictly ascending). 0, or -1 on ENOMEM. */
int timed_encode(struct sum_buf *out, const uint64_t *pos,
    const uint16_t *until, size_t n);

/*
 * Decodes the whole of in[0..len) for a summary of m cells into *c (free
 * it with timed_cells_clear), strictly: 0, or SUM_ERR_MALFORMED (rice.h)
 * or SUM_ERR_NOMEM with *c empty.
 */
int timed_decode(const uint8_t *in, size_t len, uint64_t m, bool clears,
    struct timed_cells *c);
void timed_cells_clear(struct timed_cells *c);

#endif
