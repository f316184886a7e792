/*
 * The log-line limits (peers/base/ratelog.h): a line a second, and the
 * same kept apart for each kind of a family, so that a second fault of
 * another kind in the same second has its line; beyond RATELOG_KINDS
 * kinds, the one whose last line is oldest gives up its place.
 */
#include <criterion/criterion.h>

#include "ratelog.h"

Test(ratelog, a_line_a_second_and_the_skipped_counted)
{
	struct ratelog r = {0};
	uint64_t skipped = 99;

	cr_assert(ratelog_due(&r, &skipped));
	cr_assert_eq(skipped, 0);
	cr_assert_not(ratelog_due(&r, &skipped));
	cr_assert_not(ratelog_due(&r, &skipped));
	r.last_ms -= 1000;   /* a second later */
	cr_assert(ratelog_due(&r, &skipped));
	cr_assert_eq(skipped, 2);
}

Test(ratelog, each_kind_has_its_line_in_the_same_second)
{
	struct ratelog_by rb = {0};
	uint64_t skipped;

	cr_assert(ratelog_due_for(&rb, 0, &skipped));
	cr_assert(ratelog_due_for(&rb, 7, &skipped), "another kind waited");
	cr_assert_not(ratelog_due_for(&rb, 7, &skipped));
	cr_assert_not(ratelog_due_for(&rb, 0, &skipped));
	cr_assert_not(ratelog_due_for(&rb, 7, &skipped));
	for (unsigned i = 0; i < RATELOG_KINDS; i++)
		if (rb.kind[i] == 7) {
			rb.r[i].last_ms -= 1000;
			break;
		}
	cr_assert(ratelog_due_for(&rb, 7, &skipped));
	cr_assert_eq(skipped, 2, "kind 7's own skipped lines");
}

Test(ratelog, past_its_kinds_the_oldest_gives_way)
{
	struct ratelog_by rb = {0};
	uint64_t skipped;

	for (uint64_t k = 1; k <= RATELOG_KINDS; k++) {
		cr_assert(ratelog_due_for(&rb, k, &skipped));
		/* kind 1's line is the oldest, kind 8's the newest */
		for (unsigned i = 0; i < RATELOG_KINDS; i++)
			if (rb.kind[i] == k)
				rb.r[i].last_ms -= 100 * (RATELOG_KINDS - k);
	}
	cr_assert(ratelog_due_for(&rb, 100, &skipped), "a new kind waited");
	/* it took kind 1's place: kind 1 is new again, and due; kind 2 ...
	 * kept theirs */
	cr_assert_not(ratelog_due_for(&rb, 2, &skipped));
	cr_assert_not(ratelog_due_for(&rb, RATELOG_KINDS, &skipped));
	cr_assert(ratelog_due_for(&rb, 1, &skipped));
}
