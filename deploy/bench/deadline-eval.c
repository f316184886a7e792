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
 *   timed cells                   summary/'s timed filter (cbf.h): each
 *                                 cell keeps its keys' latest deadline in
 *                                 16 bits, rounded down to a second
 *   buckets, factor 2 / 4         a plain filter per deadline bucket: a
 *                                 key goes to the bucket of its deadline
 *                                 rounded down to a power of two of
 *                                 seconds, a half (factor 2) or a quarter
 *                                 (4) of its lifetime or less; a peer drops
 *                                 a bucket when its time comes. Each bucket
 *                                 is sized for the keys it will get (an
 *                                 oracle: the candidate's best case)
 *
 * Each is measured at every publication in the first two hours (while
 * keys come) and averaged: false positives of keys never stored; stale
 * claims (stored keys expired or evicted, still claimed: a peer would ask
 * in vain); lost claims (fresh keys not claimed: a remote hit missed);
 * publications and wire bytes per stored key over the whole run; the
 * bytes a peer holds. The encodings are summary/'s own (Rice lists, the timed
 * cell lists); a bucket's list pays a 3-byte header.
 *
 *   deadline-eval [N]   (100000)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "psum.h"
#include "sumkey.h"

#define BITS 16
#define K 4
#define HOUR_MS 3600000ull
#define DAY_MS (24 * HOUR_MS)
#define PROBES 20000
#define NBUCKETS 4096

struct key {
	struct sumkey k;
	uint64_t stored, until, evicted;   /* ms; evicted: 0 = never */
};

enum ev_type { EV_STORE, EV_EVICT, EV_LAPSE };
struct event {
	uint64_t at;
	uint32_t key;
	uint8_t type;
};

static uint64_t rng = 88172645463325252ull;

static uint64_t
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

/* ---- one run ---- */

enum cand { C_EVICTED, C_FRESH, C_TIMED, C_BUCKETS2, C_BUCKETS4, C_N };
static const char *const cand_names[C_N] = {
	"plain, claims until evicted", "plain, claims while fresh",
	"timed cells", "buckets, factor 2", "buckets, factor 4",
};

struct result {
	double fp, stale, lost;
	uint64_t bytes, pubs;
	double peer_bytes;
	unsigned samples;
};

static bool
claimed(enum cand c, struct cbf *f, struct buckets *bs,
    const struct sumkey *k, uint64_t now)
{
	if (c == C_TIMED) {
		uint64_t pos[CBF_MAX_K];
		sumkey_positions(f->scheme, k, f->k, f->m, pos);
		for (unsigned i = 0; i < f->k; i++)
			if ((uint64_t)f->until_pub[pos[i]] * 1000 + f->base_ms <=
			    now)
				return false;
		return true;
	}
	if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		for (unsigned i = 0; i < bs->n; i++)
			if (bs->b[i].until > now && bs->b[i].f != NULL &&
			    cbf_contains(bs->b[i].f, k))
				return true;
		return false;
	}
	return cbf_contains(f, k);
}

static void
measure(enum cand c, struct cbf *f, struct buckets *bs,
    const struct key *keys, size_t n, const uint8_t *in, uint64_t now,
    struct result *r)
{
	uint64_t fp = 0, stale = 0, nstale = 0, lost = 0, nfresh = 0;

	for (uint64_t i = 0; i < PROBES; i++) {
		struct sumkey k;
		make_key(0x8000000000000000ull + rnd() % (1ull << 40), &k);
		fp += claimed(c, f, bs, &k, now);
	}
	for (size_t i = 0; i < n; i += 7) {
		if (keys[i].stored > now)
			continue;
		bool gone = !in[i] || keys[i].until <= now;
		bool cl = claimed(c, f, bs, &keys[i].k, now);
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
	double held = 0;
	if (c == C_TIMED)
		held = 2.0 * (double)f->m;
	else if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		for (unsigned i = 0; i < bs->n; i++)
			if (bs->b[i].until > now && bs->b[i].f != NULL)
				held += (double)bs->b[i].f->m / 8 + 16;
	} else {
		held = (double)f->m / 8;
	}
	r->peer_bytes += held;
	r->samples++;
}

