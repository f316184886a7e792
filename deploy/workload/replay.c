/*
 * replay: replays a Squid native access.log against a cluster of proxies
 * and checks every body that comes back.
 *
 *   replay -o ORIGIN -p PROXY[,PROXY...] [-c CONCURRENCY] [-s SKIP] [-n MAX]
 *          TRACE
 *
 * Each client address in the log is one client; clients are numbered in
 * address order and client c goes through proxy c mod N (the paper's
 * assignment, and the generator's sites). Requests are issued in log order,
 * at most CONCURRENCY at a time (16), as fast as the cluster answers.
 * -s and -n replay a part of the log (the SKIP requests after the first
 * are left out, then MAX at most are sent) with the clients numbered as
 * in the whole log, so that parts replayed one after the other, with the
 * cluster changed between them, are the whole replay.
 *
 * Every URL is fetched from the demo origin ORIGIN (host:port): a URL
 * already on a demo origin keeps its path and query; any other URL (a real
 * log) becomes /real/HASH?size=BYTES, one object per distinct URL, of the
 * size the log gave it. The body that comes back must be the demo origin's
 * bytes for that target (demo.h), in some version it could have had: a
 * wrong body is counted, never ignored.
 *
 * Prints key=value lines: requests, ok, wrong_bodies, errors, seconds,
 * latency_p50_ms, latency_p99_ms. Exit status 0 when every response was
 * right, 1 otherwise.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "demo.h"
#include "trace.h"

#define MAX_PROXIES 64
#define MAX_VERSIONS 4
#define SCRATCH 65536

struct entry {
	char *target;     /* path and query on the demo origin */
	unsigned client;  /* index in address order */
};

struct xfer {
	CURL *easy;
	struct entry *e;
	struct demo_obj obj;
	uint64_t seeds[MAX_VERSIONS];
	int alive[MAX_VERSIONS];  /* still matching this version */
	unsigned nversions;
	uint64_t got;
};

struct run {
	const char *origin;
	char *proxies[MAX_PROXIES];
	unsigned nproxies;
	unsigned concurrency;
	struct entry *v;
	size_t n, cap;
	uint64_t ok, wrong, errors;
	uint64_t *lat_us;
	size_t nlat;
	uint64_t per_proxy[MAX_PROXIES];
};

/* ---- the log ---- */

static int
keep(void *arg, const struct trace_line *l)
{
	struct run *r = arg;

	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4096;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
	}
	if (r->v == NULL || (r->v[r->n].target = trace_demo_target(l->url,
	    l->bytes)) == NULL) {
		fprintf(stderr, "replay: out of memory\n");
		exit(1);
	}
	r->v[r->n++].client = l->client;
	return 0;
}

static int
load(struct run *r, const char *path)
{
	struct trace_clients c;

	if (trace_read(path, "replay", keep, r, &c) < 0)
		return -1;
	for (size_t i = 0; i < r->n; i++)
		r->v[i].client = c.order[r->v[i].client];
	if (c.skipped > 0)
		fprintf(stderr, "replay: %zu lines not GET http:// left out\n",
		    c.skipped);
	fprintf(stderr, "replay: %zu requests from %zu clients over %u "
	    "proxies\n", r->n, c.n, r->nproxies);
	trace_clients_free(&c);
	return 0;
}

/* ---- checking bodies ---- */

static size_t
on_body(char *data, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	static uint8_t want[SCRATCH];

	for (size_t done = 0; done < len;) {
		size_t k = len - done > SCRATCH ? SCRATCH : len - done;
		for (unsigned v = 0; v < x->nversions; v++) {
			if (!x->alive[v])
				continue;
			demo_fill(x->seeds[v], x->got + done, want, k);
			if (memcmp(want, data + done, k) != 0)
				x->alive[v] = 0;
		}
		done += k;
	}
	x->got += len;
	return len;
}

static struct xfer *
start(struct run *r, CURLM *multi, struct entry *e)
{
	struct xfer *x = calloc(1, sizeof(*x));
	char url[4200];

	if (x == NULL || (x->easy = curl_easy_init()) == NULL) {
		fprintf(stderr, "replay: out of memory\n");
		exit(1);
	}
	x->e = e;
	demo_parse(e->target, &x->obj);
	/* versions a cache may rightly hold now: the current one, two
	 * before it, and the next (the clock may turn during the request) */
	uint64_t cur = demo_version(&x->obj, (uint64_t)time(NULL));
	for (int64_t v = (int64_t)cur - 2; v <= (int64_t)cur + 1; v++)
		if (v >= 0 && (x->obj.change != 0 || v == 0)) {
			x->seeds[x->nversions] = demo_seed(e->target,
			    (uint64_t)v);
			x->alive[x->nversions++] = 1;
		}
	unsigned p = e->client % r->nproxies;
	r->per_proxy[p]++;
	snprintf(url, sizeof(url), "http://%s%s", r->origin, e->target);
	curl_easy_setopt(x->easy, CURLOPT_URL, url);
	curl_easy_setopt(x->easy, CURLOPT_PROXY, r->proxies[p]);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_multi_add_handle(multi, x->easy);
	return x;
}

