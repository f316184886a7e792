/*
 * See cuckoo.h.
 *
 * One file, one job: the table's format. The node's table and a peer's
 * copy are its two sides, and they share everything that makes the
 * format (where a key lives, a slot's content, the shift that empties a
 * code come to 0, the contents' bits on the wire, the checksum's term);
 * a copy that read one of them differently from the table would believe
 * other claims than the node made. Split in two, those eight helpers
 * would have to leave this file for a private header both include; kept
 * here, static, the format is read in one place.
 */
#include "cuckoo.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "rice.h"

#define FP_MASK ((1u << CK_FP_BITS) - 1)
#define CODE_MASK ((1u << DL_BITS) - 1)
#define SLOT_MASK ((1u << CK_SLOT_BITS) - 1)

static const struct dl_form *const F = &DL_FORM;

static uint64_t
mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t
ck_slot_mix(uint64_t slot, uint32_t content)
{
	return mix64(slot << CK_SLOT_BITS | content);
}

/* ---- where a key lives ---- */

struct place {
	uint32_t fp;
	uint64_t b[2];
};

static uint64_t
other_bucket(uint64_t nb, uint64_t b, uint32_t fp)
{
	return (mix64(fp) % nb + nb - b) % nb;
}

static struct place
place_of(uint64_t nb, const struct sumkey *key)
{
	uint64_t h1 = load_le64(key->bytes), h2 = load_le64(key->bytes + 8);
	struct place p;

	p.fp = 1 + (uint32_t)((h2 >> 20) % FP_MASK);
	p.b[0] = (uint64_t)(((unsigned __int128)h1 * nb) >> 64);
	p.b[1] = other_bucket(nb, p.b[0], p.fp);
	return p;
}

static uint32_t
fp_of(uint32_t content)
{
	return content >> DL_BITS;
}

static uint32_t
code_of(uint32_t content)
{
	return content & CODE_MASK;
}

/* ---- the node's table ---- */

uint64_t
ck_buckets_for(uint64_t keys)
{
	double nb = (double)keys / CK_LOAD / CK_BUCKET;
	uint64_t n = (uint64_t)nb + ((double)(uint64_t)nb < nb);

	return n ? n : 1;
}

struct ck_table *
ck_new(uint64_t nb, uint64_t now_ms)
{
	if (nb == 0 || nb > CK_MAX_BUCKETS)
		return NULL;
	struct ck_table *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	size_t slots = (size_t)nb * CK_BUCKET;
	t->nb = nb;
	t->origin_ms = now_ms;
	t->rng = 0x9e3779b97f4a7c15ull ^ nb;
	t->slot = calloc(slots, sizeof(*t->slot));
	t->pub = calloc(slots, sizeof(*t->pub));
	t->dirty_bits = calloc((slots + 63) / 64, sizeof(uint64_t));
	if (t->slot == NULL || t->pub == NULL || t->dirty_bits == NULL)
		ck_free(&t);
	return t;
}

void
ck_free(struct ck_table **tp)
{
	struct ck_table *t = *tp;

	if (t == NULL)
		return;
	free(t->slot);
	free(t->pub);
	free(t->dirty_bits);
	free(t->dirty);
	free(t);
	*tp = NULL;
}

size_t
ck_bytes(const struct ck_table *t)
{
	size_t slots = (size_t)t->nb * CK_BUCKET;

	/* the slots, as published, the dirty bits and list */
	return sizeof(*t) + 2 * slots * sizeof(uint32_t) +
	    (slots + 63) / 64 * 8 + t->dirty_cap * sizeof(uint64_t);
}

static uint64_t
base_ms(const struct ck_table *t)
{
	return t->origin_ms + t->shifts * CK_SHIFT_MS;
}

