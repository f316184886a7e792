#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "storestress.h"

static struct store_obj *
obj(const char *key, size_t body_len, const char *vary)
{
	struct store_body *b = store_body_new(body_len);
	struct store_meta m = {.status = 200};
	char data[8192];

	memset(data, 'x', sizeof(data));
	cr_assert(store_body_append(&b, data, body_len) == 0);
	struct store_obj *o = store_obj_new(key, strlen(key), "A: b\r\n", 6,
	    vary, strlen(vary), &m, b);
	store_body_unref(&b);
	return o;
}

struct counts {
	int in, out;
	int emptied;  /* times the store was left holding none */
};

static void
count_in(void *arg, struct store_obj *o)
{
	(void)o;
	((struct counts *)arg)->in++;
}

static void
count_out(void *arg, struct store_obj *o, enum store_exit why)
{
	(void)o;
	(void)why;
	struct counts *c = arg;
	c->emptied += ++c->out == c->in;
}

Test(store, insert_lookup_replace_and_observe)
{
	struct store *s = store_new(1 << 20);
	struct counts c = {0};
	struct store_observer ob = {count_in, count_out, &c};

	store_observe(s, &ob);
	struct store_obj *a = obj("http://a/", 100, "");
	cr_assert(store_insert(s, a));
	store_obj_unref(&a);
	struct store_obj *got = store_lookup(s, "http://a/", 9, NULL, NULL);
	cr_assert_not_null(got);
	cr_assert_eq(got->body->len, 100);
	store_obj_unref(&got);
	a = obj("http://a/", 200, "");
	cr_assert(store_insert(s, a));
	store_obj_unref(&a);
	cr_assert_eq(store_stats(s).objects, 1, "same variant replaced");
	cr_assert_eq(c.emptied, 0, "observers saw the new copy enter "
	    "before the old one left");
	a = obj("http://a/", 50, "accept-language:fr\n");
	store_insert(s, a);
	store_obj_unref(&a);
	cr_assert_eq(store_stats(s).objects, 2, "another variant added");
	cr_assert_eq(store_invalidate(s, "http://a/", 9), 2);
	cr_assert_eq(c.in, 3);
	cr_assert_eq(c.out, 3);
	cr_assert_eq(store_stats(s).bytes, 0);
	store_free(&s);
	cr_assert_null(s);
}

Test(store, budget_is_kept_and_sieve_spares_visited)
{
	struct store *s = store_new(64 * 1024);
	char key[64];

	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "http://k/%d", i);
		struct store_obj *o = obj(key, 1000, "");
		cr_assert(store_insert(s, o));
		store_obj_unref(&o);
		/* object 0 is hit every time: SIEVE must keep it */
		struct store_obj *h = store_lookup(s, "http://k/0", 10, NULL,
		    NULL);
		cr_assert_not_null(h, "hot object evicted at insert %d", i);
		store_obj_unref(&h);
		cr_assert_leq(store_stats(s).bytes, 64 * 1024);
	}
	cr_assert_gt(store_stats(s).evictions, 100);
	store_free(&s);
}

Test(store, eviction_never_frees_a_body_in_use)
{
	struct store *s = store_new(8 * 1024);
	struct store_obj *o = obj("http://big/", 4000, "");

	store_insert(s, o);
	store_obj_unref(&o);
	struct store_obj *h = store_lookup(s, "http://big/", 11, NULL, NULL);
	/* what a hit does: hold the body, let go of the object */
	struct store_body *b = store_body_ref(h->body);
	store_obj_unref(&h);
	o = obj("http://other/", 5000, "");
	store_insert(s, o); /* evicts http://big/ */
	store_obj_unref(&o);
	cr_assert_null(store_lookup(s, "http://big/", 11, NULL, NULL));
	cr_assert_eq(b->refs, 1);
	cr_assert_eq(b->data[3999], 'x', "still readable after eviction");
	store_body_release_cb(b->data, b->len, b);
	store_free(&s);
}

