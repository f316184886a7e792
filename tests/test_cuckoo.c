/*
 * The compact timed summary (summary/cuckoo.h): a node's table and a
 * peer's copy agree through full and delta messages and the base's
 * shifts; claims end at their deadlines with no message; false positives
 * and bytes a key as the design says; every malformed message refused
 * with the copy untouched.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cuckoo.h"
#include "rice.h"
#include "sumtest.h"

#define SEC 1000ull
#define HOUR (3600 * SEC)

/* Publishes t at now and takes the message into c; the result of the
 * copy's call. */
static int
send(struct ck_table *t, struct ck_copy *c, uint64_t now, bool *full)
{
	struct sum_buf out = {0};
	uint64_t sent, sum;
	bool whole;

	cr_assert_eq(ck_publish(t, now, &out, &whole, &sent, &sum), 0);
	cr_assert_eq(sent, now - t->origin_ms);
	int rc = whole ? ck_copy_load(c, sent, out.p, out.len, sum) :
	    ck_copy_apply(c, sent, out.p, out.len, sum);
	if (full != NULL)
		*full = whole;
	sum_buf_free(&out);
	return rc;
}

/* The copy believes exactly what the table does, for keys 0 .. n - 1
 * and as many never added, at now. */
static void
agree(const struct ck_table *t, const struct ck_copy *c, uint64_t n,
    uint64_t now)
{
	struct sumkey k;

	for (uint64_t i = 0; i < 2 * n; i++) {
		test_key(i < n ? i : 1000000000 + i, &k);
		cr_assert_eq(ck_copy_contains(c, &k, now - t->origin_ms),
		    ck_contains(t, &k, now), "key %llu at %llu",
		    (unsigned long long)i, (unsigned long long)now);
	}
}

Test(cuckoo, a_copy_believes_what_the_table_holds_through_fulls_and_deltas)
{
	uint64_t n = 20000, t0 = 5 * HOUR, *until = calloc(n, sizeof(*until));
	struct ck_table *t = ck_new(ck_buckets_for(n), t0);
	struct ck_copy *c = ck_copy_new(t->nb);
	struct sumkey k;
	bool full;

	for (uint64_t i = 0; i < n / 2; i++) {
		test_key(i, &k);
		until[i] = t0 + 1 + test_rand() % (2 * HOUR);
		cr_assert_eq(ck_add(t, &k, until[i]), 0);
	}
	cr_assert_eq(send(t, c, t0, &full), 0);
	cr_assert(full);
	cr_assert_eq(c->keys, n / 2);
	agree(t, c, n, t0);
	/* rounds of adds, removals and revalidations, each a delta */
	uint64_t now = t0;
	for (int round = 0; round < 20; round++) {
		now += 7 * SEC;
		for (uint64_t j = 0; j < 300; j++) {
			uint64_t i = test_rand() % n;
			test_key(i, &k);
			if (until[i] == 0) {
				until[i] = now + 1 + test_rand() % (3 * HOUR);
				cr_assert_eq(ck_add(t, &k, until[i]), 0);
			} else if (test_rand() % 2) {
				cr_assert(ck_remove(t, &k, until[i]));
				until[i] = 0;
			} else {
				uint64_t later = until[i] + HOUR;
				cr_assert(ck_retime(t, &k, until[i], later));
				until[i] = later;
			}
		}
		cr_assert_eq(send(t, c, now, &full), 0, "round %d", round);
		cr_assert_not(full, "round %d: a delta is smaller", round);
		agree(t, c, n, now);
		cr_assert_eq(c->sum, t->pub_sum);
	}
	ck_free(&t);
	ck_copy_free(&c);
	free(until);
}

