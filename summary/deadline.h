/*
 * Deadline codes: a claim's deadline in a few bits, as a slot of a timed
 * summary carries it (cuckoo.h).
 *
 * A code counts units past its holder's base, rounded down (a claim may
 * end early, never late), in a floating form whose step grows with the
 * distance: exact to the unit below 2^(mant+1) units, then 2^mant steps
 * a doubling, so a relative error under 2^-mant. Code 0 is the base
 * itself, always passed: no claim. The top code means "beyond the
 * range": a holder believes it until told the exact code, which the
 * sender sends once the deadline comes within range (a key cached for a
 * year is sent once, not once a range).
 *
 * The base moves on by `shift` units at a time, at the sender and at
 * every holder alike, with no message: each code is re-encoded that much
 * lower, exactly, since the shift is a multiple of the largest step. So
 * a code never counts more than the range plus a shift, and a claim of a
 * few seconds keeps a step of one unit however long the table lives.
 *
 * DL_FORM is the summary's (deploy/README.md, "Compact timed summaries",
 * has the forms measured): 12 bits, half-second units, exact to 512 s,
 * 9.1 h of range, a shift every 1,024 s. Other forms are for
 * deploy/bench/deadline-eval, which measures them.
 */
#ifndef DEADLINE_H
#define DEADLINE_H

#include <stdbool.h>
#include <stdint.h>

struct dl_form {
	unsigned exp_bits, mant_bits;
	uint64_t unit_ms;
	uint64_t shift;      /* units; a multiple of the largest step */
};

static const struct dl_form DL_FORM = {3, 9, 500, 2048};
#define DL_BITS 12

/* The top code: beyond the range. */
static inline uint32_t
dl_top(const struct dl_form *f)
{
	return (1u << (f->exp_bits + f->mant_bits)) - 1;
}

/* The units past the base a code stands for (the top: where the range
 * ends). */
static inline uint64_t
dl_value(const struct dl_form *f, uint32_t code)
{
	uint32_t e = code >> f->mant_bits;
	uint32_t m = code & ((1u << f->mant_bits) - 1);

	return e == 0 ? m : ((1ull << f->mant_bits) + m) << (e - 1);
}

/* The largest code at most units past the base; the top at or beyond
 * the range. */
static inline uint32_t
dl_encode(const struct dl_form *f, uint64_t units)
{
	if (units >= dl_value(f, dl_top(f)))
		return dl_top(f);
	if (units < (1ull << f->mant_bits))
		return (uint32_t)units;
	unsigned e = 64 - (unsigned)__builtin_clzll(units) - f->mant_bits;
	return e << f->mant_bits |
	    (uint32_t)((units >> (e - 1)) - (1ull << f->mant_bits));
}

/* The code of a deadline of until_ms on the base's clock (UINT64_MAX:
 * never, the top); 0 when it is at or before the base. */
static inline uint32_t
dl_of(const struct dl_form *f, uint64_t base_ms, uint64_t until_ms)
{
	if (until_ms == UINT64_MAX)
		return dl_top(f);
	return until_ms > base_ms ?
	    dl_encode(f, (until_ms - base_ms) / f->unit_ms) : 0;
}

/* Whether a claim of this code still holds at now_ms on the base's
 * clock. */
static inline bool
dl_live(const struct dl_form *f, uint32_t code, uint64_t base_ms,
    uint64_t now_ms)
{
	return code == dl_top(f) ||
	    dl_value(f, code) * f->unit_ms + base_ms > now_ms;
}

/* The code once the base has moved on by n shifts (0: passed). */
static inline uint32_t
dl_shift(const struct dl_form *f, uint32_t code, uint64_t n)
{
	uint64_t v = dl_value(f, code);

	if (code == dl_top(f))
		return code;
	if (n > v / f->shift)
		return 0;
	return v > n * f->shift ? dl_encode(f, v - n * f->shift) : 0;
}

#endif