Test(store, too_big_is_refused)
{
	struct store *s = store_new(1024);
	struct store_obj *o = obj("http://x/", 2000, "");

	cr_assert(!store_insert(s, o));
	cr_assert_eq(store_stats(s).objects, 0);
	store_obj_unref(&o);
	store_free(&s);
}

Test(store, head_fields)
{
	struct store_obj *o = obj("http://h/", 1, "");
	const char *v;
	size_t vl;

	cr_assert(store_head_find(o, "a", &v, &vl));
	cr_assert(vl == 1 && v[0] == 'b');
	cr_assert(!store_head_find(o, "etag", &v, &vl));
	store_obj_unref(&o);
}

/* An evicted body that a sender still holds keeps its charge until it is
 * let go: the budget covers what is in memory, not only what is stored. */
Test(store, evicted_bodies_still_held_stay_charged)
{
	struct store_obj *a = obj("http://a/", 6000, "");
	size_t charge = a->charge;
	/* room for two objects of this size, not three */
	struct store *s = store_new(charge * 2 + charge / 2);

	cr_assert(store_insert(s, a));
	struct store_body *sending = store_body_ref(a->body);
	store_obj_unref(&a);
	for (int i = 0; i < 2; i++) {
		char key[32];
		snprintf(key, sizeof(key), "http://b%d/", i);
		struct store_obj *b = obj(key, 6000, "");
		cr_assert(store_insert(s, b));
		store_obj_unref(&b);
	}
	struct store_stats st = store_stats(s);
	cr_assert_null(store_lookup(s, "http://a/", 9, NULL, NULL),
	    "a was not evicted");
	cr_assert_gt(st.pinned, 0, "the body being sent is charged nowhere");
	cr_assert_leq(st.bytes + st.pinned, charge * 2 + charge / 2);
	cr_assert_eq(st.objects, 1, "b1 must have made room beside a's body");
	store_body_unref(&sending);
	cr_assert_eq(store_stats(s).pinned, 0);

	/* a body no one else holds is not pinned when evicted */
	struct store_obj *c = obj("http://c/", 6000, "");
	cr_assert(store_insert(s, c));
	store_obj_unref(&c);
	cr_assert_eq(store_stats(s).pinned, 0);
	store_free(&s);
}

Test(store, nothing_stored_while_what_is_sent_fills_the_budget)
{
	struct store_obj *a = obj("http://a/", 6000, "");
	struct store *s = store_new(a->charge + a->charge / 2);

	cr_assert(store_insert(s, a));
	struct store_body *sending = store_body_ref(a->body);
	store_obj_unref(&a);
	struct store_obj *b = obj("http://b/", 6000, "");
	cr_assert(!store_insert(s, b), "stored beside a pinned body that "
	    "leaves no room");
	cr_assert_eq(store_stats(s).objects, 0);
	store_obj_unref(&b);
	store_body_unref(&sending);
	cr_assert_eq(store_stats(s).pinned, 0);
	struct store_obj *c = obj("http://c/", 6000, "");
	cr_assert(store_insert(s, c), "room again once it was sent");
	store_obj_unref(&c);
	store_free(&s);
}

/* Four threads at once on one store: every body found is its own, the
 * budget holds, observers hear each object leave once, and no pin is
 * left behind. Run at length under TSan by store-stress (tests/run.sh). */
Test(store, threads_share_one_store)
{
	struct store_stress st = {.threads = 4, .ms = 1500, .keys = 200,
	    .budget = 256 * 1024};

	cr_assert_eq(store_stress_run(&st), 0);
	cr_assert_gt(st.hits, 1000, "%llu hits", (unsigned long long)st.hits);
	cr_assert_gt(st.evictions, 100);
	cr_assert_gt(st.invalidations, 10);
	cr_assert_gt(st.removes, 10);
	cr_assert_eq(st.wrong, 0, "%llu bodies not their own",
	    (unsigned long long)st.wrong);
	cr_assert_eq(st.over_budget, 0);
	cr_assert_eq(st.unbalanced, 0);
	cr_assert_eq(st.pinned_left, 0);
}
