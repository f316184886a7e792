/*
 * deadline-eval: the ways a summary can carry its claims' deadlines, each
 * measured against the plain counting filter on one stream of keys
 * (issue 35). The stream: N keys stored at times uniform over an hour,
 * each fresh for a lifetime log-uniform between 1 s and a day, a third
 * of them evicted before their expiry. A publication every 1 % of N
 * changes. Candidates:
 *
 *   plain, claims until evicted   the paper's summary: bits, no deadline
 *   plain, claims while fresh     bits; a lapse is a removal, published
 *   buckets, factor 2 / 4         a plain filter per deadline bucket: a
 *                                 key goes to the bucket of its deadline
 *                                 rounded down to a power of two of
 *                                 seconds, a half (factor 2) or a quarter
 *                                 (4) of its lifetime or less; a peer drops
 *                                 a bucket when its time comes. Each bucket
 *                                 is sized for the keys it will get (an
 *                                 oracle: the candidate's best case)
 *   (issue 49: a peer's memory)
 *   timed cells, 8-bit deadlines  issue 35's timed cells (each cell the
 *                                 latest deadline of its keys), their
 *                                 deadlines deadline.h codes of 8 bits
 *   d-left                        a d-left counting filter: 4 sub-tables
 *                                 of buckets of 8 cells at 75 % load, each
 *                                 cell a fingerprint (remainder), a count
 *                                 and the latest deadline of its keys
 *   cuckoo                        a cuckoo table at 95 % load, buckets of
 *                                 4, each slot one key's fingerprint and
 *                                 its own deadline, in three forms
 *   cuckoo.c                      the form chosen, as summary/cuckoo.c
 *                                 builds it, with real messages
 * The slot tables' code (small cells, d-left, the cuckoo models) is in
 * deadline-tabs.c; this file makes the stream, runs every candidate on
 * it and measures.
 * The deadlines of the last four are deadline.h codes from a base that
 * both sides shift, with no message; a code beyond the range is sent
 * exact once it comes within it.
 *
 * Each is measured at every publication in the first two hours (while
 * keys come) and averaged: false positives of keys never stored; stale
 * claims (stored keys expired or evicted, still claimed: a peer would ask
 * in vain); lost claims (fresh keys not claimed: a remote hit missed);
 * publications and wire bytes per stored key over the whole run; a full
 * summary's bytes per stored key; the bytes a peer holds; and ns per add,
 * lookup (of keys never stored) and removal. The encodings are
 * summary/'s own (Rice lists, the table's contents); a bucket's list
 * pays a 3-byte header. Issue 35's timed cells, 16 bits of deadline a
 * cell, were measured here until the table replaced them (their figures
 * are in deploy/README.md).
 *
 *   deadline-eval [N]   (100000)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbf.h"
#include "cuckoo.h"
#include "deadline-eval.h"
#include "deadline.h"
#include "psum.h"
#include "sumkey.h"

#define HOUR_MS 3600000ull
#define DAY_MS (24 * HOUR_MS)
#define PROBES 50000
#define NBUCKETS 4096

enum ev_type { EV_STORE, EV_EVICT, EV_LAPSE };
struct event {
	uint64_t at;
	uint32_t key;
	uint8_t type;
};

static uint64_t rng = 88172645463325252ull;

uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double
unit(void)
{
	return (double)(rnd() >> 11) / 9007199254740992.0;
}

static int
by_time(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return (int)x->type - (int)y->type;
}

static void
make_key(uint64_t id, struct sumkey *k)
{
	memset(k, 0, sizeof(*k));
	for (int i = 0; i < 16; i++) {
		id = id * 6364136223846793005ull + 1442695040888963407ull;
		k->bytes[i] = (uint8_t)(id >> 56);
	}
}

/* ---- the bucket candidate ---- */

struct bucket {
	uint64_t until;    /* the deadline its keys are claimed to */
	uint64_t expect;   /* keys it will get (the oracle) */
	struct cbf *f;
};

struct buckets {
	unsigned factor_log;   /* granularity: lifetime / 2^factor_log */
	struct bucket b[NBUCKETS];
	unsigned n;
};

