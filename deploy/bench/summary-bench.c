/*
 * summary-bench: what the Summary Cache data structures cost.
 *   - ns per counting-filter add / remove / contains (1M entries, 16 bits
 *     per entry, k = 4), ns to hash a 100-byte URL, ns per peer-summary
 *     probe with the hash done once;
 *   - the timed summary, the cuckoo table of fingerprints (cuckoo.h): ns
 *     per add, remove and peer lookup, and bytes a key at the node and
 *     at a peer (deploy/README.md keeps the figures of the timed counting
 *     filter it replaced, measured here before it went);
 *   - delta and full sizes at 0.1 %, 1 % and 10 % churn, bits per changed
 *     position against the Rice ideal log2(mean gap) + 2, against the
 *     entropy bound of two sorted lists (no code for them is shorter), and
 *     against the paper's 32 bits; encode and decode times.
 *
 *   summary-bench [entries]   (default 1000000)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbf.h"
#include "cuckoo.h"
#include "psum.h"

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* log2 C(m, n) / n: the fewest bits per entry any code for a set of n
 * positions out of m can average */
static double
entropy_bits(uint64_t m, uint64_t n)
{
	if (n == 0)
		return 0;
	double lc = lgamma((double)m + 1) - lgamma((double)n + 1) -
	    lgamma((double)(m - n) + 1);
	return lc / log(2) / (double)n;
}

static int
url_of(uint64_t id, char *buf)
{
	/* 100 bytes, like a typical absolute URL with a query */
	return snprintf(buf, 128, "http://static%03llu.example.com/assets/"
	    "images/2026/11/photo-%012llu.jpg?size=large&v=%08llu",
	    (unsigned long long)(id % 997), (unsigned long long)id,
	    (unsigned long long)(id * 7919 % 100000000));
}

/* median of 5 timings of fn over n items, in ns per item */
#define TIME_NS(n, body)                                                     \
	({                                                                   \
		double best[5];                                              \
		for (int r_ = 0; r_ < 5; r_++) {                             \
			double t0_ = now();                                  \
			body;                                                \
			best[r_] = (now() - t0_) * 1e9 / (double)(n);        \
		}                                                            \
		for (int i_ = 0; i_ < 5; i_++)                               \
			for (int j_ = i_ + 1; j_ < 5; j_++)                  \
				if (best[j_] < best[i_]) {                   \
					double t_ = best[i_];                \
					best[i_] = best[j_];                 \
					best[j_] = t_;                       \
				}                                            \
		best[2];                                                     \
	})

static double
median5(double *v)
{
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (v[j] < v[i]) {
				double t = v[i];
				v[i] = v[j];
				v[j] = t;
			}
	return v[2];
}

/*
 * The node's timed table and a peer's copy of it. Each add goes into a
 * fresh table each round; deadlines an hour ahead; lookups of keys held.
 */
static void
timed_costs(const struct sumkey *keys, uint64_t n)
{
	const uint64_t until = 3600000;
	double add[5], rm[5], look[5];
	volatile uint64_t sink = 0;
	size_t node = 0, peer = 0;

	for (int r = 0; r < 5; r++) {
		struct ck_table *t = ck_new(ck_buckets_for(n), 0);
		double t0 = now();
		for (uint64_t i = 0; i < n; i++)
			sink += (uint64_t)ck_add(t, &keys[i], until);
		add[r] = (now() - t0) * 1e9 / (double)n;

		struct sum_buf cb = {0};
		bool full;
		uint64_t sum, sent;
		ck_publish(t, 0, &cb, &full, &sent, &sum);
		/* as published: a change pending adds 8 bytes to its list */
		node = ck_bytes(t);
		struct ck_copy *c = ck_copy_new(t->nb);
		ck_copy_load(c, sent, cb.p, cb.len, sum);
		t0 = now();
		for (uint64_t i = 0; i < n; i++)
			sink += ck_copy_contains(c, &keys[i], 0);
		look[r] = (now() - t0) * 1e9 / (double)n;
		t0 = now();
		for (uint64_t i = 0; i < n; i++)
			sink += ck_remove(t, &keys[i], until);
		rm[r] = (now() - t0) * 1e9 / (double)n;
		peer = ck_copy_bytes(c);
		ck_copy_free(&c);
		ck_free(&t);
		free(cb.p);
	}
	printf("%-22s %9s %9s %9s %12s %12s\n", "timed summary", "add ns",
	    "remove ns", "lookup ns", "node B/key", "peer B/key");
	printf("%-22s %9.1f %9.1f %9.1f %12.2f %12.2f\n", "cuckoo table",
	    median5(add), median5(rm), median5(look),
	    (double)node / (double)n, (double)peer / (double)n);
	printf("(%llu)\n\n", (unsigned long long)sink % 2);
}