static void
touch(struct ck_table *t, uint64_t s)
{
	uint64_t bit = 1ull << (s % 64);

	if (t->dirty_bits[s / 64] & bit)
		return;
	if (t->ndirty == t->dirty_cap) {
		size_t cap = t->dirty_cap ? 2 * t->dirty_cap : 256;
		uint64_t *d = realloc(t->dirty, cap * sizeof(*d));
		if (d == NULL) {
			t->dirty_lost = true;
			return;
		}
		t->dirty = d;
		t->dirty_cap = cap;
	}
	t->dirty_bits[s / 64] |= bit;
	t->dirty[t->ndirty++] = s;
}

/* A content once the base has moved on n shifts: empty when its code
 * reaches 0, at the node and at every peer alike, so that no message
 * carries a slot with no deadline. */
static uint32_t
shifted(uint32_t content, uint64_t n)
{
	if (content == 0 || n == 0)
		return content;
	uint32_t code = dl_shift(F, code_of(content), n);
	return code == 0 ? 0 : (content & ~CODE_MASK) | code;
}

static void
put(struct ck_table *t, uint64_t s, uint32_t content)
{
	t->slot[s] = content;
	touch(t, s);
}

uint64_t
ck_shift(struct ck_table *t, uint64_t now_ms)
{
	if (now_ms < t->origin_ms)
		return 0;
	uint64_t want = (now_ms - t->origin_ms) / CK_SHIFT_MS;
	if (want <= t->shifts)
		return 0;
	uint64_t n = want - t->shifts, slots = t->nb * CK_BUCKET;
	/* the same on the published copy as a peer will do it, without a
	 * message: not a change */
	t->pub_sum = 0;
	for (uint64_t s = 0; s < slots; s++) {
		if (t->slot[s] != 0) {
			t->slot[s] = shifted(t->slot[s], n);
			t->keys -= t->slot[s] == 0;
		}
		if (t->pub[s] != 0) {
			t->pub[s] = shifted(t->pub[s], n);
			if (t->pub[s] != 0)
				t->pub_sum += ck_slot_mix(s, t->pub[s]);
		}
	}
	t->shifts = want;
	return n;
}

bool
ck_beyond(const struct ck_table *t, uint64_t until_ms)
{
	return dl_of(F, base_ms(t), until_ms) == dl_top(F);
}

bool
ck_came_within(const struct ck_table *t, uint64_t shifts, uint64_t until_ms)
{
	uint64_t was = base_ms(t) - shifts * CK_SHIFT_MS;

	return until_ms != UINT64_MAX && !ck_beyond(t, until_ms) &&
	    dl_of(F, was, until_ms) == dl_top(F);
}

double
ck_fpr(uint64_t keys, uint64_t slots)
{
	/* each of the 2 x CK_BUCKET slots a lookup reads holds a key with
	 * probability keys / slots, whose fingerprint is the probe's with
	 * probability 1 / FP_MASK */
	double load = slots ? (double)keys / (double)slots : 0;

	return 1 - pow(1 - load / FP_MASK, 2 * CK_BUCKET);
}

void
ck_whole_next(struct ck_table *t)
{
	t->dirty_lost = true;
}

/* The slot of the key's fingerprint whose code is code, or else any of
 * its fingerprint's; UINT64_MAX when none. Code 0 (a deadline the base
 * has passed) takes only its own: a slot a shift emptied is not to be
 * looked for in a twin's. */
static uint64_t
find(const struct ck_table *t, const struct place *p, uint32_t code)
{
	uint64_t any = UINT64_MAX;

	for (int i = 0; i < 2; i++)
		for (unsigned j = 0; j < CK_BUCKET; j++) {
			uint64_t s = p->b[i] * CK_BUCKET + j;
			if (fp_of(t->slot[s]) != p->fp)
				continue;
			if (code_of(t->slot[s]) == code)
				return s;
			any = s;
		}
	return code == 0 ? UINT64_MAX : any;
}