Test(cuckoo, a_claim_ends_at_its_deadline_with_no_message)
{
	uint64_t t0 = 1000;
	struct ck_table *t = ck_new(16, t0);
	struct ck_copy *c = ck_copy_new(16);
	struct sumkey k;

	test_key(7, &k);
	/* 10.3 s ahead: rounded down to the half second, 10 s */
	cr_assert_eq(ck_add(t, &k, t0 + 10300), 0);
	cr_assert_eq(send(t, c, t0, NULL), 0);
	cr_assert(ck_copy_contains(c, &k, 9999));
	cr_assert_not(ck_copy_contains(c, &k, 10000));
	cr_assert_not(ck_contains(t, &k, t0 + 10000));
	/* the removal of a passed claim is nothing to tell: a message of
	 * two empty lists, or an empty full one (smaller) */
	cr_assert(ck_remove(t, &k, t0 + 10300));
	struct sum_buf out = {0};
	uint64_t sent, sum;
	bool full;
	cr_assert_eq(ck_publish(t, t0 + 11000, &out, &full, &sent, &sum), 0);
	cr_assert_leq(out.len, 2);
	cr_assert_eq(full ? ck_copy_load(c, sent, out.p, out.len, sum) :
	    ck_copy_apply(c, sent, out.p, out.len, sum), 0);
	cr_assert_not(ck_copy_contains(c, &k, 11000));
	sum_buf_free(&out);
	ck_free(&t);
	ck_copy_free(&c);
}

/* A code that a shift takes to 0 empties its slot at the node and at the
 * peer alike, with no message: no message may carry a slot with no
 * deadline (a copy refuses one), and the sums still agree. The key is
 * then neither found nor claimed; a twin is not taken for it. */
Test(cuckoo, a_code_a_shift_takes_to_0_empties_its_slot_on_both_sides)
{
	uint64_t t0 = 1000;
	struct ck_table *t = ck_new(16, t0);
	struct ck_copy *c = ck_copy_new(16);
	struct sumkey k, other;

	test_key(11, &k);
	test_key(12, &other);
	/* 1,024.3 s ahead: a code of exactly one shift's units */
	cr_assert_eq(ck_add(t, &k, t0 + CK_SHIFT_MS + 300), 0);
	cr_assert_eq(ck_add(t, &other, t0 + 2 * CK_SHIFT_MS + 300), 0);
	cr_assert_eq(send(t, c, t0, NULL), 0);
	cr_assert_eq(c->keys, 2);
	cr_assert(ck_copy_contains(c, &k, CK_SHIFT_MS - 1));
	/* the base moves on: k's code comes to 0 */
	cr_assert_eq(ck_shift(t, t0 + CK_SHIFT_MS + 100), 1);
	cr_assert_eq(t->keys, 1, "its slot emptied at the node");
	cr_assert_not(ck_contains(t, &k, t0 + CK_SHIFT_MS + 100));
	cr_assert_not(ck_remove(t, &k, t0 + CK_SHIFT_MS + 300),
	    "nothing left to remove, and no other slot taken for it");
	cr_assert_eq(t->keys, 1);
	bool full;
	cr_assert_eq(send(t, c, t0 + CK_SHIFT_MS + 100, &full), 0);
	cr_assert_not(full);
	cr_assert_eq(c->keys, 1, "and at the peer, by the shift alone");
	cr_assert_eq(c->sum, t->pub_sum);
	cr_assert_not(ck_copy_contains(c, &k, CK_SHIFT_MS + 100));
	cr_assert(ck_copy_contains(c, &other, CK_SHIFT_MS + 100));
	ck_free(&t);
	ck_copy_free(&c);
}

