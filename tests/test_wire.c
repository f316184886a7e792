#include <criterion/criterion.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sumcache.pb-c.h"
#include "wire.h"
#include "wiretest.h"

static const uint8_t key[] = "cluster-key-for-wire-tests";

static struct sum_buf
sample(void)
{
	uint8_t payload[40];
	struct wire_summary w = {
		.epoch = 1790000000123456ull, .seq = 42, .scheme = SUM_XXH3,
		.m = 1u << 20, .k = 4, .full = false, .payload = payload,
		.payload_len = sizeof(payload), .checksum = 0x0123456789abcdefull,
		.entries = 999,
	};
	struct sum_buf b = {0};

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	strcpy(w.sender, "node-a");
	cr_assert_eq(wire_encode(&w, key, sizeof(key) - 1, &b), 0);
	return b;
}

Test(wire, round_trip)
{
	struct sum_buf b = sample();
	struct wire_summary w;

	cr_assert_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1, &w),
	    WIRE_OK);
	cr_expect_str_eq(w.sender, "node-a");
	cr_expect_eq(w.epoch, 1790000000123456ull);
	cr_expect_eq(w.seq, 42);
	cr_expect_eq(w.scheme, SUM_XXH3);
	cr_expect_eq(w.m, 1u << 20);
	cr_expect_eq(w.k, 4);
	cr_expect(!w.full);
	cr_expect_eq(w.checksum, 0x0123456789abcdefull);
	cr_expect_eq(w.entries, 999);
	cr_assert_eq(w.payload_len, 40);
	cr_expect_eq(w.payload[39], (uint8_t)(39 * 7));
	wire_summary_clear(&w);
	free(b.p);
}

Test(wire, wrong_key_truncation_and_corruption_are_refused)
{
	struct sum_buf b = sample();
	struct wire_summary w;

	cr_expect_eq(wire_decode(b.p, b.len, (const uint8_t *)"another-key-of-"
	    "some-length", 26, &w), WIRE_BAD_MAC);
	for (size_t cut = 0; cut < b.len; cut++)
		cr_expect_neq(wire_decode(b.p, cut, key, sizeof(key) - 1, &w),
		    WIRE_OK, "truncated to %zu accepted", cut);
	for (size_t i = 0; i < b.len; i++)
		for (int bit = 0; bit < 8; bit++) {
			b.p[i] ^= (uint8_t)(1 << bit);
			cr_expect_neq(wire_decode(b.p, b.len, key,
			    sizeof(key) - 1, &w), WIRE_OK, "byte %zu bit %d "
			    "flipped and accepted", i, bit);
			b.p[i] ^= (uint8_t)(1 << bit);
		}
	cr_expect_eq(wire_decode(b.p, WIRE_MAX_BYTES + 1, key,
	    sizeof(key) - 1, &w), WIRE_TOO_BIG);
	free(b.p);
}

Test(wire, fields_are_checked_after_the_mac)
{
	static const struct { uint64_t seq, m; const char *sender, *what; } v[] = {
		{0, 64, "a", "sequence 0"},
		{1, WIRE_MAX_BITS + 1, "a", "m over the limit"},
		{1, 0, "a", "m of 0"},
		{1, 64, "", "no sender"},
		/* it would go into the log, Via and metric labels */
		{1, 64, "a\nb", "a newline in the sender"},
		{1, 64, "a\"}", "a quote in the sender"},
		{1, 64, "a b", "a space in the sender"},
	};
	uint8_t payload[1] = {0};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct wire_summary w = {
			.epoch = 1, .seq = v[i].seq, .scheme = SUM_XXH3,
			.m = v[i].m, .k = 4, .full = true, .payload = payload,
			.payload_len = 1,
		};
		struct sum_buf b = {0};
		struct wire_summary out;

		strcpy(w.sender, v[i].sender);
		cr_assert_eq(wire_encode(&w, key, sizeof(key) - 1, &b), 0);
		cr_expect_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1,
		    &out), WIRE_MALFORMED, "%s accepted", v[i].what);
		free(b.p);
	}
}