static size_t
publish(enum cand c, struct cbf *f, struct buckets *bs, uint64_t now)
{
	struct sum_buf out = {0};
	bool full;
	uint64_t sum;
	size_t len = 0;

	if (c == C_TIMED) {
		sum_publish_timed(f, now, &out, &full, &sum);
		len = out.len;
	} else if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		for (unsigned i = 0; i < bs->n; i++) {
			struct cbf *g = bs->b[i].f;
			if (g == NULL || g->changes == 0)
				continue;
			struct sum_buf one = {0};
			sum_publish(g, &one, &full, &sum);
			len += one.len + 3;
			free(one.p);
		}
	} else {
		sum_publish(f, &out, &full, &sum);
		len = out.len;
	}
	free(out.p);
	return len;
}

static void
run(enum cand c, const struct key *keys, size_t n, const struct event *ev,
    size_t nev, struct result *r)
{
	struct cbf *f = NULL;
	struct buckets *bs = calloc(1, sizeof(*bs));
	uint8_t *in = calloc(n, 1);
	uint64_t pending = 0, every = n / 100;

	memset(r, 0, sizeof(*r));
	if (c == C_TIMED)
		f = cbf_new_timed(SUM_XXH3, cbf_size_for(n, BITS), K, 1, 0);
	else if (c == C_EVICTED || c == C_FRESH)
		f = cbf_new(SUM_XXH3, cbf_size_for(n, BITS), K, 1);
	if (c == C_BUCKETS2 || c == C_BUCKETS4) {
		bs->factor_log = c == C_BUCKETS2 ? 1 : 2;
		/* the oracle: every bucket's keys, to size it for them */
		for (size_t i = 0; i < n; i++)
			bucket_of(bs, bucket_until(bs, keys[i].stored,
			    keys[i].until), true)->expect++;
		for (unsigned i = 0; i < bs->n; i++)
			bs->b[i].f = cbf_new(SUM_XXH3, cbf_size_for(
			    bs->b[i].expect, BITS), K, 1);
	}
	for (size_t e = 0; e < nev; e++) {
		const struct key *kk = &keys[ev[e].key];
		uint64_t now = ev[e].at;
		bool change = false;
		switch (ev[e].type) {
		case EV_STORE:
			in[ev[e].key] = 1;
			change = true;
			if (c == C_TIMED)
				cbf_add_until(f, &kk->k, kk->until);
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
			if (c == C_TIMED)
				cbf_remove(f, &kk->k);
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
			} else if (c == C_TIMED) {
				cbf_lapse(f, &kk->k);
			}
			break;
		}
		if (!change || ++pending < every)
			continue;
		pending = 0;
		r->bytes += publish(c, f, bs, now);
		r->pubs++;
		if (now <= 2 * HOUR_MS)
			measure(c, f, bs, keys, n, in, now, r);
	}
	cbf_free(&f);
	for (unsigned i = 0; i < bs->n; i++)
		cbf_free(&bs->b[i].f);
	free(bs);
	free(in);
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
	printf("%-28s %9s %9s %9s %9s %8s %11s\n", "candidate",
	    "false pos", "stale", "lost", "bytes/key", "pubs", "peer holds");
	for (int c = 0; c < C_N; c++) {
		struct result r;
		run((enum cand)c, keys, n, ev, nev, &r);
		double s = r.samples ? r.samples : 1;
		printf("%-28s %8.4f%% %8.3f%% %8.3f%% %9.2f %8llu %9.0f KB\n",
		    cand_names[c], 100 * r.fp / s, 100 * r.stale / s,
		    100 * r.lost / s, (double)r.bytes / (double)n,
		    (unsigned long long)r.pubs, r.peer_bytes / s / 1024);
	}
	free(keys);
	free(ev);
	return 0;
}