Test(cuckoo, the_base_shifts_on_both_sides_and_far_deadlines_come_in_range)
{
	uint64_t n = 5000, t0 = 0, *until = calloc(n, sizeof(*until));
	struct ck_table *t = ck_new(ck_buckets_for(n), t0);
	struct ck_copy *c = ck_copy_new(t->nb);
	struct sumkey k;

	for (uint64_t i = 0; i < n; i++) {
		test_key(i, &k);
		/* a quarter beyond the 9.1 h range; one in 50 never ends */
		until[i] = i % 50 == 0 ? UINT64_MAX :
		    t0 + 1 + test_rand() % (12 * HOUR);
		cr_assert_eq(ck_add(t, &k, until[i]), 0);
	}
	cr_assert_eq(send(t, c, t0, NULL), 0);
	uint64_t now;
	for (now = t0; now < t0 + 13 * HOUR; now += 997 * SEC) {
		if (ck_shift(t, now) > 0)
			for (uint64_t i = 0; i < n; i++) {
				if (until[i] == UINT64_MAX || until[i] <= now)
					continue;
				test_key(i, &k);
				/* the node's claims table tells which */
				cr_assert(ck_retime(t, &k, until[i], until[i]));
			}
		cr_assert_eq(send(t, c, now, NULL), 0, "at %llu",
		    (unsigned long long)now);
		agree(t, c, n, now);
		/* every claim ends by its deadline; one never ending holds */
		for (uint64_t i = 0; i < n; i += 7) {
			test_key(i, &k);
			bool held = ck_copy_contains(c, &k, now - t0);
			if (until[i] <= now)
				cr_assert_not(held, "key %llu, past",
				    (unsigned long long)i);
			else if (until[i] == UINT64_MAX)
				cr_assert(held);
			else if (until[i] > now + 600 * SEC &&
			    !ck_beyond(t, until[i]))
				/* within range: at most 1/512 early */
				cr_assert(held || until[i] - now <
				    (until[i] - t0) / 512 + SEC);
		}
	}
	cr_assert_eq(t->shifts, (now - 997 * SEC) / CK_SHIFT_MS);
	cr_assert_eq(c->shifts, t->shifts);
	ck_free(&t);
	ck_copy_free(&c);
	free(until);
}

Test(cuckoo, false_positives_and_bytes_a_key_as_designed)
{
	uint64_t n = 200000;
	struct ck_table *t = ck_new(ck_buckets_for(n), 0);
	struct ck_copy *c = ck_copy_new(t->nb);
	struct sumkey k;

	for (uint64_t i = 0; i < n; i++) {
		test_key(i, &k);
		cr_assert_eq(ck_add(t, &k, UINT64_MAX), 0, "key %llu",
		    (unsigned long long)i);
	}
	cr_assert_eq(send(t, c, 0, NULL), 0);
	/* 2 buckets x 4 slots at 95 % load, 18 bits: 2.9e-5 */
	uint64_t fp = 0, probes = 2000000;
	for (uint64_t i = 0; i < probes; i++) {
		test_key(5000000000ull + i, &k);
		fp += ck_copy_contains(c, &k, 0);
	}
	cr_assert_lt((double)fp / (double)probes, 4e-5, "%llu in %llu",
	    (unsigned long long)fp, (unsigned long long)probes);
	cr_assert_gt(fp, 0, "a fingerprint is 18 bits: some must collide");
	cr_assert_leq((double)ck_copy_bytes(c) / (double)n, 4.0);
	ck_free(&t);
	ck_copy_free(&c);
}

Test(cuckoo, a_full_table_refuses_an_add_and_changes_nothing)
{
	struct ck_table *t = ck_new(2, 0);
	struct sumkey k;
	uint64_t id = 0;
	int rc;

	while ((rc = (test_key(id, &k), ck_add(t, &k, 60000))) == 0)
		id++;
	cr_assert_leq(id, 8);
	uint32_t before[8];
	memcpy(before, t->slot, sizeof(before));
	uint64_t keys = t->keys;
	for (int i = 0; i < 50; i++) {
		test_key(100000 + i, &k);
		cr_assert_eq(ck_add(t, &k, 60000), -1);
	}
	cr_assert_eq(memcmp(before, t->slot, sizeof(before)), 0);
	cr_assert_eq(t->keys, keys);
	cr_assert_eq(t->full_adds, 51);
	/* every key added is still there */
	for (uint64_t i = 0; i < id; i++) {
		test_key(i, &k);
		cr_assert(ck_contains(t, &k, 0));
	}
	ck_free(&t);
}

/* ---- refusals ---- */

