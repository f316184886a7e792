/*
 * Timed summaries (issue 35): cells that carry their keys' deadline, so a
 * claim lapses at the peers with no message. The cell lists' codec and
 * its strictness, the rounding that never lengthens a claim, and the
 * publisher's timed policy seen from a receiver: claimed before the
 * deadline and not after with nothing sent between, a lapse that is no
 * change to publish, a revalidation that is one, and a new base.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "psum.h"
#include "publisher.h"
#include "sumtest.h"
#include "timed.h"

/* ---- the codec ---- */

Test(timed, cell_lists_round_trip_with_clears)
{
	for (int round = 0; round < 200; round++) {
		uint64_t m = 64 + test_rand() % 50000;
		size_t n = (size_t)(test_rand() % 300);
		uint64_t *pos = malloc((n ? n : 1) * sizeof(*pos));
		uint16_t *until = malloc((n ? n : 1) * sizeof(*until));
		size_t k = 0;
		/* ascending, distinct; deadlines from a few values, 0 too */
		for (uint64_t p = test_rand() % 7; k < n && p < m;
		    p += 1 + test_rand() % (m / (n + 1) + 1)) {
			pos[k] = p;
			until[k++] = (uint16_t)(test_rand() % 5 == 0 ? 0 :
			    test_rand() % (round % 2 ? 4 : 65536));
		}
		struct sum_buf b = {0};
		cr_assert_eq(timed_encode(&b, pos, until, k), 0);
		struct timed_cells c;
		cr_assert_eq(timed_decode(b.p, b.len, m, true, &c), 0);
		cr_assert_eq(c.n, k);
		/* the same cells, whatever the order */
		uint16_t *seen = calloc((size_t)m, sizeof(*seen));
		uint8_t *got = calloc((size_t)m, 1);
		for (size_t i = 0; i < c.n; i++) {
			cr_assert_lt(c.pos[i], m);
			cr_assert_eq(got[c.pos[i]], 0, "a cell twice");
			got[c.pos[i]] = 1;
			seen[c.pos[i]] = c.until[i];
		}
		for (size_t i = 0; i < k; i++)
			cr_assert(got[pos[i]] && seen[pos[i]] == until[i]);
		timed_cells_clear(&c);
		free(seen);
		free(got);
		free(b.p);
		free(pos);
		free(until);
	}
}

Test(timed, decoder_refuses_what_it_cannot_trust)
{
	uint64_t pos[] = {3, 10, 11, 40};
	uint16_t until[] = {0, 7, 7, 9};
	struct sum_buf b = {0};
	struct timed_cells c;

	cr_assert_eq(timed_encode(&b, pos, until, 4), 0);
	/* a clear is for deltas only */
	cr_assert_eq(timed_decode(b.p, b.len, 64, false, &c),
	    SUM_ERR_MALFORMED);
	/* every cut, and a byte more */
	for (size_t len = 0; len < b.len; len++)
		cr_assert_lt(timed_decode(b.p, len, 64, true, &c), 0,
		    "cut at %zu", len);
	uint8_t more[64];
	memcpy(more, b.p, b.len);
	more[b.len] = 0;
	cr_assert_lt(timed_decode(more, b.len + 1, 64, true, &c), 0);
	/* a position past m */
	cr_assert_lt(timed_decode(b.p, b.len, 40, true, &c), 0);
	free(b.p);

	/* a position in two groups (hand-made: groups 5 and 6, both {2}) */
	struct sum_buf d = {0};
	uint64_t two[] = {2};
	sum_buf_varint(&d, 2);
	sum_buf_varint(&d, 5);
	rice_encode(&d, two, 1);
	sum_buf_varint(&d, 1);
	rice_encode(&d, two, 1);
	cr_assert_eq(timed_decode(d.p, d.len, 64, true, &c),
	    SUM_ERR_MALFORMED);
	/* the same groups' deadlines not rising (a gap of 0 after the
	 * first) */
	d.len = 0;
	uint64_t one[] = {1};
	sum_buf_varint(&d, 2);
	sum_buf_varint(&d, 5);
	rice_encode(&d, two, 1);
	sum_buf_varint(&d, 0);
	rice_encode(&d, one, 1);
	cr_assert_eq(timed_decode(d.p, d.len, 64, true, &c),
	    SUM_ERR_MALFORMED);
	/* past the 16 bits a deadline has */
	d.len = 0;
	sum_buf_varint(&d, 1);
	sum_buf_varint(&d, 65536);
	rice_encode(&d, two, 1);
	cr_assert_eq(timed_decode(d.p, d.len, 64, true, &c),
	    SUM_ERR_MALFORMED);
	free(d.p);
}

