/*
 * See record.h.
 */
#include "record.h"

#include <string.h>

#include <xxhash.h>

#define HEAD_MAGIC 0x31524353u    /* "SCR1" */
#define TRAILER_MAGIC 0x4b4f4353u /* "SCOK" */

enum {
	F_MAGIC = 0, F_FLAGS = 4, F_HEAD_SUM = 8, F_BODY_SUM = 16,
	F_BODY_LEN = 24, F_KEY_LEN = 32, F_HEAD_LEN = 36, F_VARY_LEN = 40,
	F_STATUS = 44, F_RESPONSE_TIME = 48, F_INITIAL_AGE = 56,
	F_LIFETIME = 64, F_META = 72, F_RESERVED = 76,
};
_Static_assert(F_RESERVED + 4 == RECORD_HEAD, "the head's fields fill it");

#define META_MUST_REVALIDATE 1u
#define META_NO_CACHE 2u

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

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
	return XXH3_64bits(head + F_BODY_SUM, record_head_len(r) - F_BODY_SUM);
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
	put32(out + F_MAGIC, HEAD_MAGIC);
	put32(out + F_FLAGS, r->flags);
	put64(out + F_BODY_SUM, r->body_sum);
	put64(out + F_BODY_LEN, r->body_len);
	put32(out + F_KEY_LEN, r->key_len);
	put32(out + F_HEAD_LEN, r->head_len);
	put32(out + F_VARY_LEN, r->vary_len);
	put32(out + F_STATUS, (uint32_t)r->meta.status);
	put64(out + F_RESPONSE_TIME, (uint64_t)r->meta.response_time);
	put64(out + F_INITIAL_AGE, (uint64_t)r->meta.initial_age);
	put64(out + F_LIFETIME, (uint64_t)r->meta.lifetime);
	put32(out + F_META, meta);
	uint8_t *p = out + RECORD_HEAD;
	memcpy(p, key, r->key_len);
	if (r->head_len)
		memcpy(p + r->key_len, head, r->head_len);
	if (r->vary_len)
		memcpy(p + r->key_len + r->head_len, vary, r->vary_len);
	r->head_sum = head_sum(out, r);
	put64(out + F_HEAD_SUM, r->head_sum);
}

void
record_write_trailer(const struct record_info *r, uint8_t out[RECORD_TRAILER])
{
	put32(out, TRAILER_MAGIC);
	put32(out + 4, 0);
	put64(out + 8, r->head_sum);
}

bool
record_read_fixed(const uint8_t *p, struct record_info *r)
{
	uint32_t flags = get32(p + F_FLAGS);

	if (get32(p + F_MAGIC) != HEAD_MAGIC || (flags & ~RECORD_TOMBSTONE))
		return false;
	*r = (struct record_info){
		.flags = flags,
		.head_sum = get64(p + F_HEAD_SUM),
		.body_sum = get64(p + F_BODY_SUM),
		.body_len = get64(p + F_BODY_LEN),
		.key_len = get32(p + F_KEY_LEN),
		.head_len = get32(p + F_HEAD_LEN),
		.vary_len = get32(p + F_VARY_LEN),
	};
	uint32_t meta = get32(p + F_META);
	r->meta = (struct store_meta){
		.status = (int)get32(p + F_STATUS),
		.response_time = (time_t)get64(p + F_RESPONSE_TIME),
		.initial_age = (int64_t)get64(p + F_INITIAL_AGE),
		.lifetime = (int64_t)get64(p + F_LIFETIME),
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
record_trailer_ok(const uint8_t t[RECORD_TRAILER], const struct record_info *r)
{
	return get32(t) == TRAILER_MAGIC && get32(t + 4) == 0 &&
	    get64(t + 8) == r->head_sum;
}
