/*
 * fuzz-seeds DIR: writes seed inputs for the fuzz targets into
 * DIR/corpus-{icp,digest,summary,cuckoo} (which must exist): well-formed messages of each kind, made with
 * our own encoders, for libFuzzer to mutate from. Run by tests/run.sh
 * before the fuzzers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cuckoo.h"
#include "digest.h"
#include "icp.h"
#include "psum.h"
#include "publisher.h"
#include "sumcache.pb-c.h"
#include "sumkey.h"
#include "wire.h"

static void
put(const char *dir, const char *name, const void *p, size_t n)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n) {
		perror(path);
		exit(1);
	}
	fclose(f);
}

/* Keys [from, to) of a made-up site, fresh a minute and more, into a
 * publisher at now_ms. */
static void
add_keys(struct publisher *p, struct sumkey_hasher *h, int from, int to,
    uint64_t now_ms)
{
	for (int i = from; i < to; i++) {
		char url[64];
		struct sumkey k;
		int n = snprintf(url, sizeof(url), "http://seed.test/o/%d", i);
		if (sumkey_make(h, SUM_METHOD_GET, url, (size_t)n, &k) != 0 ||
		    !pub_added(p, &k, now_ms + 60000 + 1000ull * (unsigned)i,
		    now_ms))
			exit(1);
	}
}

/* The Summary (unsigned) for p's next publication, at now_ms. */
static void
summary_seed(const char *dir, const char *name, struct publisher *p,
    uint64_t now_ms)
{
	struct publication pub = {0};

	if (pub_publish(p, now_ms, &pub) < 0)
		exit(1);
	Sumcache__V1__Summary s = SUMCACHE__V1__SUMMARY__INIT;
	s.sender = "seed";
	s.epoch = pub.epoch;
	s.seq = pub.seq;
	s.scheme = pub.scheme == SUM_XXH3 ?
	    SUMCACHE__V1__HASH_SCHEME__HASH_XXH3 :
	    SUMCACHE__V1__HASH_SCHEME__HASH_SQUID_MD5;
	s.m = pub.m;
	s.k = pub.k;
	if (pub.timed)
		s.kind = pub.full ? SUMCACHE__V1__KIND__KIND_TIMED_FULL :
		    SUMCACHE__V1__KIND__KIND_TIMED_DELTA;
	else
		s.kind = pub.full ? SUMCACHE__V1__KIND__KIND_FULL :
		    SUMCACHE__V1__KIND__KIND_DELTA;
	s.version = WIRE_VERSION;
	s.sent_ms = pub.sent_ms;
	s.payload.data = pub.payload.p;
	s.payload.len = pub.payload.len;
	s.checksum = pub.checksum;
	s.entries = pub.entries;
	size_t n = sumcache__v1__summary__get_packed_size(&s);
	uint8_t *out = malloc(n);
	sumcache__v1__summary__pack(&s, out);
	put(dir, name, out, n);
	free(out);
	sum_buf_free(&pub.payload);
}

/* A publisher of a small filter (fresh) or table (timed), made at
 * now_ms. */
static struct publisher *
seed_publisher(enum pub_claims claims, uint64_t now_ms)
{
	struct pub_conf c = {
		.claims = claims, .scheme = SUM_XXH3, .bits_per_entry = 16,
		.k = 4, .threshold = 0.01, .expected_objects = 256,
		.fixed_size = true,
	};
	struct publisher *p = pub_new(&c, 1000, now_ms);

	if (p == NULL)
		exit(1);
	return p;
}

int
main(int argc, char **argv)
{
	char dir[400];
	uint8_t m[ICP_MAX];

	if (argc != 2) {
		fprintf(stderr, "usage: fuzz-seeds DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/corpus-icp", argv[1]);
	const char *url = "http://seed.test/o/1";
	put(dir, "query", m, icp_encode(m, ICP_OP_QUERY, 1, url, strlen(url)));
	put(dir, "hit", m, icp_encode(m, ICP_OP_HIT, 1, url, strlen(url)));
	put(dir, "miss", m, icp_encode(m, ICP_OP_MISS, 2, url, strlen(url)));

	struct sumkey_hasher *x = sumkey_hasher_new(SUM_XXH3);
	struct sumkey_hasher *md5 = sumkey_hasher_new(SUM_SQUID_MD5);
	snprintf(dir, sizeof(dir), "%s/corpus-summary", argv[1]);
	const char *names[][2] = {{"full", "delta"},
	    {"timed-full", "timed-delta"}};
	enum pub_claims kinds[] = {PUB_CLAIMS_FRESH, PUB_CLAIMS_TIMED};
	for (int i = 0; i < 2; i++) {
		/* 200 keys: a full message; 3 more: a delta */
		struct publisher *p = seed_publisher(kinds[i], 5000);
		add_keys(p, x, 0, 200, 5000);
		summary_seed(dir, names[i][0], p, 5000);
		add_keys(p, x, 200, 203, 6000);
		summary_seed(dir, names[i][1], p, 6000);
		pub_free(&p);
	}

	/* fuzz_cuckoo.c's two games: a full message for a copy of 32
	 * buckets, and a script of adds, clock steps, removals and new
	 * deadlines */
	snprintf(dir, sizeof(dir), "%s/corpus-cuckoo", argv[1]);
	struct ck_table *t = ck_new(32, 0);
	for (int i = 0; i < 100; i++) {
		struct sumkey k;
		char u[64];
		int n = snprintf(u, sizeof(u), "http://seed.test/o/%d", i);
		sumkey_make(x, SUM_METHOD_GET, u, (size_t)n, &k);
		ck_add(t, &k, 60000ull + 7000ull * i);
	}
	struct sum_buf cb = {0};
	uint64_t sent, sum;
	bool whole;
	uint8_t head[19] = {0, 31, 1};
	ck_publish(t, 5000, &cb, &whole, &sent, &sum);
	store_le64(head + 3, sent);
	store_le64(head + 11, sum);
	struct sum_buf seed = {0};
	sum_buf_put(&seed, head, sizeof(head));
	sum_buf_put(&seed, cb.p, cb.len);
	put(dir, "full", seed.p, seed.len);
	free(seed.p);
	free(cb.p);
	ck_free(&t);
	const uint8_t script[] = {1, 7, 0 << 2 | 0, 10, 1 << 2 | 0, 200,
	    2 << 2 | 0, 255, 3 << 2 | 0, 40, 4 << 2 | 0, 3, 0 | 3, 5,
	    1 << 2 | 1, 0, 5 << 2 | 0, 90, 2 << 2 | 2, 120, 0 | 3, 200,
	    3 << 2 | 2, 250, 0 | 3, 255, 4 << 2 | 1, 0, 0 | 3, 1};
	put(dir, "script", script, sizeof(script));

	snprintf(dir, sizeof(dir), "%s/corpus-digest", argv[1]);
	uint32_t cap = 100;
	struct sum_buf d = {0};
	struct cbf *f = cbf_new(SUM_SQUID_MD5, 8ull * digest_mask_size(cap, 5),
	    4);
	for (int i = 0; i < 80; i++) {
		char u[64];
		struct sumkey k;
		int n = snprintf(u, sizeof(u), "http://seed.test/o/%d", i);
		if (sumkey_make(md5, SUM_METHOD_GET, u, (size_t)n, &k) == 0)
			cbf_add(f, &k);
	}
	if (digest_build(f, cap, 5, &d) != 0)
		return 1;
	put(dir, "digest", d.p, d.len);
	free(d.p);
	cbf_free(&f);
	sumkey_hasher_free(&x);
	sumkey_hasher_free(&md5);
	return 0;
}