static void
finish(struct run *r, CURLM *multi, struct xfer *x, CURLcode rc)
{
	long status = 0;
	curl_off_t us = 0;
	int right = 0;

	curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(x->easy, CURLINFO_TOTAL_TIME_T, &us);
	for (unsigned v = 0; v < x->nversions; v++)
		right |= x->alive[v];
	if (rc != CURLE_OK || status != 200) {
		r->errors++;
		if (r->errors <= 10)
			fprintf(stderr, "replay: %s: %s\n", x->e->target,
			    rc != CURLE_OK ? curl_easy_strerror(rc) : "not 200");
	} else if (!right || x->got != x->obj.size) {
		r->wrong++;
		if (r->wrong <= 10)
			fprintf(stderr, "replay: %s: wrong body (%" PRIu64
			    " bytes)\n", x->e->target, x->got);
	} else {
		r->ok++;
		r->lat_us[r->nlat++] = (uint64_t)us;
	}
	curl_multi_remove_handle(multi, x->easy);
	curl_easy_cleanup(x->easy);
	free(x);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double
percentile_ms(const uint64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: replay -o ORIGIN_HOST:PORT -p PROXY[,PROXY...] "
	    "[-c CONCURRENCY] [-s SKIP] [-n MAX] TRACE\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct run r = {.concurrency = 16};
	size_t skip = 0, max = 0;
	char *list = NULL;
	int c;

	while ((c = getopt(argc, argv, "o:p:c:s:n:h")) != -1) {
		switch (c) {
		case 'o': r.origin = optarg; break;
		case 'p': list = optarg; break;
		case 'c': r.concurrency = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 's': skip = strtoull(optarg, NULL, 10); break;
		case 'n': max = strtoull(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (optind + 1 != argc || r.origin == NULL || list == NULL ||
	    r.concurrency == 0)
		usage();
	for (char *save, *tok = strtok_r(list, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if (r.nproxies == MAX_PROXIES) {
			fprintf(stderr, "replay: at most %d proxies\n",
			    MAX_PROXIES);
			return 2;
		}
		r.proxies[r.nproxies++] = tok;
	}
	if (r.nproxies == 0)
		usage();
	if (load(&r, argv[optind]) < 0)
		return 2;
	size_t loaded = r.n, first = skip < r.n ? skip : r.n;
	if (max > 0 && max < r.n - first)
		r.n = first + max;
	r.lat_us = malloc((r.n - first + 1) * sizeof(*r.lat_us));

	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURLM *multi = curl_multi_init();
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	size_t next = first, running = 0;
	while (next < r.n || running > 0) {
		while (running < r.concurrency && next < r.n) {
			start(&r, multi, &r.v[next++]);
			running++;
		}
		int still;
		curl_multi_perform(multi, &still);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(multi, &left)) != NULL) {
			if (m->msg != CURLMSG_DONE)
				continue;
			struct xfer *x;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &x);
			finish(&r, multi, x, m->data.result);
			running--;
		}
		if (running > 0)
			curl_multi_poll(multi, NULL, 0, 100, NULL);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	curl_multi_cleanup(multi);
	curl_global_cleanup();

	qsort(r.lat_us, r.nlat, sizeof(*r.lat_us), cmp_u64);
	double secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("requests=%zu\nok=%" PRIu64 "\nwrong_bodies=%" PRIu64
	    "\nerrors=%" PRIu64 "\nseconds=%.3f\nlatency_p50_ms=%.3f\n"
	    "latency_p99_ms=%.3f\n", r.n - first, r.ok, r.wrong, r.errors, secs,
	    percentile_ms(r.lat_us, r.nlat, 0.50),
	    percentile_ms(r.lat_us, r.nlat, 0.99));
	for (unsigned p = 0; p < r.nproxies; p++)
		printf("requests_via{proxy=\"%s\"}=%" PRIu64 "\n", r.proxies[p],
		    r.per_proxy[p]);
	for (size_t i = 0; i < loaded; i++)
		free(r.v[i].target);
	free(r.v);
	free(r.lat_us);
	return r.wrong == 0 && r.errors == 0 ? 0 : 1;
}
