/*
 * The publisher (summary/publisher.c) on its own, claiming while fresh
 * (test_timed.c has the timed policy): the threshold and max-interval
 * rules, what a receiver rebuilds from its publications, and growth by
 * rebuild while objects come and go, with the new epoch.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "peers.h"
#include "publisher.h"
#include "sumtest.h"

static struct pub_conf
conf(double threshold, uint64_t max_interval_ms, uint64_t expected)
{
	return (struct pub_conf){
		.claims = PUB_CLAIMS_FRESH,
		.scheme = SUM_XXH3,
		.bits_per_entry = 16,
		.k = 4,
		.threshold = threshold,
		.max_interval_ms = max_interval_ms,
		.expected_objects = expected,
	};
}

/* A receiver: applies a publication as peers/ does on arrival. */
static void
receive(struct psum *view, struct publication *pub)
{
	int rc = pub->full ? psum_load_full(view, pub->scheme, pub->m, pub->k,
	    pub->epoch, pub->seq, pub->payload.p, pub->payload.len,
	    pub->checksum) : psum_apply_delta(view, pub->epoch, pub->seq,
	    pub->payload.p, pub->payload.len, pub->checksum);
	cr_assert_eq(rc, 0, "publication %llu (%s) refused: %d",
	    (unsigned long long)pub->seq, pub->full ? "full" : "delta", rc);
	sum_buf_free(&pub->payload);
}

Test(publisher, sizing_and_tick)
{
	cr_assert_eq(pub_expected_objects(0, PUB_OBJECT_BYTES),
	    PUB_MIN_OBJECTS);
	cr_assert_eq(pub_expected_objects(64ull << 20, PUB_OBJECT_BYTES),
	    (64ull << 20) / PUB_OBJECT_BYTES);
	cr_assert_eq(pub_expected_objects(64ull << 20, 8192),
	    (64ull << 20) / 8192);
	struct pub_conf c = conf(0.01, 60000, 1000);
	cr_assert_eq(pub_tick_ms(&c), 15000);
	c.max_interval_ms = 200;
	cr_assert_eq(pub_tick_ms(&c), 100, "at least 100 ms");
	c.max_bits = 4096;
	c.expected_objects = 100000;
	struct publisher *p = pub_new(&c, 1, 0);
	cr_assert_eq(pub_filter(p)->m, 4096, "max_bits caps m");
	pub_free(&p);
	cr_assert_null(p);
}

Test(publisher, threshold_counts_adds_and_removes)
{
	struct pub_conf c = conf(0.01, 0, 4000);
	struct publisher *p = pub_new(&c, 1, 0);
	struct publication pub = {0};
	struct sumkey k;

	cr_assert_not_null(p);
	cr_assert(!pub_threshold_reached(p, 1, 0), "nothing changed yet");
	test_key(0, &k);
	pub_added(p, &k, CLAIMS_FOREVER, 0);
	cr_assert(pub_threshold_reached(p, 1, 0), "one change, one entry: due");
	for (uint64_t i = 1; i < 1000; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
	}
	cr_assert_eq(pub_publish(p, 10, &pub), 0);
	sum_buf_free(&pub.payload);
	cr_assert_eq(pub_filter(p)->changes, 0);
	/* 1 % of 1,000 to 1,009 entries is 10 changes (rounded down) */
	for (uint64_t i = 1000; i < 1009; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
		cr_assert(!pub_threshold_reached(p, 1, 0), "%llu changes of %llu",
		    (unsigned long long)(i - 999),
		    (unsigned long long)pub_filter(p)->entries);
	}
	test_key(1009, &k);
	pub_added(p, &k, CLAIMS_FOREVER, 0);
	cr_assert(pub_threshold_reached(p, 1, 0), "10 changes at 1,010 entries");
	cr_assert_eq(pub_publish(p, 20, &pub), 0);
	sum_buf_free(&pub.payload);
	/* removals are changes too: 10 at 1,000 entries */
	for (uint64_t i = 0; i < 10; i++) {
		test_key(i, &k);
		cr_assert(!pub_threshold_reached(p, 1, 0));
		cr_assert(pub_removed(p, &k));
	}
	cr_assert_eq(pub_filter(p)->entries, 1000);
	cr_assert(pub_threshold_reached(p, 1, 0));
	struct pub_stats st;
	pub_stats(p, &st);
	cr_assert_eq(st.seq, 3, "sequence 1 is the empty filter");
	cr_assert_eq(st.deltas + st.fulls, 2);
	cr_assert_eq(st.last_publish_ms, 20);
	pub_free(&p);
}

