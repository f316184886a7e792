/*
 * The claims table (summary/claims.h): a key is claimed while one of its
 * objects' deadlines is ahead, lapses in deadline order, and comes back
 * when a copy with a later deadline is stored.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "claims.h"

static struct sumkey
key(int i)
{
	struct sumkey k;

	memset(&k, 0, sizeof(k));
	memcpy(k.bytes, &i, sizeof(i));
	k.bytes[15] = (uint8_t)(i * 37);
	return k;
}

Test(claims, keys_lapse_in_deadline_order_and_come_back)
{
	struct claims *t = claims_new();
	struct claim *c, gone;

	/* deadlines 500, 400, ..., 100 and one forever */
	for (int i = 0; i < 5; i++) {
		struct sumkey k = key(i);
		cr_assert_eq(claims_add(t, &k, 500 - 100 * (uint64_t)i, 0, &c, NULL),
		    1);
		cr_assert_eq(memcmp(&c->key, &k, sizeof(k)), 0);
	}
	struct sumkey f = key(9);
	cr_assert_eq(claims_add(t, &f, CLAIMS_FOREVER, 0, &c, NULL), 1);
	/* a copy already past its deadline is never claimed */
	struct sumkey late = key(10);
	cr_assert_eq(claims_add(t, &late, 50, 60, &c, NULL), 0);
	cr_assert_eq(claims_keys(t), 7);

	cr_assert_null(claims_lapse(t, 99));
	for (int i = 4; i >= 0; i--) {
		struct sumkey k = key(i);
		c = claims_lapse(t, 1000);
		cr_assert_not_null(c);
		cr_assert_eq(memcmp(&c->key, &k, sizeof(k)), 0, "out of order");
		cr_assert(!c->claimed);
	}
	cr_assert_null(claims_lapse(t, UINT64_MAX - 1), "forever lapsed");

	/* a lapsed key: its removal changes nothing for the filter; a new
	 * copy claims it again */
	struct sumkey k0 = key(0);
	cr_assert_eq(claims_add(t, &k0, 2000, 1000, &c, NULL), 1);
	cr_assert_eq(claims_remove(t, &k0, &gone), 0, "two objects had it");
	cr_assert_eq(claims_remove(t, &k0, &gone), 1);
	cr_assert_eq(memcmp(&gone.key, &k0, sizeof(k0)), 0);
	cr_assert_eq(claims_remove(t, &k0, &gone), -1, "no object has it");
	struct sumkey k1 = key(1);
	cr_assert_eq(claims_remove(t, &k1, &gone), 0, "lapsed already");
	claims_free(&t);
	cr_assert_null(t);
}

Test(claims, a_variant_keeps_the_latest_deadline)
{
	struct claims *t = claims_new();
	struct claim *c;
	struct sumkey k = key(1), other = key(2);

	cr_assert_eq(claims_add(t, &k, 100, 0, &c, NULL), 1);
	uint64_t was = 0;
	cr_assert_eq(claims_add(t, &k, 300, 0, &c, &was), 2,
	    "claimed already: its deadline moved later");
	cr_assert_eq(c->until_ms, 300);
	cr_assert_eq(was, 100, "the deadline it had, to find its slot by");
	cr_assert_eq(claims_add(t, &k, 200, 0, &c, NULL), 0);
	cr_assert_eq(claims_add(t, &other, 250, 0, &c, NULL), 1);
	c = claims_lapse(t, 299);
	cr_assert_not_null(c);
	cr_assert_eq(memcmp(&c->key, &other, sizeof(k)), 0,
	    "the earlier variant's deadline was kept");
	cr_assert_null(claims_lapse(t, 299));
	cr_assert_not_null(claims_lapse(t, 300));
	/* a variant made forever leaves the heap */
	cr_assert_eq(claims_add(t, &other, CLAIMS_FOREVER, 300, &c, NULL), 1);
	cr_assert_eq(claims_add(t, &other, 400, 300, &c, NULL), 0);
	cr_assert_null(claims_lapse(t, UINT64_MAX - 1));
	cr_assert_gt(claims_bytes(t), 0);
	claims_free(&t);
}

/* Many keys: slots are reused and the buckets grow, and every key is
 * found again. */
Test(claims, a_large_table_finds_every_key)
{
	struct claims *t = claims_new();
	struct claim *c, gone;
	enum { N = 50000 };

	for (int i = 0; i < N; i++) {
		struct sumkey k = key(i);
		cr_assert_eq(claims_add(t, &k, 1000 + (uint64_t)(i % 97), 0,
		    &c, NULL), 1);
	}
	for (int i = 0; i < N; i += 2) {
		struct sumkey k = key(i);
		cr_assert_eq(claims_remove(t, &k, &gone), 1);
	}
	cr_assert_eq(claims_keys(t), N / 2);
	for (int i = 0; i < N; i += 2) {
		struct sumkey k = key(i);
		cr_assert_eq(claims_add(t, &k, CLAIMS_FOREVER, 0, &c, NULL), 1);
	}
	size_t lapsed = 0;
	while (claims_lapse(t, 2000) != NULL)
		lapsed++;
	cr_assert_eq(lapsed, N / 2);
	claims_free(&t);
}
