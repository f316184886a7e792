/*
 * Timed summaries (issues 35 and 49): each key's own deadline in its
 * slot of a cuckoo table (summary/cuckoo.h), so a claim lapses at the
 * peers with no message. The publisher's timed policy seen from a
 * receiver: claimed before the deadline and not after with nothing sent
 * between, a lapse that is no change to publish, a revalidation that is
 * one, a base that moves on with no message, a size refused. The table's
 * own codec and its refusals are test_cuckoo.c's.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "psum.h"
#include "publisher.h"
#include "sumtest.h"

static uint64_t
pending(const struct publisher *p)
{
	struct pub_stats st;

	pub_stats(p, &st);
	return st.pending;
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
	cr_assert_not_null(view->ck, "a timed view");
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
	cr_assert_eq(pending(p), 0);
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

/* A 304 moves a claimed key's deadline later: its slot carries the new
 * one in the next delta, a change of a slot or two; after a lapse, the
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
	cr_assert_gt(pending(p), 0);
	size_t len = send(p, T0 + 5000, &view, L0 + 5000);
	cr_assert_lt(len, 16, "a slot or two, not a full summary: %zu",
	    len);
	cr_assert(psum_contains(view, &k, L0 + 200000));
	cr_assert(!psum_contains(view, &j, L0 + 9000));
	/* j lapses, then its 304 comes */
	cr_assert_eq(pub_expire(p, T0 + 9000), 1);
	cr_assert(pub_added(p, &j, T0 + 60000, T0 + 20000));
	send(p, T0 + 20000, &view, L0 + 20000);
	cr_assert(psum_contains(view, &j, L0 + 58999));
	cr_assert(!psum_contains(view, &j, L0 + 59000));
	/* a later variant (2: the deadline moved) moves the slot's too */
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

/* The base moves on every CK_SHIFT_MS here and at the peer with no
 * message and no rebuild: a claim keeps its own deadline across the
 * shifts, and one beyond the codes' range (9.1 h) is believed until the
 * shift that brings it within range, when a delta gives it its exact
 * code. */
Test(timed, the_base_moves_on_with_no_message)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	struct sumkey near, far;
	const uint64_t hour = 3600ull * 1000, far_until = T0 + 30 * hour;

	test_key(6, &near);
	test_key(7, &far);
	/* near: claimed until 40 min (a few shifts) from T0 */
	cr_assert(pub_added(p, &near, T0 + 40 * 60000 + 1000, T0));
	/* far: 30 h away, beyond the range */
	cr_assert(pub_added(p, &far, far_until + 1000, T0));
	send(p, T0, &view, L0);
	uint64_t epoch = view->epoch, seq = view->seq;
	/* the owner's clock runs on, pub_expire every second would shift;
	 * a minute at a time is enough here */
	for (uint64_t t = T0; t < T0 + 40 * 60000; t += 60000) {
		pub_expire(p, t);
		cr_assert(!pub_wants_rebuild(p));
		cr_assert(psum_contains(view, &near, L0 + (t - T0)));
	}
	cr_assert(!psum_contains(view, &near, L0 + 40 * 60000),
	    "past its own deadline, with no message");
	cr_assert_eq(pub_expire(p, T0 + 40 * 60000), 1);
	cr_assert_eq(pending(p), 0, "a lapse is no change");
	/* far is believed while its code is the top: long past 9.1 h */
	for (uint64_t t = T0 + hour; t < far_until - 9 * hour; t += hour) {
		pub_expire(p, t);
		cr_assert_eq(pending(p), 0, "far still beyond at %" PRIu64
		    " h", (t - T0) / hour);
		cr_assert(psum_contains(view, &far, L0 + (t - T0)));
	}
	pub_expire(p, far_until - 8 * hour);
	cr_assert_eq(pending(p), 1, "far came within range: retimed");
	size_t len = send(p, far_until - 8 * hour, &view, L0 + 22 * hour);
	cr_assert_lt(len, 16, "its one slot: %zu", len);
	cr_assert_eq(view->epoch, epoch, "no new epoch, no rebuild");
	cr_assert_eq(view->seq, seq + 1);
	/* 8 h away, a step of 2^-9 of it: a minute early at most */
	cr_assert(psum_contains(view, &far, L0 + 30 * hour - 60000));
	cr_assert(!psum_contains(view, &far, L0 + 30 * hour),
	    "its exact deadline, rounded down");
	struct pub_stats st;
	pub_stats(p, &st);
	cr_assert_eq(st.rebuilds, 0);
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

