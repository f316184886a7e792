/*
 * deadline-eval's slot tables (deadline-eval.h): the candidates it models
 * itself, small timed cells, a d-left counting filter and cuckoo tables,
 * with summary/deadline.h's codes in the form each is given. The chosen
 * form is measured as summary/cuckoo.c builds it (deadline-eval.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "deadline-eval.h"
#include "rice.h"


static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t
mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ x >> 33;
}

static uint64_t
onto(uint64_t h, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)h * n) >> 64);
}

static uint32_t
tab_fp(const struct tab *t, const struct sumkey *k)
{
	return 1 + (uint32_t)((le64(k->bytes + 8) >> 20) %
	    ((1ull << t->fbits) - 1));
}

/* The slots a key may use: cells its k cells, d-left its d buckets'
 * cells, cuckoo its two buckets' (the second from the first and the
 * fingerprint, so a slot's content alone tells where else it may go). */
static unsigned
tab_slots(const struct tab *t, const struct sumkey *k, uint64_t *s)
{
	uint64_t h1 = le64(k->bytes);
	unsigned n = 0;

	switch (t->kind) {
	case T_CELLS:
		sumkey_positions(SUM_XXH3, k, t->k, t->nslots, s);
		return t->k;
	case T_DLEFT:
		for (unsigned d = 0; d < DLEFT_D; d++) {
			uint64_t b = d * t->nb + onto(mix64(h1 + d *
			    0x9e3779b97f4a7c15ull), t->nb);
			for (unsigned c = 0; c < DLEFT_B; c++)
				s[n++] = b * DLEFT_B + c;
		}
		return n;
	case T_CUCKOO: {
		uint64_t i1 = onto(h1, t->nb);
		uint64_t i2 = (mix64(tab_fp(t, k)) % t->nb + t->nb - i1) %
		    t->nb;
		for (unsigned c = 0; c < CUCKOO_B; c++)
			s[n++] = i1 * CUCKOO_B + c;
		for (unsigned c = 0; c < CUCKOO_B; c++)
			s[n++] = i2 * CUCKOO_B + c;
		return n;
	}
	}
	return 0;
}

static uint64_t
cuckoo_alt(const struct tab *t, uint64_t bucket, uint32_t fp)
{
	return (mix64(fp) % t->nb + t->nb - bucket) % t->nb;
}

struct tab *
tab_new(enum tab_kind kind, unsigned fbits, struct dl_form q,
    size_t nkeys)
{
	struct tab *t = calloc(1, sizeof(*t));

	t->kind = kind;
	t->fbits = fbits;
	t->q = q;
	switch (t->kind) {
	case T_CELLS:
		t->k = K;
		t->nslots = cbf_size_for(nkeys, BITS);
		break;
	case T_DLEFT:
		t->nb = (uint64_t)ceil((double)nkeys / DLEFT_LOAD / DLEFT_D /
		    DLEFT_B);
		t->nslots = t->nb * DLEFT_D * DLEFT_B;
		break;
	case T_CUCKOO:
		t->nb = (uint64_t)ceil((double)nkeys / CUCKOO_LOAD / CUCKOO_B);
		t->nslots = t->nb * CUCKOO_B;
		break;
	}
	t->fp = calloc(t->nslots, sizeof(uint32_t));
	t->code = calloc(t->nslots, sizeof(uint32_t));
	t->cnt = calloc(t->nslots, sizeof(uint32_t));
	t->key = calloc(t->nslots, sizeof(uint32_t));
	t->fp_pub = calloc(t->nslots, sizeof(uint32_t));
	t->code_pub = calloc(t->nslots, sizeof(uint32_t));
	t->counted = calloc(nkeys, sizeof(bool));
	t->scratch = calloc(t->nslots, sizeof(uint32_t));
	return t;
}

void
tab_free(struct tab *t)
{
	if (t == NULL)
		return;
	free(t->fp);
	free(t->code);
	free(t->cnt);
	free(t->key);
	free(t->fp_pub);
	free(t->code_pub);
	free(t->counted);
	free(t->scratch);
	free(t);
}

/* Bits a peer holds a slot in: what a lookup reads. */
unsigned
tab_slot_bits(const struct tab *t)
{
	return t->fbits + t->q.exp_bits + t->q.mant_bits;
}