static bool
free_slot(const struct ck_table *t, uint64_t b, uint64_t *s)
{
	for (unsigned j = 0; j < CK_BUCKET; j++)
		if (t->slot[b * CK_BUCKET + j] == 0) {
			*s = b * CK_BUCKET + j;
			return true;
		}
	return false;
}

int
ck_add(struct ck_table *t, const struct sumkey *key, uint64_t until_ms)
{
	struct place p = place_of(t->nb, key);
	uint32_t carry = p.fp << DL_BITS | dl_of(F, base_ms(t), until_ms);
	uint64_t s, path[CK_KICKS];

	for (int i = 0; i < 2; i++)
		if (free_slot(t, p.b[i], &s)) {
			put(t, s, carry);
			t->keys++;
			return 0;
		}
	/* Both full: put it in place of a resident, which goes to its
	 * other bucket, and so on. The moves are kept to be undone. */
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	uint64_t b = p.b[t->rng & 1];
	for (int n = 0; n < CK_KICKS; n++) {
		t->rng ^= t->rng << 13;
		t->rng ^= t->rng >> 7;
		t->rng ^= t->rng << 17;
		s = b * CK_BUCKET + (t->rng >> 32) % CK_BUCKET;
		uint32_t out = t->slot[s];
		t->slot[s] = carry;
		path[n] = s;
		carry = out;
		b = other_bucket(t->nb, b, fp_of(carry));
		uint64_t to;
		if (free_slot(t, b, &to)) {
			put(t, to, carry);
			for (int i = 0; i <= n; i++)
				touch(t, path[i]);
			t->keys++;
			return 0;
		}
	}
	/* no way through: every move back, the new key last out */
	for (int n = CK_KICKS - 1; n >= 0; n--) {
		uint32_t in = t->slot[path[n]];
		t->slot[path[n]] = carry;
		carry = in;
	}
	t->full_adds++;
	return -1;
}

bool
ck_remove(struct ck_table *t, const struct sumkey *key, uint64_t until_ms)
{
	struct place p = place_of(t->nb, key);
	uint64_t s = find(t, &p, dl_of(F, base_ms(t), until_ms));

	if (s == UINT64_MAX)
		return false;
	put(t, s, 0);
	t->keys--;
	return true;
}

bool
ck_retime(struct ck_table *t, const struct sumkey *key, uint64_t was_ms,
    uint64_t until_ms)
{
	struct place p = place_of(t->nb, key);
	uint64_t s = find(t, &p, dl_of(F, base_ms(t), was_ms));

	if (s == UINT64_MAX)
		return false;
	uint32_t content = p.fp << DL_BITS | dl_of(F, base_ms(t), until_ms);
	if (content != t->slot[s])
		put(t, s, content);
	return true;
}

static bool
live(uint32_t content, uint64_t base, uint64_t now_ms)
{
	return content != 0 && dl_live(F, code_of(content), base, now_ms);
}

bool
ck_contains(const struct ck_table *t, const struct sumkey *key,
    uint64_t now_ms)
{
	struct place p = place_of(t->nb, key);

	for (int i = 0; i < 2; i++)
		for (unsigned j = 0; j < CK_BUCKET; j++) {
			uint32_t c = t->slot[p.b[i] * CK_BUCKET + j];
			if (fp_of(c) == p.fp && live(c, base_ms(t), now_ms))
				return true;
		}
	return false;
}

/* ---- contents on the wire ---- */

static int
put_contents(struct sum_buf *out, const uint32_t *v, size_t n)
{
	size_t bytes = (n * CK_SLOT_BITS + 7) / 8;

	if (n == 0)
		return 0;
	if (sum_buf_reserve(out, bytes) < 0)
		return -1;
	uint8_t *p = out->p + out->len;
	uint64_t acc = 0;
	unsigned have = 0;
	memset(p, 0, bytes);
	for (size_t i = 0; i < n; i++) {
		acc = acc << CK_SLOT_BITS | (v[i] & SLOT_MASK);
		have += CK_SLOT_BITS;
		while (have >= 8) {
			*p++ = (uint8_t)(acc >> (have - 8));
			have -= 8;
		}
		acc &= (1ull << have) - 1;
	}
	if (have > 0)
		*p = (uint8_t)(acc << (8 - have));
	out->len += bytes;
	return 0;
}