/* ---- rounding ---- */

Test(timed, a_deadline_is_rounded_down_never_up)
{
	for (int round = 0; round < 20000; round++) {
		uint64_t base = test_rand() % 4000000000ull;
		struct cbf f = {.base_ms = base};
		uint64_t until = base + test_rand() % 80000000ull;
		uint16_t u = cbf_cell_until(&f, until);
		cr_assert_leq((uint64_t)u * 1000 + base, until,
		    "claimed past its deadline");
		if (until - base < (uint64_t)CBF_UNTIL_MAX * 1000)
			cr_assert_gt((uint64_t)u * 1000 + base + 1000, until,
			    "more than a second lost");
	}
	struct cbf f = {.base_ms = 5000};
	cr_assert_eq(cbf_cell_until(&f, 4000), 0, "before the base");
	cr_assert_eq(cbf_cell_until(&f, 5999), 0, "under a second");
	cr_assert_eq(cbf_cell_until(&f, UINT64_MAX), CBF_UNTIL_MAX);
}

/* ---- the publisher's timed policy, seen from a receiver ---- */

#define T0 1000000ull     /* the publisher's clock at the start, ms */
#define L0 5000ull        /* the receiver's clock, ms */

static struct publisher *
timed_pub(void)
{
	struct pub_conf c = {
		.claims = PUB_CLAIMS_TIMED,
		.scheme = SUM_XXH3,
		.bits_per_entry = 16,
		.k = 4,
		.threshold = 0.01,
		.max_interval_ms = 60000,
		.expected_objects = 1000,
	};
	struct publisher *p = pub_new(&c, 1, T0);

	cr_assert_not_null(p);
	return p;
}

/* Publishes at now and hands it to *view at local: the delta's or full
 * message's size. */
static size_t
send(struct publisher *p, uint64_t now, struct psum **view, uint64_t local)
{
	struct publication pub = {0};

	cr_assert_eq(pub_publish(p, now, &pub), 0);
	cr_assert(pub.timed);
	struct sum_msg msg = pub_msg(&pub);
	cr_assert_eq(psum_take(view, &msg, local), 0);
	size_t len = pub.payload.len;
	sum_buf_free(&pub.payload);
	return len;
}

static struct psum *
first_view(struct publisher *p)
{
	struct publication pub = {0};
	struct psum *view = NULL;

	cr_assert_eq(pub_last_full(p, T0, &pub), 0);
	struct sum_msg msg = pub_msg(&pub);
	cr_assert_eq(psum_take(&view, &msg, L0), 0);
	sum_buf_free(&pub.payload);
	cr_assert_not_null(view->until, "a timed view");
	return view;
}

Test(timed, a_claim_ends_at_its_deadline_with_no_message)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	struct sumkey k, other;

	test_key(1, &k);
	test_key(2, &other);
	/* fresh for 10 s: claimed until 10 s less the slack, 9 s */
	cr_assert(pub_added(p, &k, T0 + 10000, T0));
	send(p, T0, &view, L0);
	cr_assert(psum_contains(view, &k, L0));
	cr_assert(psum_contains(view, &k, L0 + 8999));
	cr_assert(!psum_contains(view, &k, L0 + 9000), "past its deadline");
	cr_assert(!psum_contains(view, &other, L0));
	/* the owner lets it go too: not a change, nothing to publish */
	cr_assert_eq(pub_expire(p, T0 + 9000), 1);
	cr_assert_eq(pub_filter(p)->changes, 0);
	cr_assert(!pub_threshold_reached(p, 1, 0));
	cr_assert(!pub_interval_due(p, T0 + 120000));
	/* and a later message does not bring it back */
	cr_assert(pub_added(p, &other, T0 + 100000, T0 + 9500));
	send(p, T0 + 9500, &view, L0 + 9600);
	cr_assert(!psum_contains(view, &k, L0 + 9600));
	cr_assert(psum_contains(view, &other, L0 + 9600));
	psum_free(&view);
	pub_free(&p);
}