void
tab_add(struct tab *t, const struct key *keys, uint32_t id)
{
	const struct key *kk = &keys[id];
	uint64_t s[DLEFT_D * DLEFT_B];
	unsigned n = tab_slots(t, &kk->k, s);
	uint32_t fp = t->kind == T_CELLS ? 1 : tab_fp(t, &kk->k);
	uint32_t code = dl_of(&t->q, t->base, kk->until);

	if (t->kind == T_CELLS) {
		for (unsigned i = 0; i < n; i++) {
			t->cnt[s[i]]++;
			t->fp[s[i]] = 1;
			if (code > t->code[s[i]])
				t->code[s[i]] = code;
		}
		t->counted[id] = true;
		return;
	}
	if (t->kind == T_DLEFT) {
		uint64_t best = UINT64_MAX;
		unsigned best_load = DLEFT_B + 1;
		for (unsigned i = 0; i < n; i++)
			if (t->fp[s[i]] == fp &&
			    t->cnt[s[i]] < DLEFT_COUNT_MAX) {
				t->cnt[s[i]]++;
				if (code > t->code[s[i]])
					t->code[s[i]] = code;
				t->counted[id] = true;
				return;
			}
		for (unsigned d = 0; d < DLEFT_D; d++) {
			unsigned load = 0;
			uint64_t free_slot = UINT64_MAX;
			for (unsigned c = 0; c < DLEFT_B; c++) {
				uint64_t x = s[d * DLEFT_B + c];
				if (t->fp[x] != 0)
					load++;
				else if (free_slot == UINT64_MAX)
					free_slot = x;
			}
			if (load < best_load) {
				best_load = load;
				best = free_slot;
			}
		}
		if (best == UINT64_MAX) {
			t->overflows++;
			return;
		}
		t->fp[best] = fp;
		t->code[best] = code;
		t->cnt[best] = 1;
		t->counted[id] = true;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (t->fp[s[i]] == 0) {
			t->fp[s[i]] = fp;
			t->code[s[i]] = code;
			t->key[s[i]] = id;
			t->counted[id] = true;
			return;
		}
	/* both buckets full: move a resident to its other bucket, and so on */
	uint64_t bucket = s[(rnd() & 1) * CUCKOO_B] / CUCKOO_B;
	uint32_t hfp = fp, hcode = code, hkey = id;
	t->counted[id] = true;
	for (int kick = 0; kick < CUCKOO_KICKS; kick++) {
		uint64_t x = bucket * CUCKOO_B + rnd() % CUCKOO_B;
		uint32_t f = t->fp[x], cd = t->code[x], ky = t->key[x];
		t->fp[x] = hfp;
		t->code[x] = hcode;
		t->key[x] = hkey;
		hfp = f;
		hcode = cd;
		hkey = ky;
		bucket = cuckoo_alt(t, bucket, hfp);
		for (unsigned c = 0; c < CUCKOO_B; c++) {
			uint64_t y = bucket * CUCKOO_B + c;
			if (t->fp[y] == 0) {
				t->fp[y] = hfp;
				t->code[y] = hcode;
				t->key[y] = hkey;
				return;
			}
		}
	}
	t->overflows++;
	t->counted[hkey] = false;
}

/* The key leaves the table (an eviction, or its deadline passed). The
 * slot is found as a node would find it: by fingerprint, preferring
 * the one whose deadline is the key's. */
void
tab_remove(struct tab *t, const struct key *keys, uint32_t id)
{
	const struct key *kk = &keys[id];
	uint64_t s[DLEFT_D * DLEFT_B], hit = UINT64_MAX;
	unsigned n = tab_slots(t, &kk->k, s);
	uint32_t fp = t->kind == T_CELLS ? 1 : tab_fp(t, &kk->k);
	uint32_t code = dl_of(&t->q, t->base, kk->until);

	if (!t->counted[id])
		return;
	t->counted[id] = false;
	if (t->kind == T_CELLS) {
		for (unsigned i = 0; i < n; i++)
			if (--t->cnt[s[i]] == 0)
				t->fp[s[i]] = t->code[s[i]] = 0;
		return;
	}
	for (unsigned i = 0; i < n; i++)
		if (t->fp[s[i]] == fp && (hit == UINT64_MAX ||
		    t->code[s[i]] == code))
			hit = s[i];
	if (hit == UINT64_MAX)
		return;
	if (t->kind == T_DLEFT) {
		if (--t->cnt[hit] == 0)
			t->fp[hit] = t->code[hit] = 0;
		return;
	}
	if (t->key[hit] != id) {
		/* a twin's slot went: the twin takes over the key's own */
		for (unsigned i = 0; i < n; i++)
			if (t->fp[s[i]] == fp && t->key[s[i]] == id)
				t->key[s[i]] = t->key[hit];
	}
	t->fp[hit] = t->code[hit] = 0;
}

bool
tab_claims(const struct tab *t, const struct sumkey *k, uint64_t now)
{
	uint64_t s[DLEFT_D * DLEFT_B];
	unsigned n = tab_slots(t, k, s);
	uint32_t fp = t->kind == T_CELLS ? 1 : tab_fp(t, k);

	if (t->kind == T_CELLS) {
		for (unsigned i = 0; i < n; i++)
			if (!dl_live(&t->q, t->code_pub[s[i]], t->base, now))
				return false;
		return true;
	}
	for (unsigned i = 0; i < n; i++)
		if (t->fp_pub[s[i]] == fp &&
		    dl_live(&t->q, t->code_pub[s[i]], t->base, now))
			return true;
	return false;
}

/* The base moves on, on both sides; the node then gives the exact
 * deadline to keys that have come within range. */
void
tab_shift(struct tab *t, const struct key *keys, size_t nkeys, uint64_t now)
{
	uint32_t top = dl_top(&t->q);

	if (now < t->base + t->q.shift * t->q.unit_ms)
		return;
	while (now >= t->base + t->q.shift * t->q.unit_ms) {
		t->base += t->q.shift * t->q.unit_ms;
		for (uint64_t i = 0; i < t->nslots; i++) {
			t->code[i] = dl_shift(&t->q, t->code[i], 1);
			t->code_pub[i] = dl_shift(&t->q, t->code_pub[i], 1);
		}
	}
	if (t->kind == T_CUCKOO) {
		for (uint64_t i = 0; i < t->nslots; i++)
			if (t->fp[i] != 0 && t->code[i] == top)
				t->code[i] = dl_of(&t->q, t->base,
				    keys[t->key[i]].until);
		return;
	}
	/* cells and d-left slots hold several keys: a top code comes down
	 * to the latest deadline of the keys counted there */
	memset(t->scratch, 0, t->nslots * sizeof(uint32_t));
	for (size_t id = 0; id < nkeys; id++) {
		if (!t->counted[id])
			continue;
		uint64_t s[DLEFT_D * DLEFT_B];
		unsigned n = tab_slots(t, &keys[id].k, s);
		uint32_t fp = t->kind == T_CELLS ? 1 : tab_fp(t, &keys[id].k);
		uint32_t code = dl_of(&t->q, t->base, keys[id].until);
		for (unsigned i = 0; i < n; i++)
			if (t->fp[s[i]] == fp && code > t->scratch[s[i]])
				t->scratch[s[i]] = code;
	}
	for (uint64_t i = 0; i < t->nslots; i++)
		if (t->fp[i] != 0 && t->code[i] == top)
			t->code[i] = t->scratch[i];
}

/* A publication: the slots a peer would see differently, or the whole
 * table, whichever is smaller; the peer then holds the node's table. */
size_t
tab_publish(struct tab *t, uint64_t now, size_t *full_len)
{
	uint64_t *set = malloc(t->nslots * sizeof(*set));
	uint64_t *cleared = malloc(t->nslots * sizeof(*cleared));
	uint64_t *live = malloc(t->nslots * sizeof(*live));
	size_t nset = 0, ncleared = 0, nlive = 0;
	unsigned bits = tab_slot_bits(t);

	for (uint64_t i = 0; i < t->nslots; i++) {
		bool here = t->fp[i] != 0 &&
		    dl_live(&t->q, t->code[i], t->base, now);
		bool there = t->fp_pub[i] != 0 &&
		    dl_live(&t->q, t->code_pub[i], t->base, now);
		if (here)
			live[nlive++] = i;
		if (here && (!there || t->fp_pub[i] != t->fp[i] ||
		    t->code_pub[i] != t->code[i]))
			set[nset++] = i;
		else if (!here && there)
			cleared[ncleared++] = i;
	}
	size_t delta = 3 + rice_size(set, nset, rice_best_param(set, nset)) +
	    rice_size(cleared, ncleared, rice_best_param(cleared, ncleared)) +
	    (nset * bits + 7) / 8;
	size_t listed = 3 + rice_size(live, nlive, rice_best_param(live,
	    nlive)) + (nlive * bits + 7) / 8;
	size_t raw = 3 + (t->nslots * bits + 7) / 8;
	*full_len = listed < raw ? listed : raw;
	memcpy(t->fp_pub, t->fp, t->nslots * sizeof(uint32_t));
	memcpy(t->code_pub, t->code, t->nslots * sizeof(uint32_t));
	free(set);
	free(cleared);
	free(live);
	return delta < *full_len ? delta : *full_len;
}