/* The bucket deadline of a key: its deadline rounded down to the power
 * of two of seconds at most its lifetime / 2^factor_log. */
static uint64_t
bucket_until(const struct buckets *bs, uint64_t stored, uint64_t until)
{
	uint64_t life_s = (until - stored) / 1000, g = 1;

	while (g * 2 <= (life_s >> bs->factor_log))
		g *= 2;
	return until / (g * 1000) * (g * 1000);
}

static struct bucket *
bucket_of(struct buckets *bs, uint64_t until, bool make)
{
	for (unsigned i = 0; i < bs->n; i++)
		if (bs->b[i].until == until)
			return &bs->b[i];
	if (!make || bs->n == NBUCKETS) {
		fprintf(stderr, "deadline-eval: too many buckets\n");
		exit(1);
	}
	bs->b[bs->n] = (struct bucket){.until = until};
	return &bs->b[bs->n++];
}

enum cand {
	C_EVICTED, C_FRESH, C_BUCKETS2, C_BUCKETS4,
	C_QCELLS, C_DLEFT, C_CUCKOO_A, C_CUCKOO_B, C_CUCKOO_D, C_BUILT,
	C_N
};
static const char *const cand_names[C_N] = {
	"plain, claims until evicted", "plain, claims while fresh",
	"buckets, factor 2", "buckets, factor 4",
	"timed cells, 8-bit deadlines", "d-left, 18+14 bits",
	"cuckoo, 18+14 bits", "cuckoo, 18+12 bits, 1/4 s",
	"cuckoo, 16+14 bits", "cuckoo.c: 18+12 bits, 1/2 s",
};

/* The slot tables' candidates (deadline-tabs.c): fingerprint bits and
 * the deadline's form (exponent and mantissa bits, unit, shift). */
static struct tab *
tab_for(enum cand c, size_t nkeys)
{
	static const struct {
		enum tab_kind kind;
		unsigned fbits;
		struct dl_form q;
	} params[C_N] = {
		/* 1 s units, exact to 64 s, 67 min of range */
		[C_QCELLS] = {T_CELLS, 0, {3, 5, 1000, 256}},
		/* 250 ms units, exact to 1,024 s, 18.2 h of range */
		[C_DLEFT] = {T_DLEFT, 18, {3, 11, 250, 4096}},
		[C_CUCKOO_A] = {T_CUCKOO, 18, {3, 11, 250, 4096}},
		/* exact to 256 s, 4.5 h of range */
		[C_CUCKOO_B] = {T_CUCKOO, 18, {3, 9, 250, 4096}},
		[C_CUCKOO_D] = {T_CUCKOO, 16, {3, 11, 250, 4096}},
	};

	return tab_new(params[c].kind, params[c].fbits, params[c].q, nkeys);
}

/* ---- summary/cuckoo.c, as the publisher will run it ---- */

/*
 * The chosen form (18-bit fingerprints, DL_FORM's half-second codes),
 * built: the node's table and a peer's copy, taking real messages. What
 * the node's claims table would tell it, the eval keeps per key: whether
 * the key is in the table, and whether its code was beyond the range at
 * the last base (then it is retimed at each shift).
 */
struct built {
	struct ck_table *t;
	struct ck_copy *c;
	bool *counted, *beyond;
	size_t full_len;
};

static struct built *
built_new(size_t nkeys)
{
	struct built *b = calloc(1, sizeof(*b));

	b->t = ck_new(ck_buckets_for(nkeys), 0);
	b->c = ck_copy_new(b->t->nb);
	b->counted = calloc(nkeys, sizeof(bool));
	b->beyond = calloc(nkeys, sizeof(bool));
	return b;
}

static void
built_free(struct built *b)
{
	if (b == NULL)
		return;
	ck_free(&b->t);
	ck_copy_free(&b->c);
	free(b->counted);
	free(b->beyond);
	free(b);
}