/* A 304 moves a claimed key's deadline later: its cells carry the new
 * one in the next delta, a change of k cells at most; after a lapse, the
 * same 304 claims the key again. */
Test(timed, a_revalidation_extends_the_claim)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	struct sumkey k, j;

	test_key(3, &k);
	test_key(4, &j);
	cr_assert(pub_added(p, &k, T0 + 10000, T0));
	cr_assert(pub_added(p, &j, T0 + 10000, T0));
	send(p, T0, &view, L0);
	/* revalidated before its claim ends: the same object stored again
	 * as the store does, the old copy out and the new one in */
	cr_assert(pub_removed(p, &k));
	cr_assert(pub_added(p, &k, T0 + 300000, T0 + 5000));
	cr_assert_gt(pub_filter(p)->changes, 0);
	size_t len = send(p, T0 + 5000, &view, L0 + 5000);
	cr_assert_lt(len, 32, "a few cells, not a full summary: %zu", len);
	cr_assert(psum_contains(view, &k, L0 + 200000));
	cr_assert(!psum_contains(view, &j, L0 + 9000));
	/* j lapses, then its 304 comes */
	cr_assert_eq(pub_expire(p, T0 + 9000), 1);
	cr_assert(pub_added(p, &j, T0 + 60000, T0 + 20000));
	send(p, T0 + 20000, &view, L0 + 20000);
	cr_assert(psum_contains(view, &j, L0 + 58999));
	cr_assert(!psum_contains(view, &j, L0 + 59000));
	/* a later variant (2: the deadline moved) raises the cells too */
	cr_assert(pub_added(p, &j, T0 + 90000, T0 + 21000));
	send(p, T0 + 21000, &view, L0 + 21000);
	cr_assert(psum_contains(view, &j, L0 + 88999));
	psum_free(&view);
	pub_free(&p);
}

/* A corrupted delta is refused and changes nothing held. */
Test(timed, a_corrupted_delta_is_refused)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	struct sumkey k;
	struct publication pub = {0};

	test_key(5, &k);
	cr_assert(pub_added(p, &k, T0 + 100000, T0));
	cr_assert_eq(pub_publish(p, T0, &pub), 0);
	uint64_t held = view->checksum;
	struct sum_msg msg = pub_msg(&pub);
	/* the deadline's byte (after the group count) off by one */
	pub.payload.p[1] ^= 1;
	int rc = psum_take(&view, &msg, L0);
	cr_assert(rc == SUM_ERR_CHECKSUM || rc == SUM_ERR_MALFORMED, "%d", rc);
	cr_assert_eq(view->checksum, held);
	cr_assert(!psum_contains(view, &k, L0));
	/* the message as sent applies */
	pub.payload.p[1] ^= 1;
	cr_assert_eq(psum_take(&view, &msg, L0), 0);
	cr_assert(psum_contains(view, &k, L0));
	/* a plain delta for a timed view is a gap: pull the full one */
	msg.timed = false;
	msg.full = false;
	cr_assert_eq(psum_take(&view, &msg, L0), SUM_ERR_GAP);
	sum_buf_free(&pub.payload);
	psum_free(&view);
	pub_free(&p);
}

/* Every PUB_REBASE_MS the filter is rebuilt on a new base, in a new
 * epoch: what was claimed stays claimed to its own deadline, and a
 * deadline the old base could not count gets its time. */