/* An auto publisher (fresh claims) with `keys` keys published at 0 ms,
 * then `changes` more added: what the auto tests start from. */
static struct publisher *
auto_with(uint64_t keys, uint64_t changes)
{
	struct pub_conf c = conf(PUB_THRESHOLD_AUTO, 0, 2 * (keys + changes));
	struct publisher *p = pub_new(&c, 1, 0);
	struct publication pub = {0};
	struct sumkey k;

	cr_assert_not_null(p);
	for (uint64_t i = 0; i < keys; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
	}
	cr_assert_eq(pub_publish(p, 0, &pub), 0);
	sum_buf_free(&pub.payload);
	for (uint64_t i = keys; i < keys + changes; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
	}
	return p;
}

/* Peers ask p asks_per_s times a second from 0 ms, and its own clients
 * send it requests_per_s: the first ms (scanning by 100) at which p is
 * due to `peers`, or 0 within the hour. */
static uint64_t
first_due(struct publisher *p, unsigned peers, uint64_t asks_per_s,
    uint64_t requests_per_s)
{
	for (uint64_t t = 100; t < 3600000; t += 100) {
		if (t % 1000 == 0) {
			pub_asked(p, asks_per_s, t);
			pub_requested(p, requests_per_s, t);
		}
		if (pub_threshold_reached(p, peers, t))
			return t;
	}
	return 0;
}

Test(publisher, auto_is_due_at_the_ceiling_when_no_peer_asks)
{
	/* 10 % of 10,000 + changes is 1,111 changes */
	struct publisher *below = auto_with(10000, 1110);
	struct publisher *at = auto_with(10000, 1112);

	cr_assert(!pub_threshold_reached(below, 7, 3600000),
	    "no peer asked: a change costs nothing, however long it waits");
	pub_asked(below, 1000, 1000);
	cr_assert(pub_threshold_reached(below, 7, 2000), "asked: due");
	cr_assert(!pub_threshold_reached(below, 0, 2000),
	    "no live peer: nobody to tell, nobody waiting");
	cr_assert(pub_threshold_reached(at, 7, 1), "the ceiling: due");
	pub_free(&below);
	pub_free(&at);
}

Test(publisher, auto_is_never_due_under_the_floor)
{
	/* 0.5 % of 10,040 is 50 changes */
	struct publisher *p = auto_with(10000, 40);

	pub_asked(p, 1000000, 1000);
	cr_assert(!pub_threshold_reached(p, 1, 60000),
	    "peers ask all the time, but 40 changes are under the floor");
	pub_free(&p);
	p = auto_with(10000, 60);
	pub_asked(p, 1000000, 1000);
	cr_assert(pub_threshold_reached(p, 1, 1100), "60 are over it");
	pub_free(&p);
}