static void
built_shift(struct built *b, const struct key *keys, size_t nkeys,
    uint64_t now)
{
	if (ck_shift(b->t, now) == 0)
		return;
	for (size_t i = 0; i < nkeys; i++)
		if (b->counted[i] && b->beyond[i]) {
			ck_retime(b->t, &keys[i].k, keys[i].until,
			    keys[i].until);
			b->beyond[i] = ck_beyond(b->t, keys[i].until);
		}
}

static void
built_add(struct built *b, const struct key *keys, uint32_t id)
{
	if (ck_add(b->t, &keys[id].k, keys[id].until) < 0)
		return;
	b->counted[id] = true;
	b->beyond[id] = ck_beyond(b->t, keys[id].until);
}

static void
built_remove(struct built *b, const struct key *keys, uint32_t id)
{
	if (!b->counted[id])
		return;
	b->counted[id] = false;
	ck_remove(b->t, &keys[id].k, keys[id].until);
}

static size_t
built_publish(struct built *b, uint64_t now)
{
	struct sum_buf out = {0};
	uint64_t sent, sum, slots = b->t->nb * CK_BUCKET, nlive = 0;
	bool full;

	ck_publish(b->t, now, &out, &full, &sent, &sum);
	int rc = full ? ck_copy_load(b->c, sent, out.p, out.len, sum) :
	    ck_copy_apply(b->c, sent, out.p, out.len, sum);
	if (rc != 0) {
		fprintf(stderr, "deadline-eval: a peer refused cuckoo.c's "
		    "message (%d)\n", rc);
		exit(1);
	}
	/* what a full one would take now: its live slots' list and
	 * contents */
	uint64_t *live = malloc(slots * sizeof(*live));
	for (uint64_t i = 0; i < slots; i++)
		if (b->t->slot[i] != 0 && dl_live(&DL_FORM, b->t->slot[i] &
		    ((1u << DL_BITS) - 1), b->t->origin_ms + b->t->shifts *
		    CK_SHIFT_MS, now))
			live[nlive++] = i;
	b->full_len = rice_size(live, nlive, rice_best_param(live, nlive)) +
	    (nlive * CK_SLOT_BITS + 7) / 8;
	free(live);
	free(out.p);
	return out.len;
}

/* ---- one run ---- */


struct result {
	double fp, stale, lost;
	uint64_t bytes, pubs;
	double peer_bytes, full_per_key;
	unsigned samples;
	uint64_t overflows;
	double ns_add, ns_lookup, ns_remove;
};

static bool
is_tab(enum cand c)
{
	return c >= C_QCELLS && c < C_BUILT;
}

/* One candidate's state in a run: its filter, buckets or table. */
struct state {
	enum cand c;
	struct cbf *f;
	struct buckets *bs;
	struct tab *t;
	struct built *b;
	size_t tab_full;
};

static bool
claimed(const struct state *st, const struct sumkey *k, uint64_t now)
{
	enum cand c = st->c;

	if (is_tab(c))
		return tab_claims(st->t, k, now);
	if (c == C_BUILT)
		return ck_copy_contains(st->b->c, k, now - st->b->t->origin_ms);
	if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		const struct buckets *bs = st->bs;
		for (unsigned i = 0; i < bs->n; i++)
			if (bs->b[i].until > now && bs->b[i].f != NULL &&
			    cbf_contains(bs->b[i].f, k))
				return true;
		return false;
	}
	return cbf_contains(st->f, k);
}

/* The size of a full summary now, as the peers hold it. */
static size_t
full_size(const struct state *st)
{
	struct sum_buf out = {0};
	size_t len = 0;

	if (is_tab(st->c))
		return st->tab_full;
	if (st->c == C_BUILT)
		return st->b->full_len;
	if (st->c == C_BUCKETS2 || st->c == C_BUCKETS4) {
		for (unsigned i = 0; i < st->bs->n; i++) {
			struct cbf *g = st->bs->b[i].f;
			if (g == NULL || g->ones == 0)
				continue;
			sum_encode_full(g->bits, g->m, &out);
			len += 3;
		}
	} else {
		sum_encode_full(st->f->bits, st->f->m, &out);
	}
	len += out.len;
	free(out.p);
	return len;
}