Test(wire, an_invalidation_naming_its_sender_in_other_characters_is_refused)
{
	static const char *const names[] = {"", "x\ny", "\x1b[31m", "a/b"};
	const char *url = "http://example.com/";

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct sum_buf b = {0};
		struct wire_invalidation out;
		cr_assert_eq(wire_encode_invalidation(names[i], 1, &url, 1, key,
		    sizeof(key) - 1, &b), 0);
		cr_expect_eq(wire_decode_invalidation(b.p, b.len, key,
		    sizeof(key) - 1, &out), WIRE_MALFORMED, "sender %zu taken",
		    i);
		free(b.p);
	}
	struct sum_buf b = {0};
	struct wire_invalidation out;
	cr_assert_eq(wire_encode_invalidation("node-a.b_c", 1, &url, 1, key,
	    sizeof(key) - 1, &b), 0);
	cr_expect_eq(wire_decode_invalidation(b.p, b.len, key,
	    sizeof(key) - 1, &out), WIRE_OK);
	wire_invalidation_clear(&out);
	free(b.p);
}

/* A Summary as another version would send it, signed with our key: the
 * MAC is right, the version is not. */
static struct sum_buf
versioned(uint32_t version, Sumcache__V1__Kind kind, uint32_t k)
{
	return wiretest_versioned(version, kind, k, "old-node", key,
	    sizeof(key) - 1);
}

/* Version 1 had no version field: its Summary reads as version 0, and is
 * refused as such before its payload (bits, where version 2 has timed
 * cells and version 3 a cuckoo table) is looked at; the sender and
 * version are kept for the log line. Version 2's timed kinds have the
 * numbers of ours and another payload: refused by the version too, not
 * misread. Ours say 3, and a timed kind's k is its fingerprint's 18
 * bits. */
Test(wire, a_summary_of_another_version_is_refused_by_its_version)
{
	struct wire_summary out;
	uint32_t versions[] = {0, 1, 2, 4};

	for (size_t i = 0; i < 4; i++) {
		struct sum_buf b = versioned(versions[i], i == 2 ?
		    SUMCACHE__V1__KIND__KIND_TIMED_FULL :
		    SUMCACHE__V1__KIND__KIND_FULL, 4);
		cr_assert_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1,
		    &out), WIRE_VERSION_DIFFERS, "version %u", versions[i]);
		cr_assert_eq(out.version, versions[i]);
		cr_assert_str_eq(out.sender, "old-node");
		cr_assert_null(out.payload);
		free(b.p);
	}
	struct sum_buf b = versioned(WIRE_VERSION,
	    SUMCACHE__V1__KIND__KIND_TIMED_FULL, CK_FP_BITS);
	cr_assert_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1, &out),
	    WIRE_OK);
	cr_assert(out.timed && out.full);
	cr_assert_eq(out.k, CK_FP_BITS);
	wire_summary_clear(&out);
	free(b.p);
	/* a timed kind whose k is a filter's: not a table we read */
	b = versioned(WIRE_VERSION, SUMCACHE__V1__KIND__KIND_TIMED_FULL, 4);
	cr_assert_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1, &out),
	    WIRE_MALFORMED);
	free(b.p);
	/* and a filter's k of 18, more than a filter takes */
	b = versioned(WIRE_VERSION, SUMCACHE__V1__KIND__KIND_FULL, CK_FP_BITS);
	cr_assert_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1, &out),
	    WIRE_MALFORMED);
	free(b.p);

	/* what we send carries the version and the timed kind */
	struct wire_summary w = {
		.epoch = 1, .seq = 1, .scheme = SUM_XXH3, .m = 64,
		.k = CK_FP_BITS, .full = false, .timed = true,
		.sent_ms = 123456,
	};
	uint8_t payload[1] = {0};
	w.payload = payload;
	w.payload_len = 1;
	strcpy(w.sender, "new-node");
	b = (struct sum_buf){0};
	cr_assert_eq(wire_encode(&w, key, sizeof(key) - 1, &b), 0);
	cr_assert_eq(wire_decode(b.p, b.len, key, sizeof(key) - 1, &out),
	    WIRE_OK);
	cr_assert_eq(out.version, WIRE_VERSION);
	cr_assert(out.timed && !out.full);
	cr_assert_eq(out.sent_ms, 123456);
	wire_summary_clear(&out);
	free(b.p);
}