Test(publisher, auto_is_due_sooner_the_more_peers_ask_and_later_the_more_they_are)
{
	/* 60 changes at 10,000 keys: between the floor and the ceiling */
	struct publisher *p[3] = {auto_with(10000, 60),
	    auto_with(10000, 60), auto_with(10000, 60)};
	/* clients busy enough that the loss bound does not come first */
	uint64_t busy = 1000000;
	uint64_t t4 = first_due(p[0], 4, 1, busy);
	uint64_t busy4 = first_due(p[1], 4, 2, busy);
	uint64_t t8 = first_due(p[2], 8, 1, busy);

	cr_assert(t4 > 0 && t8 > 0 && busy4 > 0, "due in the hour: %llu %llu "
	    "%llu", (unsigned long long)t4, (unsigned long long)t8,
	    (unsigned long long)busy4);
	/* what the changes have cost grows with the time they wait: twice
	 * the asks, half the wait; twice the peers, twice the cost of
	 * telling them, twice the wait */
	double half = (double)busy4 / (double)t4, twice = (double)t8 /
	    (double)t4;
	cr_assert(half > 0.4 && half < 0.6, "twice the asks: %.3f", half);
	cr_assert(twice > 1.7 && twice < 2.3, "twice the peers: %.3f", twice);
	/* and the rule's own figure: 1 ask a second over 10,060 keys,
	 * 60 changes, due when rate x changes x t / 2 x W reaches 4 */
	double rate = 1.0 / (10060 * 1000.0);
	double expect = 2 * 4 / (rate * 60 * PUB_AUTO_HIT_MESSAGES);
	cr_assert(t4 > 0.8 * expect && t4 < 1.2 * expect,
	    "due at %llu ms, the rule says %.0f", (unsigned long long)t4,
	    expect);
	for (int i = 0; i < 3; i++)
		pub_free(&p[i]);
}

Test(publisher, auto_is_due_once_the_changes_lose_its_share_of_the_clients_requests)
{
	/* 1 ask a second over 10,060 keys, 60 changes pending: they lose
	 * 60 / 10,060 requests a second, which is PUB_AUTO_LOSS of
	 * `clients` requests a second */
	double clients = 60.0 / 10060 / PUB_AUTO_LOSS;
	struct publisher *few = auto_with(10000, 60);
	struct publisher *many = auto_with(10000, 60);
	struct publisher *priced = auto_with(10000, 60);
	uint64_t t_few = first_due(few, 4, 1, (uint64_t)(0.8 * clients));
	uint64_t t_many = first_due(many, 4, 1, (uint64_t)(1.25 * clients) +
	    1);
	uint64_t t_price = first_due(priced, 4, 1, 1000000);

	cr_assert(clients > 1, "the case needs a client a second: %.2f",
	    clients);
	cr_assert(t_few > 0 && t_few <= 1000,
	    "under the bound's clients, due at the first ask: %llu",
	    (unsigned long long)t_few);
	cr_assert(t_many > 1000 && t_many == t_price,
	    "over them, due when the price says (%llu), not before: %llu",
	    (unsigned long long)t_price, (unsigned long long)t_many);
	pub_free(&few);
	pub_free(&many);
	pub_free(&priced);
}

Test(publisher, max_interval_publishes_only_pending_changes)
{
	struct pub_conf c = conf(0.5, 1000, 1000);
	struct publisher *p = pub_new(&c, 1, 5000);
	struct publication pub = {0};
	struct sumkey k;

	cr_assert(!pub_interval_due(p, 5000 + 60000), "no changes, not due");
	for (uint64_t i = 0; i < 100; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
	}
	cr_assert_eq(pub_publish(p, 5000, &pub), 0);
	sum_buf_free(&pub.payload);
	test_key(100, &k);
	pub_added(p, &k, CLAIMS_FOREVER, 0);
	cr_assert(!pub_threshold_reached(p, 1, 0), "1 change of 101 at 50 %");
	cr_assert(!pub_interval_due(p, 5999));
	cr_assert(pub_interval_due(p, 6000));
	cr_assert_eq(pub_publish(p, 6000, &pub), 0);
	sum_buf_free(&pub.payload);
	cr_assert(!pub_interval_due(p, 9000), "published: nothing pending");
	c.max_interval_ms = 0;
	struct publisher *never = pub_new(&c, 1, 0);
	pub_added(never, &k, CLAIMS_FOREVER, 0);
	cr_assert(!pub_interval_due(never, UINT64_MAX / 2), "0: never");
	pub_free(&never);
	pub_free(&p);
}