static void
measure(const struct state *st, const struct key *keys, size_t n,
    const uint8_t *in, uint64_t now, struct result *r)
{
	uint64_t fp = 0, stale = 0, nstale = 0, lost = 0, nfresh = 0;
	uint64_t stored = 0;
	enum cand c = st->c;

	for (uint64_t i = 0; i < PROBES; i++) {
		struct sumkey k;
		make_key(0x8000000000000000ull + rnd() % (1ull << 40), &k);
		fp += claimed(st, &k, now);
	}
	for (size_t i = 0; i < n; i += 7) {
		if (keys[i].stored > now)
			continue;
		bool gone = !in[i] || keys[i].until <= now;
		bool cl = claimed(st, &keys[i].k, now);
		if (gone) {
			nstale++;
			stale += cl;
		} else {
			nfresh++;
			lost += !cl;
		}
	}
	r->fp += (double)fp / PROBES;
	r->stale += nstale ? (double)stale / (double)nstale : 0;
	r->lost += nfresh ? (double)lost / (double)nfresh : 0;
	for (size_t i = 0; i < n; i++)
		stored += in[i];
	r->full_per_key += (double)full_size(st) /
	    (double)(stored ? stored : 1);
	double held = 0;
	if (is_tab(c))
		held = (double)st->t->nslots * tab_slot_bits(st->t) / 8;
	else if (c == C_BUILT)
		held = (double)ck_copy_bytes(st->b->c);
	else if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		for (unsigned i = 0; i < st->bs->n; i++)
			if (st->bs->b[i].until > now && st->bs->b[i].f != NULL)
				held += (double)st->bs->b[i].f->m / 8 + 16;
	} else {
		held = (double)st->f->m / 8;
	}
	r->peer_bytes += held;
	r->samples++;
}

static size_t
publish(struct state *st, uint64_t now)
{
	struct sum_buf out = {0};
	bool full;
	uint64_t sum;
	size_t len = 0;

	if (is_tab(st->c)) {
		len = tab_publish(st->t, now, &st->tab_full);
	} else if (st->c == C_BUILT) {
		len = built_publish(st->b, now);
	} else if (st->c == C_BUCKETS2 || st->c == C_BUCKETS4) {
		for (unsigned i = 0; i < st->bs->n; i++) {
			struct cbf *g = st->bs->b[i].f;
			if (g == NULL || g->changes == 0)
				continue;
			struct sum_buf one = {0};
			sum_publish(g, &one, &full, &sum);
			len += one.len + 3;
			free(one.p);
		}
	} else {
		sum_publish(st->f, &out, &full, &sum);
		len = out.len;
	}
	free(out.p);
	return len;
}

