#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "sumtest.h"

Test(cbf, no_false_negatives_with_interleaved_removes, .timeout = 120)
{
	const uint64_t n = 1000000;
	struct cbf *f = cbf_new(SUM_XXH3, cbf_size_for(n, 16), 4);
	struct sumkey k;

	cr_assert_not_null(f);
	for (uint64_t i = 0; i < n; i++) {
		test_key(i, &k);
		cbf_add(f, &k);
		/* remove an earlier key now and then, as evictions do */
		if (i % 3 == 2) {
			test_key(i - 2, &k);
			cr_assert(cbf_remove(f, &k));
		}
	}
	for (uint64_t i = 0; i < n; i++) {
		test_key(i, &k);
		bool removed = i % 3 == 0 && i + 2 < n;
		if (!removed)
			cr_assert(cbf_contains(f, &k), "false negative: %llu",
			    (unsigned long long)i);
	}
	cr_assert_eq(f->bad_removes, 0);
	cr_assert_eq(f->entries, n - (n / 3));
	cr_assert_eq(f->ones, cbf_popcount(f));
	cbf_free(&f);
}

Test(cbf, false_positive_rate_matches_theory, .timeout = 300)
{
	const uint64_t n = 50000;
	unsigned ratios[] = {8, 16, 32}, ks[] = {4, 6};

	for (int r = 0; r < 3; r++) {
		for (int q = 0; q < 2; q++) {
			uint64_t m = n * ratios[r];
			unsigned k = ks[q];
			double theory = pow(1 - exp(-(double)k * n / m), k);
			/* ~1000 expected false positives: 10 % is three sigma */
			uint64_t probes = (uint64_t)(1000 / theory);
			if (probes < 1000000)
				probes = 1000000;
			struct cbf *f = cbf_new(SUM_XXH3, m, k);
			struct sumkey key;
			for (uint64_t i = 0; i < n; i++) {
				test_key(i, &key);
				cbf_add(f, &key);
			}
			uint64_t fp = 0;
			for (uint64_t i = 0; i < probes; i++) {
				uint64_t x = test_rand();
				key.bytes[0] = 0;
				memcpy(key.bytes, &x, 8);
				x = test_rand();
				memcpy(key.bytes + 8, &x, 8);
				fp += cbf_contains(f, &key);
			}
			double measured = (double)fp / (double)probes;
			cr_log_info("m/n %u k %u: fp %.5f%% theory %.5f%% "
			    "(%llu probes)", ratios[r], k, 100 * measured,
			    100 * theory, (unsigned long long)probes);
			cr_expect(fabs(measured - theory) <= 0.1 * theory,
			    "m/n %u k %u: measured %g, theory %g", ratios[r],
			    k, measured, theory);
			cbf_free(&f);
		}
	}
}

Test(cbf, remove_is_the_exact_inverse_of_add)
{
	/* every one of the k counters goes back down, not only the first:
	 * the counters after adding A then adding and removing B are those
	 * after A alone, and removing A as well leaves every counter 0 */
	const uint64_t n = 20000;
	struct cbf *f = cbf_new(SUM_XXH3, cbf_size_for(n, 8), 4);
	struct sumkey k;

	cr_assert_not_null(f);
	size_t bytes = (size_t)(f->m + 1) / 2;
	for (uint64_t i = 0; i < n / 2; i++) {
		test_key(i, &k);
		cbf_add(f, &k);
	}
	uint8_t *after_a = malloc(bytes);
	cr_assert_not_null(after_a);
	memcpy(after_a, f->counters, bytes);
	uint64_t ones_a = f->ones;
	for (uint64_t i = n / 2; i < n; i++) {
		test_key(i, &k);
		cbf_add(f, &k);
	}
	for (uint64_t i = n / 2; i < n; i++) {
		test_key(i, &k);
		cr_assert(cbf_remove(f, &k));
	}
	cr_assert(memcmp(after_a, f->counters, bytes) == 0,
	    "adding and removing B left counters changed");
	cr_assert_eq(f->ones, ones_a);
	for (uint64_t i = 0; i < n / 2; i++) {
		test_key(i, &k);
		cr_assert(cbf_remove(f, &k));
	}
	for (size_t i = 0; i < bytes; i++)
		cr_assert_eq(f->counters[i], 0, "counter byte %zu is %u", i,
		    f->counters[i]);
	cr_assert_eq(f->ones, 0);
	cr_assert_eq(cbf_popcount(f), 0);
	cr_assert_eq(f->entries, 0);
	cr_assert_eq(f->saturations, 0);
	cr_assert_eq(f->bad_removes, 0);
	free(after_a);
	cbf_free(&f);
}