/* Reads n contents from in[0..len): bytes used, or 0 when cut short, a
 * content has a zero fingerprint or code, or the padding is not zero. */
static size_t
get_contents(const uint8_t *in, size_t len, size_t n, uint32_t *v)
{
	size_t bytes = (n * CK_SLOT_BITS + 7) / 8;

	if (n == 0 || bytes > len)
		return 0;
	uint64_t acc = 0;
	unsigned have = 0;
	const uint8_t *p = in;
	for (size_t i = 0; i < n; i++) {
		while (have < CK_SLOT_BITS) {
			acc = acc << 8 | *p++;
			have += 8;
		}
		v[i] = (uint32_t)(acc >> (have - CK_SLOT_BITS)) & SLOT_MASK;
		have -= CK_SLOT_BITS;
		acc &= (1ull << have) - 1;
		if (fp_of(v[i]) == 0 || code_of(v[i]) == 0)
			return 0;
	}
	/* what is left of the last byte: zero padding */
	return acc == 0 ? bytes : 0;
}

/* ---- publishing ---- */

static int
encode(struct sum_buf *out, const uint64_t *set, const uint32_t *content,
    size_t nset, const uint64_t *cleared, size_t ncleared, bool full)
{
	if (rice_encode(out, set, nset) < 0 ||
	    put_contents(out, content, nset) < 0)
		return -1;
	return full ? 0 : rice_encode(out, cleared, ncleared);
}