/* A message of one set slot with the given content, by hand. */
static void
one_slot(struct sum_buf *out, uint64_t slot, uint32_t content, bool delta)
{
	uint8_t v[4] = {(uint8_t)(content >> 22), (uint8_t)(content >> 14),
	    (uint8_t)(content >> 6), (uint8_t)(content << 2)};

	cr_assert_eq(rice_encode(out, &slot, 1), 0);
	cr_assert_eq(sum_buf_put(out, v, 4), 0);
	if (delta)
		cr_assert_eq(rice_encode(out, NULL, 0), 0);
}

/* A copy with something in it, and a delta to it. */
struct fixture {
	struct ck_table *t;
	struct ck_copy *c;
	struct sum_buf delta;
	uint64_t sent, sum;
	uint8_t *held;
};

static void
fixture(struct fixture *f)
{
	struct sumkey k;
	bool full;

	memset(f, 0, sizeof(*f));
	f->t = ck_new(64, 0);
	f->c = ck_copy_new(64);
	for (uint64_t i = 0; i < 100; i++) {
		test_key(i, &k);
		cr_assert_eq(ck_add(f->t, &k, 2 * HOUR), 0);
	}
	cr_assert_eq(send(f->t, f->c, 0, NULL), 0);
	for (uint64_t i = 0; i < 10; i++) {
		test_key(i, &k);
		ck_remove(f->t, &k, 2 * HOUR);
		test_key(500 + i, &k);
		cr_assert_eq(ck_add(f->t, &k, 3 * HOUR), 0);
	}
	cr_assert_eq(ck_publish(f->t, 20 * SEC, &f->delta, &full, &f->sent,
	    &f->sum), 0);
	cr_assert_not(full);
	f->held = malloc(64 * CK_BUCKET_BYTES + 1);
	memcpy(f->held, f->c->bytes, 64 * CK_BUCKET_BYTES + 1);
}

static void
untouched(struct fixture *f)
{
	cr_assert_eq(memcmp(f->held, f->c->bytes, 64 * CK_BUCKET_BYTES + 1),
	    0);
	ck_free(&f->t);
	ck_copy_free(&f->c);
	sum_buf_free(&f->delta);
	free(f->held);
}

Test(cuckoo, every_cut_of_a_delta_or_full_is_refused)
{
	struct fixture f;

	fixture(&f);
	for (size_t len = 0; len < f.delta.len; len++)
		cr_assert_eq(ck_copy_apply(f.c, f.sent, f.delta.p, len, f.sum),
		    SUM_ERR_MALFORMED, "cut at %zu", len);
	struct sum_buf whole = {0};
	uint64_t sent, sum;
	bool full;
	struct ck_table *t = ck_new(64, 0);
	struct sumkey k;
	test_key(1, &k);
	ck_add(t, &k, HOUR);
	test_key(2, &k);
	ck_add(t, &k, HOUR);
	ck_publish(t, 0, &whole, &full, &sent, &sum);
	cr_assert(full);
	for (size_t len = 0; len < whole.len; len++)
		cr_assert_eq(ck_copy_load(f.c, sent, whole.p, len, sum),
		    SUM_ERR_MALFORMED, "cut at %zu", len);
	ck_free(&t);
	sum_buf_free(&whole);
	/* and the whole delta still applies */
	untouched(&f);
}

Test(cuckoo, a_trailing_byte_is_refused)
{
	struct fixture f;
	uint8_t zero = 0;

	fixture(&f);
	sum_buf_put(&f.delta, &zero, 1);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, f.delta.p, f.delta.len,
	    f.sum), SUM_ERR_MALFORMED);
	f.delta.len--;
	untouched(&f);
}