Test(publisher, receiver_follows_every_publication)
{
	struct pub_conf c = conf(0.01, 0, 20000);
	struct publisher *p = pub_new(&c, 77, 0);
	struct publication pub = {0};
	struct psum *view = psum_new(SUM_XXH3, pub_filter(p)->m, 4);
	struct sumkey k;
	unsigned fulls = 0, deltas = 0;

	cr_assert_eq(pub_last_full(p, 0, &pub), 0);
	cr_assert_eq(pub.seq, 1);
	cr_assert_eq(pub.epoch, 77);
	receive(view, &pub);
	for (uint64_t i = 0; i < 30000; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
		/* evictions behind the inserts, as a full cache has */
		if (i >= 10000) {
			test_key(i - 10000, &k);
			cr_assert(pub_removed(p, &k));
		}
		if (pub_threshold_reached(p, 1, 0)) {
			cr_assert_eq(pub_publish(p, i, &pub), 0);
			fulls += pub.full;
			deltas += !pub.full;
			receive(view, &pub);
		}
	}
	const struct cbf *f = pub_filter(p);
	cr_assert_eq(view->checksum, sum_checksum(f->published, f->m));
	cr_assert(deltas > 100, "deltas %u", deltas);
	cr_assert(fulls >= 1, "the early publications are full (%u)", fulls);
	psum_free(&view);
	pub_free(&p);
}

/* Whether f counts exactly the keys whose ids have present[id]. */
static void
assert_counts(const struct cbf *f, const bool *present, size_t n)
{
	struct cbf *want = cbf_new(f->scheme, f->m, f->k);
	struct sumkey k;

	for (size_t i = 0; i < n; i++)
		if (present[i]) {
			test_key(i, &k);
			cbf_add(want, &k);
		}
	cr_assert_eq(f->entries, want->entries);
	cr_assert(memcmp(f->counters, want->counters,
	    (size_t)(f->m + 1) / 2) == 0, "the rebuilt filter's counters "
	    "differ from a filter of what is stored");
	cbf_free(&want);
}

/* The epoch p publishes under. */
static uint64_t
epoch_of(const struct publisher *p)
{
	struct pub_stats st;

	pub_stats(p, &st);
	return st.epoch;
}

