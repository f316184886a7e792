/*
 * See record.h.
 */
#include "record.h"

#include <string.h>

#include <xxhash.h>

#include "bytes.h"

#define HEAD_MAGIC 0x32524353u    /* "SCR2" */
#define TRAILER_MAGIC 0x4b4f4353u /* "SCOK" */

enum {
	F_MAGIC = 0, F_FLAGS = 4, F_HEAD_SUM = 8, F_BODY_LEN = 16,
	F_KEY_LEN = 24, F_HEAD_LEN = 28, F_VARY_LEN = 32, F_STATUS = 36,
	F_RESPONSE_TIME = 40, F_INITIAL_AGE = 48, F_LIFETIME = 56, F_META = 64,
	F_RESERVED = 68,
};
enum { T_MAGIC = 0, T_RESERVED = 4, T_HEAD_SUM = 8, T_BODY_SUM = 16 };
_Static_assert(T_BODY_SUM + 8 == RECORD_TRAILER, "the trailer's too");
_Static_assert(F_RESERVED + 4 == RECORD_HEAD, "the head's fields fill it");

#define META_MUST_REVALIDATE 1u
#define META_NO_CACHE 2u

uint64_t
record_body_sum(const void *p, size_t n)
{
	return XXH3_64bits(p, n);
}

/* struct record_sum is XXH3's streaming state, by another name */
struct record_sum *
record_sum_new(void)
{
	XXH3_state_t *st = XXH3_createState();

	if (st == NULL)
		return NULL;
	XXH3_64bits_reset(st);
	return (struct record_sum *)st;
}

void
record_sum_add(struct record_sum *s, const void *p, size_t n)
{
	XXH3_64bits_update((XXH3_state_t *)s, p, n);
}

uint64_t
record_sum_end(struct record_sum *s)
{
	uint64_t h = XXH3_64bits_digest((XXH3_state_t *)s);

	XXH3_freeState((XXH3_state_t *)s);
	return h;
}

/* Everything in the head after the checksum itself. */
static uint64_t
head_sum(const uint8_t *head, const struct record_info *r)
{
	return XXH3_64bits(head + F_BODY_LEN, record_head_len(r) - F_BODY_LEN);
}

void
record_describe(const struct store_obj *o, struct record_info *r)
{
	*r = (struct record_info){
		.body_len = o->body->len,
		.key_len = o->key_len,
		.head_len = o->head_len,
		.vary_len = o->vary_len,
		.meta = o->meta,
	};
}

void
record_write_head(struct record_info *r, const char *key, const char *head,
    const char *vary, uint8_t *out)
{
	uint32_t meta = (r->meta.must_revalidate ? META_MUST_REVALIDATE : 0) |
	    (r->meta.no_cache ? META_NO_CACHE : 0);

	memset(out, 0, RECORD_HEAD);
	store_le32(out + F_MAGIC, HEAD_MAGIC);
	store_le32(out + F_FLAGS, r->flags);
	store_le64(out + F_BODY_LEN, r->body_len);
	store_le32(out + F_KEY_LEN, r->key_len);
	store_le32(out + F_HEAD_LEN, r->head_len);
	store_le32(out + F_VARY_LEN, r->vary_len);
	store_le32(out + F_STATUS, (uint32_t)r->meta.status);
	store_le64(out + F_RESPONSE_TIME, (uint64_t)r->meta.response_time);
	store_le64(out + F_INITIAL_AGE, (uint64_t)r->meta.initial_age);
	store_le64(out + F_LIFETIME, (uint64_t)r->meta.lifetime);
	store_le32(out + F_META, meta);
	uint8_t *p = out + RECORD_HEAD;
	memcpy(p, key, r->key_len);
	if (r->head_len)
		memcpy(p + r->key_len, head, r->head_len);
	if (r->vary_len)
		memcpy(p + r->key_len + r->head_len, vary, r->vary_len);
	r->head_sum = head_sum(out, r);
	store_le64(out + F_HEAD_SUM, r->head_sum);
}

void
record_write_trailer(const struct record_info *r, uint8_t out[RECORD_TRAILER])
{
	store_le32(out + T_MAGIC, TRAILER_MAGIC);
	store_le32(out + T_RESERVED, 0);
	store_le64(out + T_HEAD_SUM, r->head_sum);
	store_le64(out + T_BODY_SUM, r->body_sum);
}

bool
record_read_fixed(const uint8_t *p, struct record_info *r)
{
	uint32_t flags = load_le32(p + F_FLAGS);

	if (load_le32(p + F_MAGIC) != HEAD_MAGIC || (flags & ~RECORD_TOMBSTONE))
		return false;
	*r = (struct record_info){
		.flags = flags,
		.head_sum = load_le64(p + F_HEAD_SUM),
		.body_len = load_le64(p + F_BODY_LEN),
		.key_len = load_le32(p + F_KEY_LEN),
		.head_len = load_le32(p + F_HEAD_LEN),
		.vary_len = load_le32(p + F_VARY_LEN),
	};
	uint32_t meta = load_le32(p + F_META);
	r->meta = (struct store_meta){
		.status = (int)load_le32(p + F_STATUS),
		.response_time = (time_t)load_le64(p + F_RESPONSE_TIME),
		.initial_age = (int64_t)load_le64(p + F_INITIAL_AGE),
		.lifetime = (int64_t)load_le64(p + F_LIFETIME),
		.must_revalidate = (meta & META_MUST_REVALIDATE) != 0,
		.no_cache = (meta & META_NO_CACHE) != 0,
	};
	/* bounds that keep every length sum far from overflow */
	return r->key_len > 0 && r->key_len <= RECORD_MAX_KEY &&
	    r->head_len <= RECORD_MAX_HEAD && r->vary_len <= RECORD_MAX_HEAD &&
	    r->body_len < (1ull << 40);
}

bool
record_head_ok(const uint8_t *p, const struct record_info *r)
{
	return head_sum(p, r) == r->head_sum;
}

bool
record_read_trailer(const uint8_t t[RECORD_TRAILER], struct record_info *r)
{
	if (load_le32(t + T_MAGIC) != TRAILER_MAGIC ||
	    load_le32(t + T_RESERVED) != 0 ||
	    load_le64(t + T_HEAD_SUM) != r->head_sum)
		return false;
	r->body_sum = load_le64(t + T_BODY_SUM);
	return true;
}
