/*
 * Summary messages: Rice lists, full and delta summaries, publishing, and
 * the decoders' strictness under truncation and corruption.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psum.h"
#include "sumtest.h"

/* n distinct sorted positions below m */
static uint64_t *
random_positions(uint64_t m, size_t n)
{
	uint8_t *seen = calloc((size_t)m, 1);
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v));
	size_t k = 0;

	while (k < n) {
		uint64_t p = test_rand() % m;
		if (!seen[p]) {
			seen[p] = 1;
			k++;
		}
	}
	k = 0;
	for (uint64_t p = 0; p < m; p++)
		if (seen[p])
			v[k++] = p;
	free(seen);
	return v;
}

Test(rice, round_trips_over_random_lists)
{
	for (int round = 0; round < 300; round++) {
		uint64_t m = 64 + test_rand() % 100000;
		size_t n = (size_t)(test_rand() % (round % 3 == 0 ? m : m / 50 + 1));
		uint64_t *pos = random_positions(m, n), *got;
		struct sum_buf b = {0};
		size_t gn;

		cr_assert_eq(rice_encode(&b, pos, n), 0);
		long used = rice_decode(b.p, b.len, m, &got, &gn);
		cr_assert_eq(used, (long)b.len, "round %d", round);
		cr_assert_eq(gn, n);
		cr_assert(n == 0 || memcmp(got, pos, n * sizeof(*pos)) == 0);
		cr_assert_eq(b.len, rice_size(pos, n, rice_best_param(pos, n)));
		/* a position at or past m is refused */
		if (n > 0)
			cr_assert_lt(rice_decode(b.p, b.len, pos[n - 1], &got,
			    &gn), 0);
		free(pos);
		free(b.p);
	}
}

/* A filter, its publisher, and a receiver kept in step. */
struct pair {
	struct cbf *f;
	struct psum *p;
	uint64_t seq;
};

/* The epoch the pair's filter publishes under. */
#define EPOCH 3

static int
publish(struct pair *x, uint8_t **msg, size_t *len, bool *full,
    uint64_t *sum)
{
	struct sum_buf b = {0};

	cr_assert_eq(sum_publish(x->f, &b, full, sum), 0);
	*msg = b.p;
	*len = b.len;
	x->seq++;
	return *full ? psum_load_full(x->p, x->f->scheme, x->f->m, x->f->k,
	    EPOCH, x->seq, b.p, b.len, *sum) :
	    psum_apply_delta(x->p, EPOCH, x->seq, b.p, b.len, *sum);
}

static void assert_same(const struct pair *x);

/* A filter of m bits with keys 0..n-1, published in full to a receiver. */
static void
pair_start(struct pair *x, uint64_t m, uint64_t n)
{
	struct sumkey k;
	uint8_t *msg;
	size_t len;
	bool full;
	uint64_t sum;

	*x = (struct pair){cbf_new(SUM_XXH3, m, 4), psum_new(SUM_XXH3, 64,
	    4), 0};
	for (uint64_t i = 0; i < n; i++) {
		test_key(i, &k);
		cbf_add(x->f, &k);
	}
	cr_assert_eq(publish(x, &msg, &len, &full, &sum), 0);
	cr_assert(full, "the first publication is a full summary");
	free(msg);
	assert_same(x);
}

static void
assert_same(const struct pair *x)
{
	cr_assert_eq(x->p->m, x->f->m);
	cr_assert(memcmp(x->p->bits, x->f->bits, (x->f->m + 7) / 8) == 0,
	    "receiver differs from sender");
	cr_assert_eq(x->p->ones, cbf_popcount(x->f));
	cr_assert_eq(x->f->ones, cbf_popcount(x->f), "kept count drifted");
}

Test(psum, publish_then_deltas_keep_receiver_identical)
{
	struct pair x;
	struct sumkey k;
	uint8_t *msg;
	size_t len;
	bool full;
	uint64_t sum;

	pair_start(&x, 160000, 10000);
	uint64_t next = 10000, oldest = 0;
	for (int round = 0; round < 20; round++) {
		/* 1 % churn: 100 in, 100 out */
		for (int i = 0; i < 100; i++) {
			test_key(next++, &k);
			cbf_add(x.f, &k);
			test_key(oldest++, &k);
			cr_assert(cbf_remove(x.f, &k));
		}
		cr_assert_eq(publish(&x, &msg, &len, &full, &sum), 0);
		cr_assert(!full, "a 1 %% change goes as a delta");
		assert_same(&x);
		/* the same delta again is a sequence gap: nothing changes */
		cr_assert_eq(psum_apply_delta(x.p, EPOCH, x.seq, msg, len,
		    sum), SUM_ERR_GAP);
		assert_same(&x);
		free(msg);
	}
	test_key(5000, &k);
	cr_assert(psum_contains(x.p, &k, 0));
	psum_free(&x.p);
	cbf_free(&x.f);
}

