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

/* A filter holding keys [from, to) of a made-up site. */
static void
add_keys(struct cbf *f, struct sumkey_hasher *h, int from, int to)
{
	for (int i = from; i < to; i++) {
		char url[64];
		struct sumkey k;
		int n = snprintf(url, sizeof(url), "http://seed.test/o/%d", i);
		if (sumkey_make(h, SUM_METHOD_GET, url, (size_t)n, &k) != 0)
			continue;
		if (f->until != NULL)   /* deadlines a minute and more out */
			cbf_add_until(f, &k, f->base_ms + 60000 + 1000ull * i);
		else
			cbf_add(f, &k);
	}
}

/* The Summary (unsigned) for f's next publication. */
static void
summary_seed(const char *dir, const char *name, struct cbf *f, uint64_t seq)
{
	struct sum_buf b = {0};
	bool full;
	uint64_t checksum;

	bool timed = f->until != NULL;
	if ((timed ? sum_publish_timed(f, f->base_ms, &b, &full, &checksum) :
	    sum_publish(f, &b, &full, &checksum)) < 0)
		exit(1);
	Sumcache__V1__Summary s = SUMCACHE__V1__SUMMARY__INIT;
	s.sender = "seed";
	s.epoch = f->epoch;
	s.seq = seq;
	s.scheme = f->scheme == SUM_XXH3 ? SUMCACHE__V1__HASH_SCHEME__HASH_XXH3 :
	    SUMCACHE__V1__HASH_SCHEME__HASH_SQUID_MD5;
	s.m = f->m;
	s.k = f->k;
	if (timed)
		s.kind = full ? SUMCACHE__V1__KIND__KIND_TIMED_FULL :
		    SUMCACHE__V1__KIND__KIND_TIMED_DELTA;
	else
		s.kind = full ? SUMCACHE__V1__KIND__KIND_FULL :
		    SUMCACHE__V1__KIND__KIND_DELTA;
	s.version = WIRE_VERSION;
	s.payload.data = b.p;
	s.payload.len = b.len;
	s.checksum = checksum;
	s.entries = f->entries;
	size_t n = sumcache__v1__summary__get_packed_size(&s);
	uint8_t *out = malloc(n);
	sumcache__v1__summary__pack(&s, out);
	put(dir, name, out, n);
	free(out);
	free(b.p);
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
	struct cbf *f = cbf_new(SUM_XXH3, 4096, 4, 1000);
	add_keys(f, x, 0, 200);
	summary_seed(dir, "full", f, 1);
	add_keys(f, x, 200, 203);
	summary_seed(dir, "delta", f, 2);
	cbf_free(&f);
	f = cbf_new_timed(SUM_XXH3, 4096, 4, 1000, 5000);
	add_keys(f, x, 0, 200);
	summary_seed(dir, "timed-full", f, 1);
	add_keys(f, x, 200, 203);
	summary_seed(dir, "timed-delta", f, 2);
	cbf_free(&f);

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
	f = cbf_new(SUM_SQUID_MD5, 8ull * digest_mask_size(cap, 5), 4, 1);
	add_keys(f, md5, 0, 80);
	if (digest_build(f, cap, 5, &d) != 0)
		return 1;
	put(dir, "digest", d.p, d.len);
	free(d.p);
	cbf_free(&f);
	sumkey_hasher_free(&x);
	sumkey_hasher_free(&md5);
	return 0;
}