/* A peer's header names m and k: a table of more buckets than a peer
 * takes, or whose fingerprint is not of CK_FP_BITS, is refused before
 * anything is allocated, what is held stays, and our own publisher
 * never makes one larger than its max_bits. */
Test(timed, a_summary_too_large_to_hold_is_refused)
{
	struct publisher *p = timed_pub();
	struct psum *view = first_view(p);
	uint64_t held = view->checksum, m = view->m;
	struct sum_buf empty = {0};
	cr_assert_eq(rice_encode(&empty, NULL, 0), 0);
	struct sum_msg msg = {
		.timed = true, .full = true, .scheme = SUM_XXH3,
		.m = (CK_MAX_BUCKETS + 1) * CK_BUCKET, .k = CK_FP_BITS,
		.epoch = 9, .seq = 1, .payload = empty.p, .len = empty.len,
	};

	cr_assert_eq(psum_take(&view, &msg, L0), SUM_ERR_PARAMS);
	cr_assert_eq(view->m, m);
	cr_assert_eq(view->checksum, held);
	struct psum *none = NULL;
	cr_assert_eq(psum_take(&none, &msg, L0), SUM_ERR_PARAMS);
	cr_assert_null(none);
	msg.m = 4096 + 2;   /* not whole buckets */
	cr_assert_eq(psum_take(&none, &msg, L0), SUM_ERR_PARAMS);
	msg.m = 4096;
	msg.k = 16;         /* a fingerprint of other bits */
	cr_assert_eq(psum_take(&none, &msg, L0), SUM_ERR_PARAMS);
	msg.k = CK_FP_BITS; /* then it is taken, empty */
	cr_assert_eq(psum_take(&none, &msg, L0), 0);
	cr_assert_eq(none->m, 4096);
	cr_assert(psum_bytes(none) >= 1024 * CK_BUCKET_BYTES);
	cr_assert(psum_bytes(none) <= 1024 * CK_BUCKET_BYTES + 256,
	    "what a lookup reads, and little else: %zu", psum_bytes(none));
	psum_free(&none);
	psum_free(&view);
	pub_free(&p);
	sum_buf_free(&empty);

	struct pub_conf c = {
		.claims = PUB_CLAIMS_TIMED, .scheme = SUM_XXH3,
		.bits_per_entry = 16, .k = 4, .threshold = 0.01,
		.expected_objects = 8u << 20, .max_bits = 4096,
	};
	p = pub_new(&c, 1, T0);
	cr_assert_not_null(p);
	struct pub_stats st;
	pub_stats(p, &st);
	cr_assert_eq(st.m, 4096, "max_bits caps the slots");
	pub_free(&p);
}

/* A table already as large as max_bits allows is not rebuilt when it
 * fills (a rebuild at the same size would follow every refused add): the
 * keys it has no room for are counted, and the rest stay claimed. */
Test(timed, a_table_at_its_largest_is_not_rebuilt_when_full)
{
	struct pub_conf c = {
		.claims = PUB_CLAIMS_TIMED, .scheme = SUM_XXH3,
		.bits_per_entry = 16, .k = 4, .threshold = 0.01,
		.expected_objects = 1000, .max_bits = 64,
	};
	struct publisher *p = pub_new(&c, 1, T0);
	struct pub_stats st;
	struct sumkey k;

	cr_assert_not_null(p);
	for (uint64_t i = 0; i < 200; i++) {
		test_key(100 + i, &k);
		cr_assert(pub_added(p, &k, T0 + 600000, T0));
	}
	pub_stats(p, &st);
	cr_assert_eq(st.m, 64);
	cr_assert_gt(st.saturations, 0, "keys it had no room for");
	cr_assert_leq(st.entries, 64);
	cr_assert_eq(st.entries + st.saturations, 200);
	cr_assert_not(pub_wants_rebuild(p), "no larger table to build");
	pub_free(&p);

	/* below its largest, the same fills ask for growth */
	c.max_bits = 0;
	c.expected_objects = 50;
	p = pub_new(&c, 1, T0);
	for (uint64_t i = 0; i < 200 && !pub_wants_rebuild(p); i++) {
		test_key(100 + i, &k);
		cr_assert(pub_added(p, &k, T0 + 600000, T0));
	}
	cr_assert(pub_wants_rebuild(p));
	pub_free(&p);
}