static int
by_slot(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
ck_publish(struct ck_table *t, uint64_t now_ms, struct sum_buf *out,
    bool *full, uint64_t *sent_ms, uint64_t *checksum)
{
	uint64_t slots = t->nb * CK_BUCKET, base;
	size_t n = t->ndirty, nset = 0, ncleared = 0, nlive = 0;
	uint64_t *set = malloc((n ? n : 1) * sizeof(*set));
	uint64_t *cleared = malloc((n ? n : 1) * sizeof(*cleared));
	uint32_t *content = malloc((n ? n : 1) * sizeof(*content));
	uint64_t *all = NULL;
	uint32_t *all_content = NULL;
	struct sum_buf delta = {0}, whole = {0};
	int rc = -1;

	if (set == NULL || cleared == NULL || content == NULL)
		goto out;
	/* the base the message's sent_ms implies, whatever the caller did */
	ck_shift(t, now_ms);
	base = base_ms(t);
	/* a slot goes when a peer would see it otherwise: live here and
	 * not the same there, or live there only */
	if (n > 1)
		qsort(t->dirty, n, sizeof(*t->dirty), by_slot);
	for (size_t i = 0; i < n; i++) {
		uint64_t s = t->dirty[i];
		bool here = live(t->slot[s], base, now_ms);
		if (here && t->pub[s] != t->slot[s]) {
			set[nset] = s;
			content[nset++] = t->slot[s];
		} else if (!here && live(t->pub[s], base, now_ms)) {
			cleared[ncleared++] = s;
		}
	}
	if (!t->dirty_lost && encode(&delta, set, content, nset, cleared,
	    ncleared, false) < 0)
		goto out;
	/* the whole: each slot live now; a live slot takes a little over
	 * CK_SLOT_BITS, so it is worth building only past that */
	*full = t->dirty_lost;
	if (t->dirty_lost || delta.len * 8 > t->keys * CK_SLOT_BITS) {
		all = malloc((t->keys ? t->keys : 1) * sizeof(*all));
		all_content = malloc((t->keys ? t->keys : 1) *
		    sizeof(*all_content));
		if (all == NULL || all_content == NULL)
			goto out;
		for (uint64_t s = 0; s < slots; s++)
			if (live(t->slot[s], base, now_ms)) {
				all[nlive] = s;
				all_content[nlive++] = t->slot[s];
			}
		if (encode(&whole, all, all_content, nlive, NULL, 0,
		    true) < 0)
			goto out;
		*full = t->dirty_lost || whole.len < delta.len;
	}
	struct sum_buf *pick = *full ? &whole : &delta;
	if (sum_buf_put(out, pick->p, pick->len) < 0)
		goto out;
	if (*full) {
		memset(t->pub, 0, (size_t)slots * sizeof(*t->pub));
		t->pub_sum = 0;
		for (size_t i = 0; i < nlive; i++) {
			t->pub[all[i]] = all_content[i];
			t->pub_sum += ck_slot_mix(all[i], all_content[i]);
		}
	} else {
		for (size_t i = 0; i < nset; i++) {
			if (t->pub[set[i]] != 0)
				t->pub_sum -= ck_slot_mix(set[i],
				    t->pub[set[i]]);
			t->pub[set[i]] = content[i];
			t->pub_sum += ck_slot_mix(set[i], content[i]);
		}
		for (size_t i = 0; i < ncleared; i++) {
			t->pub_sum -= ck_slot_mix(cleared[i],
			    t->pub[cleared[i]]);
			t->pub[cleared[i]] = 0;
		}
	}
	for (size_t i = 0; i < n; i++)
		t->dirty_bits[t->dirty[i] / 64] = 0;
	t->ndirty = 0;
	t->dirty_lost = false;
	/* a large list (a table filled between two publications) is not
	 * kept for the next: it regrows to what the changes need */
	if (t->dirty_cap > 1024) {
		free(t->dirty);
		t->dirty = NULL;
		t->dirty_cap = 0;
	}
	*sent_ms = now_ms - t->origin_ms;
	*checksum = t->pub_sum;
	rc = 0;
out:
	free(set);
	free(cleared);
	free(content);
	free(all);
	free(all_content);
	free(delta.p);
	free(whole.p);
	return rc;
}

int
ck_encode_published(const struct ck_table *t, uint64_t now_ms,
    struct sum_buf *out, uint64_t *sent_ms, uint64_t *checksum)
{
	uint64_t slots = t->nb * CK_BUCKET, n = 0, sum = 0;
	uint64_t clock = now_ms > t->origin_ms ? now_ms - t->origin_ms : 0;
	uint64_t shifts = clock / CK_SHIFT_MS;
	uint64_t *set = malloc((t->keys + 1) * sizeof(*set));
	uint32_t *content = malloc((t->keys + 1) * sizeof(*content));
	size_t cap = (size_t)t->keys + 1;
	int rc = -1;

	/* pub as a peer holds it at now_ms: shifted to now's base if the
	 * table has not been yet (what a peer does with sent_ms) */
	shifts = shifts > t->shifts ? shifts - t->shifts : 0;
	for (uint64_t s = 0; s < slots && set != NULL && content != NULL;
	    s++) {
		uint32_t c = shifted(t->pub[s], shifts);
		if (c == 0)
			continue;
		if (n == cap) {
			cap *= 2;
			uint64_t *s2 = realloc(set, cap * sizeof(*set));
			if (s2 != NULL)
				set = s2;
			uint32_t *c2 = realloc(content, cap * sizeof(*content));
			if (c2 != NULL)
				content = c2;
			if (s2 == NULL || c2 == NULL)
				goto out;
		}
		set[n] = s;
		content[n++] = c;
		sum += ck_slot_mix(s, c);
	}
	if (set == NULL || content == NULL ||
	    encode(out, set, content, n, NULL, 0, true) < 0)
		goto out;
	*sent_ms = clock;
	*checksum = sum;
	rc = 0;
out:
	free(set);
	free(content);
	return rc;
}

/* ---- a peer's copy ---- */

struct ck_copy *
ck_copy_new(uint64_t nb)
{
	if (nb == 0 || nb > CK_MAX_BUCKETS)
		return NULL;
	struct ck_copy *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->nb = nb;
	c->bytes = calloc((size_t)nb * CK_BUCKET_BYTES + 1, 1);
	if (c->bytes == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

void
ck_copy_free(struct ck_copy **cp)
{
	if (*cp == NULL)
		return;
	free((*cp)->bytes);
	free(*cp);
	*cp = NULL;
}

size_t
ck_copy_bytes(const struct ck_copy *c)
{
	return (size_t)c->nb * CK_BUCKET_BYTES + 1 + sizeof(*c);
}

/* A bucket's 120 bits, slot j at bits 30 j (little-endian bytes), read
 * as two words: the spare byte after the last bucket keeps the second
 * word's last byte in the array. */
static unsigned __int128
bucket_get(const uint8_t *bytes, uint64_t b)
{
	const uint8_t *p = bytes + b * CK_BUCKET_BYTES;
	unsigned __int128 v = (unsigned __int128)load_le64(p + 8) << 64 |
	    load_le64(p);

	return v & (((unsigned __int128)1 << (8 * CK_BUCKET_BYTES)) - 1);
}

static uint32_t
copy_slot(const uint8_t *bytes, uint64_t s)
{
	unsigned __int128 v = bucket_get(bytes, s / CK_BUCKET);

	return (uint32_t)(v >> (CK_SLOT_BITS * (s % CK_BUCKET))) & SLOT_MASK;
}

static void
copy_set(uint8_t *bytes, uint64_t s, uint32_t content)
{
	uint64_t b = s / CK_BUCKET;
	unsigned shift = CK_SLOT_BITS * (unsigned)(s % CK_BUCKET);
	unsigned __int128 v = bucket_get(bytes, b);

	v &= ~((unsigned __int128)SLOT_MASK << shift);
	v |= (unsigned __int128)content << shift;
	for (unsigned i = 0; i < CK_BUCKET_BYTES; i++)
		bytes[b * CK_BUCKET_BYTES + i] = (uint8_t)(v >> (8 * i));
}

bool
ck_copy_contains(const struct ck_copy *c, const struct sumkey *key,
    uint64_t sender_ms)
{
	struct place p = place_of(c->nb, key);
	uint64_t base = c->shifts * CK_SHIFT_MS;

	for (int i = 0; i < 2; i++) {
		unsigned __int128 v = bucket_get(c->bytes, p.b[i]);
		for (unsigned j = 0; j < CK_BUCKET; j++, v >>= CK_SLOT_BITS) {
			uint32_t content = (uint32_t)v & SLOT_MASK;
			if (fp_of(content) == p.fp &&
			    live(content, base, sender_ms))
				return true;
		}
	}
	return false;
}

/* The slots of a message: a Rice list and its contents, and for a
 * delta a second list. */
struct msg {
	uint64_t *set, *cleared;
	uint32_t *content;
	size_t nset, ncleared;
};

static void
msg_clear(struct msg *m)
{
	free(m->set);
	free(m->cleared);
	free(m->content);
	memset(m, 0, sizeof(*m));
}

static int
decode(const uint8_t *in, size_t len, uint64_t slots, bool delta,
    struct msg *m)
{
	long r;
	size_t at;

	memset(m, 0, sizeof(*m));
	r = rice_decode(in, len, slots, &m->set, &m->nset);
	if (r < 0)
		return (int)r;
	at = (size_t)r;
	m->content = malloc((m->nset ? m->nset : 1) * sizeof(*m->content));
	if (m->content == NULL) {
		msg_clear(m);
		return SUM_ERR_NOMEM;
	}
	size_t used = get_contents(in + at, len - at, m->nset, m->content);
	if (used == 0 && m->nset > 0)
		goto bad;
	at += used;
	if (delta) {
		r = rice_decode(in + at, len - at, slots, &m->cleared,
		    &m->ncleared);
		if (r < 0) {
			int rc = (int)r;
			msg_clear(m);
			return rc;
		}
		at += (size_t)r;
		/* no slot both set and cleared */
		for (size_t i = 0, j = 0; i < m->nset && j < m->ncleared;) {
			if (m->set[i] == m->cleared[j])
				goto bad;
			if (m->set[i] < m->cleared[j])
				i++;
			else
				j++;
		}
	}
	if (at != len)
		goto bad;
	return 0;
bad:
	msg_clear(m);
	return SUM_ERR_MALFORMED;
}


int
ck_copy_load(struct ck_copy *c, uint64_t sent_ms, const uint8_t *in,
    size_t len, uint64_t checksum)
{
	struct msg m;
	int rc = decode(in, len, c->nb * CK_BUCKET, false, &m);

	if (rc < 0)
		return rc;
	uint64_t sum = 0;
	for (size_t i = 0; i < m.nset; i++)
		sum += ck_slot_mix(m.set[i], m.content[i]);
	if (sum != checksum) {
		msg_clear(&m);
		return SUM_ERR_CHECKSUM;
	}
	memset(c->bytes, 0, (size_t)c->nb * CK_BUCKET_BYTES + 1);
	for (size_t i = 0; i < m.nset; i++)
		copy_set(c->bytes, m.set[i], m.content[i]);
	c->shifts = sent_ms / CK_SHIFT_MS;
	c->sum = sum;
	c->keys = m.nset;
	msg_clear(&m);
	return 0;
}

int
ck_copy_apply(struct ck_copy *c, uint64_t sent_ms, const uint8_t *in,
    size_t len, uint64_t checksum)
{
	struct msg m;
	uint64_t shifts = sent_ms / CK_SHIFT_MS, slots = c->nb * CK_BUCKET;

	if (shifts < c->shifts)
		return SUM_ERR_MALFORMED;  /* a base that went back */
	int rc = decode(in, len, slots, true, &m);
	if (rc < 0)
		return rc;
	/* the sum checked before anything changes: over the slots as the
	 * message's base sees them (a pass over all of them once a shift,
	 * every CK_SHIFT_MS), then slot by slot */
	uint64_t n = shifts - c->shifts, sum = c->sum, keys = c->keys;
	if (n > 0) {
		sum = 0;
		keys = 0;
		for (uint64_t s = 0; s < slots; s++) {
			uint32_t content = shifted(copy_slot(c->bytes, s), n);
			if (content != 0) {
				sum += ck_slot_mix(s, content);
				keys++;
			}
		}
	}
	for (size_t i = 0; i < m.nset; i++) {
		uint32_t was = shifted(copy_slot(c->bytes, m.set[i]), n);
		if (was != 0)
			sum -= ck_slot_mix(m.set[i], was);
		sum += ck_slot_mix(m.set[i], m.content[i]);
		keys += was == 0;
	}
	for (size_t i = 0; i < m.ncleared; i++) {
		uint32_t was = shifted(copy_slot(c->bytes, m.cleared[i]), n);
		if (was != 0)
			sum -= ck_slot_mix(m.cleared[i], was);
		keys -= was != 0;
	}
	if (sum != checksum) {
		msg_clear(&m);
		return SUM_ERR_CHECKSUM;
	}
	if (n > 0)
		for (uint64_t s = 0; s < slots; s++) {
			uint32_t content = copy_slot(c->bytes, s);
			if (content != 0)
				copy_set(c->bytes, s, shifted(content, n));
		}
	for (size_t i = 0; i < m.nset; i++)
		copy_set(c->bytes, m.set[i], m.content[i]);
	for (size_t i = 0; i < m.ncleared; i++)
		copy_set(c->bytes, m.cleared[i], 0);
	msg_clear(&m);
	c->shifts = shifts;
	c->sum = sum;
	c->keys = keys;
	return 0;
}
