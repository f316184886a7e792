/*
 * Deadline codes (summary/deadline.h): rounded down, never late; exact
 * where the form says; shifts exact and agreeing with encoding afresh;
 * the top code beyond the range.
 */
#include <criterion/criterion.h>

#include "deadline.h"
#include "sumtest.h"

static const struct dl_form *F = &DL_FORM;

Test(deadline, the_form_fits_its_bits_and_its_shift_is_whole_steps)
{
	cr_assert_eq(F->exp_bits + F->mant_bits, DL_BITS);
	/* the largest step, 2^(top exponent - 1) units, divides the shift */
	uint64_t step = 1ull << ((1u << F->exp_bits) - 2);
	cr_assert_eq(F->shift % step, 0);
	/* 9.1 hours of range, exact to the half second below 512 s */
	cr_assert_eq(dl_value(F, dl_top(F)) * F->unit_ms, 32736000);
	cr_assert_eq(dl_encode(F, 1023), 1023);
	cr_assert_eq(dl_value(F, dl_encode(F, 1024)), 1024);
	cr_assert_eq(dl_value(F, dl_encode(F, 1025)), 1024);
}

Test(deadline, codes_round_down_within_their_relative_step)
{
	for (int i = 0; i < 200000; i++) {
		uint64_t u = test_rand() % (dl_value(F, dl_top(F)) + 100);
		uint32_t c = dl_encode(F, u);
		if (c == dl_top(F)) {
			cr_assert_geq(u, dl_value(F, c));
			continue;
		}
		uint64_t v = dl_value(F, c);
		cr_assert_leq(v, u, "%llu coded as %llu, later",
		    (unsigned long long)u, (unsigned long long)v);
		/* the next code is past u: the largest code at most u */
		cr_assert_gt(dl_value(F, c + 1), u);
		if (u >= 1u << (F->mant_bits + 1))
			cr_assert_lt((double)(u - v) / (double)u,
			    1.0 / (1u << F->mant_bits));
		else
			cr_assert_eq(v, u);
	}
}

Test(deadline, codes_order_as_their_deadlines)
{
	for (uint32_t c = 1; c <= dl_top(F); c++)
		cr_assert_gt(dl_value(F, c), dl_value(F, c - 1), "code %u",
		    c);
	for (uint32_t c = 0; c < dl_top(F); c++)
		cr_assert_eq(dl_encode(F, dl_value(F, c)), c, "code %u", c);
}

Test(deadline, a_claim_holds_until_its_rounded_deadline_and_never_after)
{
	uint64_t base = 7000000;

	cr_assert_eq(dl_of(F, base, base), 0);
	cr_assert_eq(dl_of(F, base, base - 1), 0);
	cr_assert_not(dl_live(F, 0, base, base));
	for (int i = 0; i < 100000; i++) {
		uint64_t until = base + 1 + test_rand() % 40000000;
		uint32_t c = dl_of(F, base, until);
		uint64_t ends = base + dl_value(F, c) * F->unit_ms;
		if (c == dl_top(F))
			continue;
		cr_assert_leq(ends, until);
		cr_assert(dl_live(F, c, base, ends - 1) || ends == base);
		cr_assert_not(dl_live(F, c, base, ends));
		cr_assert_not(dl_live(F, c, base, until));
	}
	/* never: beyond any range, believed whatever the clock */
	cr_assert_eq(dl_of(F, base, UINT64_MAX), dl_top(F));
	cr_assert(dl_live(F, dl_top(F), base, UINT64_MAX - base));
}

Test(deadline, a_shift_is_encoding_afresh_from_the_new_base)
{
	uint64_t base = 0, shift_ms = F->shift * F->unit_ms;

	for (int i = 0; i < 100000; i++) {
		uint64_t until = 1 + test_rand() % 60000000;
		uint64_t n = test_rand() % 40;
		uint32_t c = dl_of(F, base, until);
		uint32_t moved = dl_shift(F, c, n);
		if (c == dl_top(F)) {
			cr_assert_eq(moved, c);
			continue;
		}
		/* what the old code claimed, coded from the new base: the
		 * same instant when it is still ahead of it */
		uint64_t ends = base + dl_value(F, c) * F->unit_ms;
		cr_assert_eq(moved, dl_of(F, base + n * shift_ms, ends),
		    "until %llu, %llu shifts", (unsigned long long)until,
		    (unsigned long long)n);
		if (moved != 0)
			cr_assert_eq(base + n * shift_ms +
			    dl_value(F, moved) * F->unit_ms, ends);
	}
	/* shifts compose, and a huge one passes every finite code */
	cr_assert_eq(dl_shift(F, dl_shift(F, 3000, 2), 3),
	    dl_shift(F, 3000, 5));
	cr_assert_eq(dl_shift(F, dl_top(F) - 1, UINT64_MAX), 0);
}