int
main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	struct sumkey *keys = malloc(n * sizeof(*keys));
	char url[128];
	volatile uint64_t sink = 0;

	printf("summary-bench: %llu entries, 16 bits per entry, k = 4\n\n",
	    (unsigned long long)n);
	int ulen = url_of(1, url);
	struct sumkey_hasher *hx = sumkey_hasher_new(SUM_XXH3);
	struct sumkey_hasher *hm = sumkey_hasher_new(SUM_SQUID_MD5);
	if (hx == NULL || hm == NULL)
		return 1;
	/* URLs prepared beforehand (a ring that stays in cache), so the
	 * timing is the hash alone */
	enum { RING = 4096 };
	static char ring[RING][128];
	for (int i = 0; i < RING; i++)
		url_of((uint64_t)i, ring[i]);
	struct sumkey hk;
	double t_hash = TIME_NS(n, for (uint64_t i = 0; i < n; i++) {
		sumkey_make(hx, SUM_METHOD_GET, ring[i % RING],
		    (size_t)ulen, &hk);
		sink += hk.bytes[0];
	});
	double t_md5 = TIME_NS(n / 10, for (uint64_t i = 0; i < n / 10; i++) {
		sumkey_make(hm, SUM_METHOD_GET, ring[i % RING],
		    (size_t)ulen, &hk);
		sink += hk.bytes[0];
	});
	for (uint64_t i = 0; i < n; i++) {
		url_of(i, url);
		sumkey_make(hx, SUM_METHOD_GET, url, (size_t)ulen,
		    &keys[i]);
	}

	/* add: into a fresh filter each round, allocation not timed */
	struct cbf *f = NULL;
	double adds[5];
	for (int r = 0; r < 5; r++) {
		cbf_free(&f);
		f = cbf_new(SUM_XXH3, cbf_size_for(n, 16), 4);
		memset(f->counters, 0, (size_t)(f->m + 1) / 2); /* fault in */
		double t0 = now();
		for (uint64_t i = 0; i < n; i++)
			cbf_add(f, &keys[i]);
		adds[r] = (now() - t0) * 1e9 / (double)n;
	}
	for (int i = 0; i < 5; i++)
		for (int j = i + 1; j < 5; j++)
			if (adds[j] < adds[i]) {
				double t = adds[i];
				adds[i] = adds[j];
				adds[j] = t;
			}
	double t_add = adds[2];
	/* keys are read in order: the cost is the filter's, not the key
	 * array's cache misses */
	double t_contains = TIME_NS(n, for (uint64_t i = 0; i < n; i++)
		sink += cbf_contains(f, &keys[i]));
	/* remove and re-add the same keys so the filter stays full */
	double t_remove = TIME_NS(n / 10, {
		for (uint64_t i = 0; i < n / 10; i++)
			cbf_remove(f, &keys[i]);
		for (uint64_t i = 0; i < n / 10; i++)
			cbf_add(f, &keys[i]);
	}) / 2;

	struct sum_buf b = {0};
	bool full;
	uint64_t sum;
	sum_publish(f, &b, &full, &sum);
	struct psum *p = psum_new(SUM_XXH3, 64, 4);
	psum_load_full(p, SUM_XXH3, f->m, 4, 1, 1, b.p, b.len, sum);
	double t_probe = TIME_NS(n, for (uint64_t i = 0; i < n; i++)
		sink += psum_contains(p, &keys[i], 0));

	printf("%-44s %8.1f ns\n", "hash a 100-byte URL (xxh3)", t_hash);
	printf("%-44s %8.1f ns\n", "hash a 100-byte URL (squid-md5)", t_md5);
	printf("%-44s %8.1f ns\n", "counting filter add", t_add);
	printf("%-44s %8.1f ns\n", "counting filter remove", t_remove);
	printf("%-44s %8.1f ns\n", "counting filter contains", t_contains);
	printf("%-44s %8.1f ns\n", "peer summary probe (hash precomputed)",
	    t_probe);
	printf("full summary: %zu bytes (%s) for %llu bits, %.1f %% set\n\n",
	    b.len, b.p[0] == SUM_FULL_RAW ? "raw" : "Rice",
	    (unsigned long long)f->m, 100.0 * p->ones / f->m);

	timed_costs(keys, n);

	printf("%-7s %9s %9s %9s %9s %8s %8s %8s %10s %10s %10s\n", "churn",
	    "changed", "delta B", "full B", "bits/chg", "ideal", "entropy",
	    "vs 32b",
	    "encode ms", "decode ms", "publish ms");
	const double churns[] = {0.001, 0.01, 0.10};
	uint64_t next = n, oldest = 0, seq = 1;
	for (int c = 0; c < 3; c++) {
		uint64_t changes = (uint64_t)(n * churns[c]);
		struct sumkey k;
		for (uint64_t i = 0; i < changes / 2; i++) {
			url_of(next++, url);
			sumkey_make(hx, SUM_METHOD_GET, url,
			    (size_t)ulen, &k);
			cbf_add(f, &k);
			cbf_remove(f, &keys[oldest++]);
		}
		struct cbf_delta d;
		cbf_delta(f, &d);
		uint64_t nch = d.nset + d.ncleared;
		struct sum_buf db = {0}, fb = {0};
		double t0 = now();
		sum_encode_delta(&d, &db);
		double t_enc = now() - t0;
		sum_encode_full(f->bits, f->m, &fb);
		/* ideal: each list at log2(mean gap) + 2 bits per entry */
		double ideal = 0;
		if (d.nset)
			ideal += d.nset * (log2((double)f->m / d.nset) + 2);
		if (d.ncleared)
			ideal += d.ncleared *
			    (log2((double)f->m / d.ncleared) + 2);
		double bound = (d.nset * entropy_bits(f->m, d.nset) +
		    d.ncleared * entropy_bits(f->m, d.ncleared)) / nch;
		uint64_t check = sum_checksum(f->bits, f->m);
		t0 = now();
		int rc = psum_apply_delta(p, 1, ++seq, db.p, db.len, check);
		double t_dec = now() - t0;
		if (rc != 0)
			printf("decode failed: %d\n", rc);
		struct sum_buf pb = {0};
		t0 = now();
		sum_publish(f, &pb, &full, &sum);
		double t_pub = now() - t0;
		printf("%6.1f%% %9llu %9zu %9zu %9.2f %8.2f %8.2f %7.1fx %10.3f "
		    "%10.3f %10.3f\n", churns[c] * 100,
		    (unsigned long long)nch, db.len, fb.len,
		    8.0 * db.len / nch, ideal / nch, bound,
		    32.0 / (8.0 * db.len / nch),
		    t_enc * 1e3, t_dec * 1e3, t_pub * 1e3);
		cbf_delta_clear(&d);
		free(db.p);
		free(fb.p);
		free(pb.p);
	}
	printf("\n(%llu)\n", (unsigned long long)sink % 2);
	psum_free(&p);
	cbf_free(&f);
	sumkey_hasher_free(&hx);
	sumkey_hasher_free(&hm);
	free(b.p);
	free(keys);
	return 0;
}