Test(timed, a_new_base_keeps_every_claim)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	struct sumkey near, far;
	uint64_t t = T0 + PUB_REBASE_MS;

	test_key(6, &near);
	test_key(7, &far);
	cr_assert(pub_added(p, &near, t + 30000, t - 1000));
	/* 30 h away: beyond the 18.2 h the first base counts */
	cr_assert(pub_added(p, &far, t + 30ull * 3600 * 1000, t - 1000));
	send(p, t - 1000, &view, L0);
	uint64_t old_epoch = view->epoch;
	cr_assert(!pub_wants_rebuild(p, t - 1));
	cr_assert(pub_wants_rebuild(p, t));
	struct publication pub = {0};
	pub_rebuild_begin(p, 2, t);
	while (!pub_rebuild_step(p, 1))
		;
	cr_assert_eq(pub_rebuild_end(p, t, &pub), 1);
	cr_assert(pub.full && pub.timed);
	cr_assert_gt(pub.epoch, old_epoch);
	struct sum_msg msg = pub_msg(&pub);
	uint64_t l = L0 + 1000;
	cr_assert_eq(psum_take(&view, &msg, l), 0);
	sum_buf_free(&pub.payload);
	cr_assert(psum_contains(view, &near, l + 28999));
	cr_assert(!psum_contains(view, &near, l + 29000));
	cr_assert(psum_contains(view, &far, l + 18ull * 3600 * 1000),
	    "the new base counts 18 h from now");
	cr_assert_eq(pub_filter(p)->m, 16000, "a rebase keeps the size");
	psum_free(&view);
	pub_free(&p);
}

/* A message that waited (a queue to a slow peer) says an earlier time
 * than the sender's clock read when it came: the receiver keeps the
 * later reading, so a claim is not believed longer for the wait. */
Test(timed, a_message_that_waited_does_not_lengthen_claims)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	struct sumkey k, j;

	test_key(8, &k);
	test_key(9, &j);
	/* claimed until 6 s after T0 */
	cr_assert(pub_added(p, &k, T0 + 7000, T0 + 1000));
	send(p, T0 + 1000, &view, L0 + 1000);
	cr_assert(pub_added(p, &j, T0 + 60000, T0 + 2000));
	/* sent at T0 + 2 s, taken 3 s late */
	send(p, T0 + 2000, &view, L0 + 5000);
	cr_assert(psum_contains(view, &k, L0 + 5999));
	cr_assert(!psum_contains(view, &k, L0 + 6000),
	    "believed past its deadline by the message's wait");
	psum_free(&view);
	pub_free(&p);
}

/* A peer's header names m: a timed summary of more cells than a peer
 * takes (two bytes each) is refused before anything is allocated, what
 * is held stays, and our own publisher never makes one. */
Test(timed, a_summary_too_large_to_hold_is_refused)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	uint64_t held = view->checksum, m = view->m;
	uint8_t empty[1] = {0};
	struct sum_msg msg = {
		.timed = true, .full = true, .scheme = SUM_XXH3,
		.m = SUM_MAX_TIMED_CELLS + 1, .k = 4, .epoch = 9, .seq = 1,
		.payload = empty, .len = 1,
	};

	cr_assert_eq(psum_take(&view, &msg, L0), SUM_ERR_PARAMS);
	cr_assert_eq(view->m, m);
	cr_assert_eq(view->checksum, held);
	struct psum *none = NULL;
	cr_assert_eq(psum_take(&none, &msg, L0), SUM_ERR_PARAMS);
	cr_assert_null(none);
	msg.m = SUM_MAX_TIMED_CELLS;   /* the largest is taken */
	cr_assert_eq(psum_take(&none, &msg, L0), 0);
	psum_free(&none);
	psum_free(&view);
	pub_free(&p);

	struct pub_conf c = {
		.claims = PUB_CLAIMS_TIMED, .scheme = SUM_XXH3,
		.bits_per_entry = 16, .k = 4, .threshold = 0.01,
		.expected_objects = 8u << 20, .max_bits = 1ull << 29,
	};
	p = pub_new(&c, 1, T0);
	cr_assert_not_null(p);
	cr_assert_eq(pub_filter(p)->m, SUM_MAX_TIMED_CELLS);
	pub_free(&p);
}