static void
run(enum cand c, const struct key *keys, size_t n, const struct event *ev,
    size_t nev, struct result *r)
{
	struct state st = {.c = c};
	uint8_t *in = calloc(n, 1);
	uint64_t pending = 0, every = n / 100;

	memset(r, 0, sizeof(*r));
	st.bs = calloc(1, sizeof(*st.bs));
	st.t = is_tab(c) ? tab_for(c, n) : NULL;
	st.b = c == C_BUILT ? built_new(n) : NULL;
	if (c == C_EVICTED || c == C_FRESH)
		st.f = cbf_new(SUM_XXH3, cbf_size_for(n, BITS), K);
	if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		struct buckets *bs = st.bs;
		bs->factor_log = c == C_BUCKETS2 ? 1 : 2;
		/* the oracle: every bucket's keys, to size it for them */
		for (size_t i = 0; i < n; i++)
			bucket_of(bs, bucket_until(bs, keys[i].stored,
			    keys[i].until), true)->expect++;
		for (unsigned i = 0; i < bs->n; i++)
			bs->b[i].f = cbf_new(SUM_XXH3, cbf_size_for(
			    bs->b[i].expect, BITS), K);
	}
	struct cbf *f = st.f;
	struct buckets *bs = st.bs;
	struct tab *t = st.t;
	for (size_t e = 0; e < nev; e++) {
		const struct key *kk = &keys[ev[e].key];
		uint64_t now = ev[e].at;
		bool change = false;
		if (t != NULL)
			tab_shift(t, keys, n, now);
		if (st.b != NULL)
			built_shift(st.b, keys, n, now);
		switch (ev[e].type) {
		case EV_STORE:
			in[ev[e].key] = 1;
			change = true;
			if (t != NULL)
				tab_add(t, keys, ev[e].key);
			else if (st.b != NULL)
				built_add(st.b, keys, ev[e].key);
			else if (c == C_BUCKETS2 || c == C_BUCKETS4)
				cbf_add(bucket_of(bs, bucket_until(bs,
				    kk->stored, kk->until), false)->f, &kk->k);
			else
				cbf_add(f, &kk->k);
			break;
		case EV_EVICT:
			in[ev[e].key] = 0;
			/* evicted after its claim ended: nothing to say but
			 * for the paper's summary */
			change = c == C_EVICTED || kk->until > now;
			if (t != NULL)
				tab_remove(t, keys, ev[e].key);
			else if (st.b != NULL)
				built_remove(st.b, keys, ev[e].key);
			else if (c == C_BUCKETS2 || c == C_BUCKETS4)
				cbf_remove(bucket_of(bs, bucket_until(bs,
				    kk->stored, kk->until), false)->f, &kk->k);
			else if (c == C_EVICTED || kk->until > now)
				cbf_remove(f, &kk->k);
			break;
		case EV_LAPSE:
			if (!in[ev[e].key])
				break;
			if (c == C_FRESH) {
				cbf_remove(f, &kk->k);
				change = true;
			} else if (t != NULL) {
				tab_remove(t, keys, ev[e].key);
			} else if (st.b != NULL) {
				built_remove(st.b, keys, ev[e].key);
			}
			break;
		}
		if (!change || ++pending < every)
			continue;
		pending = 0;
		r->bytes += publish(&st, now);
		r->pubs++;
		if (now <= 2 * HOUR_MS)
			measure(&st, keys, n, in, now, r);
	}
	if (t != NULL)
		r->overflows = t->overflows;
	if (st.b != NULL)
		r->overflows = st.b->t->full_adds;
	tab_free(t);
	built_free(st.b);
	cbf_free(&f);
	for (unsigned i = 0; i < bs->n; i++)
		cbf_free(&bs->b[i].f);
	free(bs);
	free(in);
}

static double
clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/*
 * What a key costs: ns to add each of the n keys to an empty filter or
 * table, to look up n keys never stored in the peer's copy, and to take
 * the n keys out again. The bucket candidates are not timed (a lookup
 * walks every live bucket's filter).
 */
static void
time_ops(enum cand c, const struct key *keys, size_t n, struct result *r)
{
	struct sumkey probe;
	volatile unsigned sink = 0;
	double t0;

	if (c == C_BUCKETS2 || c == C_BUCKETS4)
		return;
	if (c == C_BUILT) {
		struct built *b = built_new(n);
		t0 = clock_ns();
		for (size_t i = 0; i < n; i++)
			built_add(b, keys, (uint32_t)i);
		r->ns_add = (clock_ns() - t0) / (double)n;
		built_publish(b, 0);
		t0 = clock_ns();
		for (size_t i = 0; i < n; i++) {
			make_key(0x4000000000000000ull + i, &probe);
			sink += ck_copy_contains(b->c, &probe, 0);
		}
		r->ns_lookup = (clock_ns() - t0) / (double)n;
		t0 = clock_ns();
		for (size_t i = 0; i < n; i++)
			built_remove(b, keys, (uint32_t)i);
		r->ns_remove = (clock_ns() - t0) / (double)n;
		built_free(b);
		return;
	}
	if (is_tab(c)) {
		struct tab *t = tab_for(c, n);
		t0 = clock_ns();
		for (size_t i = 0; i < n; i++)
			tab_add(t, keys, (uint32_t)i);
		r->ns_add = (clock_ns() - t0) / (double)n;
		memcpy(t->fp_pub, t->fp, t->nslots * sizeof(uint32_t));
		memcpy(t->code_pub, t->code, t->nslots * sizeof(uint32_t));
		t0 = clock_ns();
		for (size_t i = 0; i < n; i++) {
			make_key(0x4000000000000000ull + i, &probe);
			sink += tab_claims(t, &probe, 0);
		}
		r->ns_lookup = (clock_ns() - t0) / (double)n;
		t0 = clock_ns();
		for (size_t i = 0; i < n; i++)
			tab_remove(t, keys, (uint32_t)i);
		r->ns_remove = (clock_ns() - t0) / (double)n;
		tab_free(t);
		return;
	}
	struct cbf *f = cbf_new(SUM_XXH3, cbf_size_for(n, BITS), K);
	t0 = clock_ns();
	for (size_t i = 0; i < n; i++)
		cbf_add(f, &keys[i].k);
	r->ns_add = (clock_ns() - t0) / (double)n;
	t0 = clock_ns();
	for (size_t i = 0; i < n; i++) {
		make_key(0x4000000000000000ull + i, &probe);
		sink += claimed(&(struct state){.c = c, .f = f}, &probe, 0);
	}
	r->ns_lookup = (clock_ns() - t0) / (double)n;
	t0 = clock_ns();
	for (size_t i = 0; i < n; i++)
		cbf_remove(f, &keys[i].k);
	r->ns_remove = (clock_ns() - t0) / (double)n;
	cbf_free(&f);
	(void)sink; /* read: the lookups' results were wanted */
}

