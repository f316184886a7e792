/*
 * store-bench: the memory store's eviction (SIEVE) against plain LRU on a
 * Zipf-like trace, at several cache sizes, plus the store's cost per
 * lookup and insert. LRU here is a minimal model written for the
 * comparison (same byte budget, same object sizes), not a second store.
 *
 *   store-bench [objects] [requests] [alpha]   (defaults 100000 2000000 0.75)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Zipf sampling by inverting a precomputed cumulative distribution */
static unsigned
zipf(const double *cdf, unsigned n)
{
	double u = (double)(next_rand() >> 11) / 9007199254740992.0;
	unsigned lo = 0, hi = n - 1;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* LRU model: doubly linked list over object ids, O(1) per request */
struct lru {
	unsigned *prev, *next;
	unsigned char *in;
	unsigned head, tail, count, cap;
};

#define NIL 0xffffffffu

static bool
lru_access(struct lru *l, unsigned id)
{
	bool hit = l->in[id];
	if (hit) {
		if (l->head == id)
			return true;
		/* unlink */
		l->next[l->prev[id]] = l->next[id];
		if (l->next[id] != NIL)
			l->prev[l->next[id]] = l->prev[id];
		else
			l->tail = l->prev[id];
	} else {
		if (l->count == l->cap) {
			unsigned v = l->tail;
			l->tail = l->prev[v];
			if (l->tail != NIL)
				l->next[l->tail] = NIL;
			else
				l->head = NIL;
			l->in[v] = 0;
			l->count--;
		}
		l->in[id] = 1;
		l->count++;
	}
	l->prev[id] = NIL;
	l->next[id] = l->head;
	if (l->head != NIL)
		l->prev[l->head] = id;
	l->head = id;
	if (l->tail == NIL)
		l->tail = id;
	return hit;
}

static double
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
	unsigned reqs = argc > 2 ? (unsigned)atoi(argv[2]) : 2000000;
	double alpha = argc > 3 ? atof(argv[3]) : 0.75;
	double *cdf = malloc(n * sizeof(*cdf)), sum = 0;
	unsigned *trace = malloc(reqs * sizeof(*trace));

	for (unsigned i = 0; i < n; i++)
		sum += 1.0 / pow(i + 1, alpha);
	double acc = 0;
	for (unsigned i = 0; i < n; i++) {
		acc += 1.0 / pow(i + 1, alpha) / sum;
		cdf[i] = acc;
	}
	/* shuffle ranks over ids so popularity is not insertion order */
	unsigned *perm = malloc(n * sizeof(*perm));
	for (unsigned i = 0; i < n; i++)
		perm[i] = i;
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j = (unsigned)(next_rand() % (i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (unsigned i = 0; i < reqs; i++)
		trace[i] = perm[zipf(cdf, n)];

	/* one object's charge, to size both caches alike */
	struct store_body *body = store_body_new(1024);
	memset(body->data, 'x', 1024);
	body->len = 1024;
	struct store_meta meta = {.status = 200};
	struct store_obj *probe = store_obj_new("http://bench/0000000", 20,
	    "Content-Type: x\r\n", 17, "", 0, &meta, body);
	size_t charge = probe->charge;
	store_obj_unref(&probe);

	printf("store-bench: %u objects, %u requests, Zipf alpha %.2f, "
	    "1 KB objects\n\n", n, reqs, alpha);
	printf("%-12s %12s %12s %14s %14s\n", "cache size", "SIEVE hits",
	    "LRU hits", "ns/lookup", "ns/insert");
	const double sizes[] = {0.01, 0.05, 0.10, 0.25};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		unsigned cap = (unsigned)(n * sizes[s]);
		struct store *st = store_new((size_t)cap * charge);
		struct lru l = {calloc(n, 4), calloc(n, 4), calloc(n, 1), NIL,
		    NIL, 0, cap};
		unsigned sieve_hits = 0, lru_hits = 0, inserts = 0;
		double t_lookup = 0, t_insert = 0;
		char key[32];
		for (unsigned i = 0; i < reqs; i++) {
			int kl = snprintf(key, sizeof(key), "http://bench/%07u",
			    trace[i]);
			double t0 = now_ns();
			struct store_obj *o = store_lookup(st, key, (size_t)kl,
			    NULL, NULL);
			double t1 = now_ns();
			t_lookup += t1 - t0;
			if (o != NULL) {
				sieve_hits++;
				store_obj_unref(&o);
			} else {
				o = store_obj_new(key, (size_t)kl,
				    "Content-Type: x\r\n", 17, "", 0, &meta,
				    body);
				double t2 = now_ns();
				store_insert(st, o);
				t_insert += now_ns() - t2;
				inserts++;
				store_obj_unref(&o);
			}
			lru_hits += lru_access(&l, trace[i]);
		}
		printf("%10.0f %% %11.2f%% %11.2f%% %14.1f %14.1f\n",
		    sizes[s] * 100, 100.0 * sieve_hits / reqs,
		    100.0 * lru_hits / reqs, t_lookup / reqs,
		    inserts ? t_insert / inserts : 0);
		store_free(&st);
		free(l.prev);
		free(l.next);
		free(l.in);
	}
	store_body_unref(&body);
	free(cdf);
	free(trace);
	free(perm);
	return 0;
}