Test(cbf, saturation_never_decrements)
{
	struct cbf *f = cbf_new(SUM_XXH3, 1024, 4);
	struct sumkey k;

	test_key(42, &k);
	for (int i = 0; i < 20; i++)
		cbf_add(f, &k);
	cr_assert_eq(f->saturations, 4 * 5, "5 of 20 increments lost per "
	    "counter");
	for (int i = 0; i < 20; i++)
		cr_assert(cbf_remove(f, &k));
	cr_assert(cbf_contains(f, &k), "a saturated counter stays set");
	cbf_free(&f);
}

Test(cbf, removing_what_cannot_be_there_changes_nothing)
{
	struct cbf *f = cbf_new(SUM_XXH3, 4096, 4);
	struct sumkey a, b;

	test_key(1, &a);
	test_key(2, &b);
	cbf_add(f, &a);
	uint64_t before = cbf_popcount(f);
	cr_assert(!cbf_remove(f, &b));
	cr_assert_eq(f->bad_removes, 1);
	cr_assert_eq(cbf_popcount(f), before);
	cr_assert(cbf_contains(f, &a));
	cr_assert_eq(f->entries, 1);
	cbf_free(&f);
}

Test(cbf, delta_lists_changed_bits_since_publication)
{
	struct cbf *f = cbf_new(SUM_XXH3, 1u << 16, 4);
	struct cbf_delta d;
	struct sumkey k;

	for (int i = 0; i < 100; i++) {
		test_key((uint64_t)i, &k);
		cbf_add(f, &k);
	}
	cr_assert_eq(cbf_delta(f, &d), 0);
	cr_assert_eq(d.nset, cbf_popcount(f));
	cr_assert_eq(d.ncleared, 0);
	for (size_t i = 1; i < d.nset; i++)
		cr_assert_lt(d.set[i - 1], d.set[i], "ascending");
	cbf_delta_clear(&d);
	cbf_mark_published(f);
	cr_assert_eq(f->changes, 0);
	test_key(7, &k);
	cbf_remove(f, &k);
	cbf_add(f, &k); /* back where it was: no bit changed in the end */
	cr_assert_eq(cbf_delta(f, &d), 0);
	cr_assert_eq(d.nset + d.ncleared, 0);
	cr_assert_eq(f->changes, 2, "the threshold still counts both");
	cbf_delta_clear(&d);
	test_key(1000, &k);
	cbf_add(f, &k);
	test_key(3, &k);
	cbf_remove(f, &k);
	cr_assert_eq(cbf_delta(f, &d), 0);
	cr_assert_gt(d.nset + d.ncleared, 0);
	for (size_t i = 0; i < d.ncleared; i++)
		cr_assert(!(f->bits[d.cleared[i] >> 6] >> (d.cleared[i] & 63) & 1));
	cbf_delta_clear(&d);
	cbf_free(&f);
}

Test(cbf, sizing)
{
	unsigned k;

	cr_assert_eq(cbf_size_for(1000, 16), 16000);
	uint64_t m = cbf_size_for_fpr(1000000, 0.01, &k);
	/* 9.585 bits per entry and k = 7 for 1 % */
	cr_assert(m > 9580000 && m < 9590000, "%llu", (unsigned long long)m);
	cr_assert_eq(k, 7);
	cr_assert_null(cbf_new(SUM_SQUID_MD5, 4096, 6), "squid needs k=4");
	cr_assert_null(cbf_new(SUM_XXH3, 10, 4));
}

Test(cbf, grown_filter_holds_the_same_keys_sparser)
{
	struct cbf *old = cbf_new(SUM_XXH3, 1024, 4);
	struct sumkey k;

	for (int i = 0; i < 200; i++) {
		test_key((uint64_t)i, &k);
		cbf_add(old, &k);
	}
	/* grown: the same keys re-added to a larger filter */
	struct cbf *grown = cbf_new(SUM_XXH3, 8192, 4);
	for (int i = 0; i < 200; i++) {
		test_key((uint64_t)i, &k);
		cbf_add(grown, &k);
	}
	for (int i = 0; i < 200; i++) {
		test_key((uint64_t)i, &k);
		cr_assert(cbf_contains(grown, &k));
	}
	cr_assert_lt((double)cbf_popcount(grown) / 8192,
	    (double)cbf_popcount(old) / 1024, "sparser after growing");
	cbf_free(&old);
	cbf_free(&grown);
}