Test(publisher, growth_while_objects_come_and_go)
{
	enum { N = 6000 };
	struct pub_conf c = conf(0.01, 0, 1024);
	struct publisher *p = pub_new(&c, 1000, 0);
	struct publication pub = {0};
	bool present[N] = {false};
	struct sumkey k;
	size_t next_id = 0;
	unsigned rebuilds = 0;

	for (int round = 0; round < 2; round++) {
		while (!pub_wants_rebuild(p)) {
			test_key(next_id, &k);
			pub_added(p, &k, CLAIMS_FOREVER, 0);
			present[next_id++] = true;
		}
		uint64_t entries = pub_filter(p)->entries;
		uint64_t old_epoch = epoch_of(p);
		/* a clock stepped back still gives a newer epoch */
		pub_rebuild_begin(p, round == 0 ? 5 : old_epoch + 1000, 0);
		cr_assert(pub_rebuilding(p));
		cr_assert(!pub_wants_rebuild(p), "one rebuild at a time");
		/* the walk over the publisher's table, in steps, while
		 * objects arrive and leave: some already walked, some not
		 * yet, some arriving after it began */
		while (!pub_rebuild_step(p, 97)) {
			for (int a = 0; a < 5 && next_id < N; a++) {
				test_key(next_id, &k);
				pub_added(p, &k, CLAIMS_FOREVER, 0);
				present[next_id++] = true;
			}
			size_t victim = (size_t)(test_rand() % next_id);
			if (present[victim]) {
				test_key(victim, &k);
				cr_assert(pub_removed(p, &k));
				present[victim] = false;
			}
		}
		cr_assert_eq(pub_rebuild_end(p, 42, &pub), 1);
		rebuilds++;
		const struct cbf *f = pub_filter(p);
		cr_assert(epoch_of(p) > old_epoch, "epoch %llu after %llu",
		    (unsigned long long)epoch_of(p),
		    (unsigned long long)old_epoch);
		if (round == 1)
			cr_assert_eq(epoch_of(p), old_epoch + 1000);
		cr_assert_eq(f->m, cbf_size_for(2 * entries, 16));
		cr_assert(pub.full);
		cr_assert_eq(pub.seq, 1);
		cr_assert_eq(pub.epoch, epoch_of(p));
		assert_counts(f, present, next_id);
		cr_assert_eq(f->bad_removes, 0, "a removal reached the new "
		    "filter before the walk put the object in it");
		/* a receiver takes the new epoch in full, then deltas */
		struct psum *view = psum_new(SUM_XXH3, 64, 4);
		receive(view, &pub);
		cr_assert(next_id < N);
		test_key(next_id, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
		present[next_id++] = true;
		cr_assert_eq(pub_publish(p, 50, &pub), 0);
		cr_assert_eq(pub.seq, 2);
		receive(view, &pub);
		cr_assert_eq(view->checksum, sum_checksum(f->published, f->m));
		psum_free(&view);
		/* the table agrees with the filter in use: removing
		 * everything leaves it empty */
	}
	struct pub_stats st;
	pub_stats(p, &st);
	cr_assert_eq(st.rebuilds, rebuilds);
	for (size_t i = 0; i < next_id; i++)
		if (present[i]) {
			test_key(i, &k);
			cr_assert(pub_removed(p, &k));
		}
	cr_assert_eq(pub_filter(p)->entries, 0);
	cr_assert_eq(cbf_popcount(pub_filter(p)), 0);
	pub_free(&p);
}

/* A cache restored from disk announces itself: a full summary of what
 * the filter holds, in an epoch newer than any before (even with the
 * clock stepped back), and the deltas after it are relative to it. */
Test(publisher, announce_starts_a_newer_epoch_with_the_filter_as_is)
{
	struct pub_conf c = conf(0.01, 0, 4000);
	struct publisher *p = pub_new(&c, 5000, 0);
	struct publication pub = {0};
	struct psum *view = psum_new(SUM_XXH3, pub_filter(p)->m, 4);
	struct sumkey k;

	for (uint64_t i = 0; i < 300; i++) {
		test_key(i, &k);
		pub_added(p, &k, CLAIMS_FOREVER, 0);
	}
	cr_assert_eq(pub_publish(p, 1, &pub), 0);
	receive(view, &pub);
	cr_assert_eq(pub_announce(p, 4000, 2, &pub), 1);
	cr_assert(pub.full);
	cr_assert_eq(pub.seq, 1);
	cr_assert_eq(pub.epoch, 5001, "epoch %llu",
	    (unsigned long long)pub.epoch);
	cr_assert_eq(pub.entries, 300);
	receive(view, &pub);
	test_key(300, &k);
	pub_added(p, &k, CLAIMS_FOREVER, 0);
	cr_assert_eq(pub_publish(p, 3, &pub), 0);
	cr_assert_eq(pub.seq, 2);
	receive(view, &pub);
	const struct cbf *f = pub_filter(p);
	cr_assert_eq(view->checksum, sum_checksum(f->published, f->m));
	psum_free(&view);
	pub_free(&p);
}

/* Claims (publisher.h): a key is in the filter while a copy is fresh
 * enough for a peer, its deadline the expiry less the publication delay,
 * and comes back when a copy of it is stored again. */
Test(publisher, claims_lapse_before_expiry_and_come_back)
{
	struct pub_conf c = conf(0.01, 60000, 4000);
	struct publisher *p = pub_new(&c, 1, 0);
	struct publication pub = {0};
	struct psum *view = psum_new(SUM_XXH3, pub_filter(p)->m, 4);
	struct sumkey k, v;

	/* publications every 2 s: the margin follows them */
	for (uint64_t t = 2000; t <= 10000; t += 2000) {
		test_key(900000 + t, &k);
		pub_added(p, &k, CLAIMS_FOREVER, t);
		cr_assert_eq(pub_publish(p, t, &pub), 0);
		receive(view, &pub);
	}
	cr_assert_eq(pub_margin_ms(p), 2000);
	uint64_t now = 10000;
	/* 0: fresh for 30 s; 1: for 1 s, less than the margin: never
	 * claimed; 2: two variants, fresh for 5 and for 20 s */
	test_key(0, &k);
	cr_assert(pub_added(p, &k, now + 30000, now));
	test_key(1, &k);
	cr_assert(pub_added(p, &k, now + 1000, now));
	test_key(2, &v);
	cr_assert(pub_added(p, &v, now + 5000, now));
	cr_assert(pub_added(p, &v, now + 20000, now));
	cr_assert_eq(pub_filter(p)->entries, 5 + 2, "one key for two variants");
	cr_assert_eq(pub_publish(p, now, &pub), 0);
	receive(view, &pub);
	test_key(1, &k);
	cr_assert(!psum_contains(view, &k, 0), "too short-lived to claim");
	cr_assert(psum_contains(view, &v, 0));

	/* the later variant's deadline (20 s less the margin) holds */
	cr_assert_eq(pub_expire(p, now + 17999), 0);
	cr_assert_eq(pub_expire(p, now + 18000), 1);
	cr_assert(pub_threshold_reached(p, 1, 0), "a lapse is a change");
	cr_assert_eq(pub_publish(p, now + 18000, &pub), 0);
	receive(view, &pub);
	cr_assert(!psum_contains(view, &v, 0), "the peers see it gone");
	/* revalidated: the store replaces the copy, and the key is back */
	cr_assert(pub_removed(p, &v));
	cr_assert(pub_added(p, &v, now + 60000, now + 18000));
	cr_assert(pub_removed(p, &v), "one variant left");
	cr_assert(pub_removed(p, &v));
	cr_assert(!pub_removed(p, &v), "no object has it now");
	struct pub_stats st;
	pub_stats(p, &st);
	cr_assert_eq(st.bad_removes, 1);
	/* key 0 lapses at 28 s; its removal after that changes nothing */
	cr_assert_eq(pub_expire(p, now + 28000), 1);
	uint64_t entries = pub_filter(p)->entries;
	test_key(0, &k);
	cr_assert(pub_removed(p, &k));
	cr_assert_eq(pub_filter(p)->entries, entries);
	test_key(1, &k);
	cr_assert(pub_removed(p, &k));
	pub_stats(p, &st);
	cr_assert_eq(st.expired, 2);
	cr_assert_eq(st.keys, 5, "only the never-expiring keys are left");
	/* the margin never exceeds the max interval */
	c.max_interval_ms = 500;
	pub_set_pace(p, 0.01, 500);
	cr_assert_eq(pub_margin_ms(p), 500);
	psum_free(&view);
	pub_free(&p);
}

/* A rebuild's walk over the table while claims lapse and return: the new
 * filter counts exactly the keys claimed at its end. */
Test(publisher, growth_while_claims_lapse)
{
	enum { N = 5000 };
	struct pub_conf c = conf(0.01, 0, 1024);
	struct publisher *p = pub_new(&c, 1000, 0);
	struct publication pub = {0};
	static uint64_t until[N];
	static bool claimed[N];
	struct sumkey k;
	size_t n = 0;
	uint64_t now = 1000;

	/* each object fresh for ten times its id in ms (no publication
	 * yet: no margin) */
	while (!pub_wants_rebuild(p)) {
		test_key(n, &k);
		until[n] = now + 10 * n;
		cr_assert(pub_added(p, &k, until[n], now));
		n++;
	}
	pub_rebuild_begin(p, 5000, 0);
	while (!pub_rebuild_step(p, 50)) {
		now += 37;
		pub_expire(p, now);
		for (int a = 0; a < 3 && n < N; a++) {
			test_key(n, &k);
			until[n] = now + 10 * n;
			cr_assert(pub_added(p, &k, until[n], now));
			n++;
		}
	}
	cr_assert_eq(pub_rebuild_end(p, now, &pub), 1);
	sum_buf_free(&pub.payload);
	/* the new filter counts what is claimed: not past its deadline */
	for (size_t i = 0; i < n; i++)
		claimed[i] = until[i] > now;
	assert_counts(pub_filter(p), claimed, n);
	cr_assert_eq(pub_filter(p)->bad_removes, 0);
	/* everything removed: the filter is empty */
	for (size_t i = 0; i < n; i++) {
		test_key(i, &k);
		cr_assert(pub_removed(p, &k));
	}
	cr_assert_eq(pub_filter(p)->entries, 0);
	cr_assert_eq(cbf_popcount(pub_filter(p)), 0);
	pub_free(&p);
}

/* The candidates' order (peers.h), the daemon's and the simulator's: the
 * false-hit rate in steps, then RTT. */
Test(claims, right_claims_first_then_the_fastest)
{
	struct claim_record b = {0}, c = {0};

	cr_assert(claim_before(0, 5.0, 0, 9.0), "equal records: the faster");
	claim_note(&b, CLAIM_FALSE, 0);
	cr_assert_float_eq(b.false_rate, 1.0 / CLAIM_WINDOW, 1e-12);
	cr_assert(claim_before(c.false_rate, 9.0, b.false_rate, 1.0),
	    "one false hit outweighs RTT");
	/* hits bring a peer back: the rate falls under one step again */
	int hits = 0;
	while (!claim_before(b.false_rate, 1.0, c.false_rate, 9.0) &&
	    hits < 100) {
		claim_note(&b, CLAIM_HIT, 0);
		hits++;
	}
	cr_assert_gt(hits, 0);
	cr_assert_lt(hits, CLAIM_WINDOW, "recovered after %d hits", hits);
	/* a peer that is always wrong tends to 1 */
	for (int i = 0; i < 10 * CLAIM_WINDOW; i++)
		claim_note(&c, CLAIM_FALSE, 0);
	cr_assert_gt(c.false_rate, 0.99);
}

/* A claimant that keeps being wrong is skipped even alone, for a time
 * that doubles while it stays wrong; a hit clears it; a failed request
 * skips it at once. */
Test(claims, a_claimant_always_wrong_is_skipped_for_longer_each_time)
{
	struct claim_record r = {0};
	uint64_t now = 1000;

	for (int i = 1; i < CLAIM_SKIP_RUN; i++) {
		cr_assert(!claim_note(&r, CLAIM_FALSE, now), "skipped after %d",
		    i);
		cr_assert(!claim_skipped(&r, now));
	}
	cr_assert(claim_note(&r, CLAIM_FALSE, now));
	cr_assert(claim_skipped(&r, now));
	cr_assert(claim_skipped(&r, now + CLAIM_SKIP_MIN_MS - 1));
	cr_assert(!claim_skipped(&r, now + CLAIM_SKIP_MIN_MS));
	/* asked again when the skip ends, wrong again: twice as long */
	unsigned expect = CLAIM_SKIP_MIN_MS;
	for (int i = 0; i < 12; i++) {
		now = r.skip_until_ms;
		cr_assert(claim_note(&r, CLAIM_FALSE, now), "wrong once more");
		expect = expect * 2 > CLAIM_SKIP_MAX_MS ? CLAIM_SKIP_MAX_MS :
		    expect * 2;
		cr_assert_eq(r.skip_ms, expect);
		cr_assert_eq(r.skip_until_ms, now + expect);
	}
	cr_assert_eq(r.skip_ms, CLAIM_SKIP_MAX_MS, "bounded");
	/* a hit clears the run and the doubling */
	claim_note(&r, CLAIM_HIT, now);
	cr_assert_eq(r.false_run, 0);
	cr_assert(!claim_note(&r, CLAIM_FALSE, r.skip_until_ms));
	/* a failed request: skipped at once, from the shortest period */
	struct claim_record f = {0};
	cr_assert(claim_note(&f, CLAIM_FAILED, 0));
	cr_assert_eq(f.skip_ms, CLAIM_SKIP_MIN_MS);
	cr_assert(claim_note(&f, CLAIM_FAILED, f.skip_until_ms));
	cr_assert_eq(f.skip_ms, 2 * CLAIM_SKIP_MIN_MS);
	/* a restarted peer starts with a clean record */
	claim_renew(&f);
	cr_assert(!claim_skipped(&f, 0));
	cr_assert(claim_note(&f, CLAIM_FAILED, 0));
	cr_assert_eq(f.skip_ms, CLAIM_SKIP_MIN_MS);
}