Test(psum, full_is_raw_when_dense_and_rice_when_sparse)
{
	uint64_t m = 8192;
	uint64_t *bits = calloc(m / 64, 8);
	struct sum_buf b = {0};

	bits[3] = 1;
	cr_assert_eq(sum_encode_full(bits, m, &b), 0);
	cr_assert_eq(b.p[0], SUM_FULL_RICE);
	cr_assert_lt(b.len, 16);
	struct psum *p = psum_new(SUM_XXH3, 64, 4);
	cr_assert_eq(psum_load_full(p, SUM_XXH3, m, 4, 1, 1, b.p, b.len,
	    sum_checksum(bits, m)), 0);
	cr_assert_eq(p->ones, 1);
	memset(bits, 0x55, m / 8);
	b.len = 0;
	cr_assert_eq(sum_encode_full(bits, m, &b), 0);
	cr_assert_eq(b.p[0], SUM_FULL_RAW);
	cr_assert_eq(b.len, 1 + m / 8);
	cr_assert_eq(psum_load_full(p, SUM_XXH3, m, 4, 1, 2, b.p, b.len,
	    sum_checksum(bits, m)), 0);
	cr_assert_eq(p->ones, m / 2);
	/* the wrong checksum leaves the summary as it was */
	bits[0] = 0;
	b.len = 0;
	sum_encode_full(bits, m, &b);
	cr_assert_eq(psum_load_full(p, SUM_XXH3, m, 4, 1, 3, b.p, b.len, 42),
	    SUM_ERR_CHECKSUM);
	cr_assert_eq(p->ones, m / 2);
	cr_assert_eq(p->seq, 2);
	free(b.p);
	free(bits);
	psum_free(&p);
}

/* Every truncation and every single-byte change of msg: refused with the
 * receiver untouched, or (when the change is harmless) the sender's array. */
static void
torture(struct psum *p, bool full, const uint8_t *msg, size_t len,
    uint32_t epoch, uint64_t seq, uint64_t sum, const uint64_t *want)
{
	size_t bytes = (p->m + 7) / 8;
	uint64_t *before = malloc(bytes + 8);
	uint8_t *copy = malloc(len);
	memcpy(before, p->bits, bytes);
	uint64_t seq0 = p->seq, m = p->m;

	for (size_t cut = 0; cut <= len; cut++) {
		for (int flip = -1; flip < (cut == len ? (int)len : 0); flip++) {
			memcpy(copy, msg, len);
			if (flip >= 0)
				copy[flip] ^= (uint8_t)(1 + test_rand() % 255);
			int rc = full ? psum_load_full(p, SUM_XXH3, m, p->k,
			    epoch, seq, copy, cut, sum) :
			    psum_apply_delta(p, epoch, seq, copy, cut, sum);
			if (rc == 0) {
				cr_assert(memcmp(p->bits, want, bytes) == 0,
				    "accepted a wrong summary (cut %zu, flip "
				    "%d)", cut, flip);
				/* undo for the next try */
				memcpy(p->bits, before, bytes);
				p->seq = seq0;
				continue;
			}
			cr_assert(memcmp(p->bits, before, bytes) == 0,
			    "refused message changed the summary (cut %zu, "
			    "flip %d, rc %d)", cut, flip, rc);
			cr_assert_eq(p->seq, seq0);
		}
	}
	free(before);
	free(copy);
}

Test(psum, truncation_and_corruption_never_corrupt_the_summary,
    .timeout = 120)
{
	struct pair x;
	struct sumkey k;
	bool full;
	uint64_t sum;

	pair_start(&x, 20000, 300);
	for (uint64_t i = 300; i < 310; i++) {
		test_key(i, &k);
		cbf_add(x.f, &k);
		test_key(i - 300, &k);
		cbf_remove(x.f, &k);
	}
	/* a delta the receiver has not applied yet */
	struct sum_buf b = {0};
	cr_assert_eq(sum_publish(x.f, &b, &full, &sum), 0);
	cr_assert(!full);
	torture(x.p, false, b.p, b.len, EPOCH, x.seq + 1, sum,
	    x.f->bits);
	/* and a full summary of the same state, both encodings */
	struct sum_buf fb = {0};
	cr_assert_eq(sum_encode_full(x.f->bits, x.f->m, &fb), 0);
	torture(x.p, true, fb.p, fb.len, EPOCH, x.seq + 1, sum,
	    x.f->bits);
	free(b.p);
	free(fb.p);
	psum_free(&x.p);
	cbf_free(&x.f);
}

Test(psum, deltas_need_the_next_sequence_and_epoch)
{
	struct psum *p = psum_new(SUM_XXH3, 1024, 4);
	struct sum_buf b = {0};
	struct cbf_delta d = {0};

	cr_assert_eq(psum_apply_delta(p, 0, 1, NULL, 0, 0), SUM_ERR_GAP,
	    "no delta before a full summary");
	sum_encode_full(p->bits, 1024, &b);
	cr_assert_eq(psum_load_full(p, SUM_XXH3, 1024, 4, 5, 10, b.p, b.len,
	    p->checksum), 0);
	b.len = 0;
	sum_encode_delta(&d, &b);
	cr_assert_eq(psum_apply_delta(p, 5, 12, b.p, b.len, p->checksum),
	    SUM_ERR_GAP);
	cr_assert_eq(psum_apply_delta(p, 6, 11, b.p, b.len, p->checksum),
	    SUM_ERR_GAP);
	cr_assert_eq(psum_apply_delta(p, 5, 11, b.p, b.len, p->checksum), 0);
	cr_assert_eq(p->seq, 11);
	cr_assert_eq(psum_load_full(p, SUM_SQUID_MD5, 1024, 6, 5, 12, b.p,
	    b.len, 0), SUM_ERR_PARAMS);
	free(b.p);
	psum_free(&p);
}