Test(cuckoo, a_slot_past_the_table_is_refused)
{
	struct fixture f;
	struct sum_buf m = {0};

	fixture(&f);
	one_slot(&m, 64 * CK_BUCKET, 5u << DL_BITS | 100, true);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, m.p, m.len, 0),
	    SUM_ERR_MALFORMED);
	sum_buf_free(&m);
	one_slot(&m, 64 * CK_BUCKET - 1, 5u << DL_BITS | 100, true);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, m.p, m.len, 0),
	    SUM_ERR_CHECKSUM, "in range: decoded, then the sum is wrong");
	sum_buf_free(&m);
	untouched(&f);
}

Test(cuckoo, a_zero_fingerprint_or_a_zero_deadline_is_refused)
{
	struct fixture f;
	struct sum_buf m = {0};

	fixture(&f);
	one_slot(&m, 3, 0u << DL_BITS | 100, true);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, m.p, m.len,
	    ck_slot_mix(3, 100)), SUM_ERR_MALFORMED);
	sum_buf_free(&m);
	one_slot(&m, 3, 9u << DL_BITS | 0, false);
	cr_assert_eq(ck_copy_load(f.c, f.sent, m.p, m.len,
	    ck_slot_mix(3, 9u << DL_BITS)), SUM_ERR_MALFORMED);
	sum_buf_free(&m);
	/* the padding after the contents must be zero */
	one_slot(&m, 3, 9u << DL_BITS | 7, false);
	m.p[m.len - 1] |= 1;
	cr_assert_eq(ck_copy_load(f.c, f.sent, m.p, m.len,
	    ck_slot_mix(3, 9u << DL_BITS | 7)), SUM_ERR_MALFORMED);
	sum_buf_free(&m);
	untouched(&f);
}

Test(cuckoo, a_slot_both_set_and_cleared_is_refused)
{
	struct fixture f;
	struct sum_buf m = {0};
	uint64_t slot = 3;

	fixture(&f);
	one_slot(&m, slot, 9u << DL_BITS | 7, false);
	cr_assert_eq(rice_encode(&m, &slot, 1), 0);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, m.p, m.len, 0),
	    SUM_ERR_MALFORMED);
	sum_buf_free(&m);
	untouched(&f);
}

Test(cuckoo, a_wrong_sum_or_a_base_gone_back_changes_nothing)
{
	struct fixture f;

	fixture(&f);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, f.delta.p, f.delta.len,
	    f.sum + 1), SUM_ERR_CHECKSUM);
	/* a delta whose base is a shift later: the copy shifts its codes
	 * to check, so the sender's sum no longer matches */
	cr_assert_eq(ck_copy_apply(f.c, f.sent + CK_SHIFT_MS, f.delta.p,
	    f.delta.len, f.sum), SUM_ERR_CHECKSUM);
	untouched(&f);
	fixture(&f);
	f.c->shifts = 2;
	memcpy(f.held, f.c->bytes, 64 * CK_BUCKET_BYTES + 1);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, f.delta.p, f.delta.len,
	    f.sum), SUM_ERR_MALFORMED);
	untouched(&f);
}

Test(cuckoo, the_fixture_delta_applies)
{
	struct fixture f;

	fixture(&f);
	cr_assert_eq(ck_copy_apply(f.c, f.sent, f.delta.p, f.delta.len,
	    f.sum), 0);
	agree(f.t, f.c, 600, 20 * SEC);
	memcpy(f.held, f.c->bytes, 64 * CK_BUCKET_BYTES + 1);
	untouched(&f);
}

Test(cuckoo, a_table_never_changed_publishes_an_empty_summary)
{
	struct ck_table *t = ck_new(8, 500);
	struct ck_copy *c = ck_copy_new(8);
	struct sumkey k;
	bool full;

	/* nothing ever listed to publish (fuzz-cuckoo's first find: the
	 * list was NULL and sorted all the same) */
	cr_assert_eq(send(t, c, 500 + 3 * CK_SHIFT_MS, &full), 0);
	cr_assert_eq(c->keys, 0);
	cr_assert_eq(c->shifts, 3);
	test_key(1, &k);
	cr_assert_not(ck_copy_contains(c, &k, 3 * CK_SHIFT_MS));
	ck_free(&t);
	ck_copy_free(&c);
}