int
main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
	struct key *keys = calloc(n, sizeof(*keys));
	struct event *ev = calloc(3 * n, sizeof(*ev));
	size_t nev = 0;

	if (n < 1000 || keys == NULL || ev == NULL) {
		fprintf(stderr, "usage: deadline-eval [N, 1000 or more]\n");
		return 2;
	}
	for (size_t i = 0; i < n; i++) {
		struct key *k = &keys[i];
		make_key(i, &k->k);
		k->stored = (uint64_t)(unit() * HOUR_MS);
		/* log-uniform lifetime, 1 s to a day */
		k->until = k->stored + (uint64_t)(1000.0 * exp(unit() *
		    log((double)DAY_MS / 1000)));
		ev[nev++] = (struct event){k->stored, (uint32_t)i, EV_STORE};
		ev[nev++] = (struct event){k->until, (uint32_t)i, EV_LAPSE};
		if (rnd() % 3 == 0) {
			k->evicted = k->stored + 1 + (uint64_t)(unit() *
			    (double)(k->until - k->stored));
			ev[nev++] = (struct event){k->evicted, (uint32_t)i,
			    EV_EVICT};
		}
	}
	qsort(ev, nev, sizeof(*ev), by_time);

	printf("deadline-eval: %zu keys stored over an hour, lifetimes "
	    "log-uniform 1 s to 1 day, a third evicted early;\n%d bits per "
	    "key, k = %d, a publication every 1 %% of the keys' changes; "
	    "measured at each publication, averaged\n\n", n, BITS, K);
	printf("%-30s %9s %8s %8s %9s %9s %5s %9s %8s %6s %6s %6s %5s\n",
	    "candidate", "false pos", "stale", "lost", "sent/key", "full/key",
	    "pubs", "peer holds", "held/key", "ns add", "lookup", "remove",
	    "lost");
	for (int c = 0; c < C_N; c++) {
		struct result r;
		run((enum cand)c, keys, n, ev, nev, &r);
		time_ops((enum cand)c, keys, n, &r);
		double s = r.samples ? r.samples : 1;
		printf("%-30s %8.4f%% %7.3f%% %7.3f%% %9.2f %9.2f %5llu %6.0f KB "
		    "%8.2f %6.0f %6.0f %6.0f %5llu\n",
		    cand_names[c], 100 * r.fp / s, 100 * r.stale / s,
		    100 * r.lost / s, (double)r.bytes / (double)n,
		    r.full_per_key / s, (unsigned long long)r.pubs,
		    r.peer_bytes / s / 1024, r.peer_bytes / s / (double)n,
		    r.ns_add, r.ns_lookup, r.ns_remove,
		    (unsigned long long)r.overflows);
	}
	free(keys);
	free(ev);
	return 0;
}
