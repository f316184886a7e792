/*
 * The store under several threads at once (storestress.c): one workload,
 * run briefly by the unit suite (with ASan in CI) and at length by
 * store-stress under ThreadSanitizer.
 */
#ifndef STORESTRESS_H
#define STORESTRESS_H

#include <stdint.h>

struct store_stress {
	unsigned threads;
	unsigned ms;          /* how long */
	unsigned keys;        /* hot keys */
	uint64_t budget;      /* the store's bytes */
	/* out */
	uint64_t ops, hits, inserts, evictions, invalidations, removes;
	uint64_t wrong;       /* bodies that were not their key's */
	uint64_t over_budget; /* reads of the stats above the budget */
	uint64_t unbalanced;  /* observers' ins minus outs at the end */
	uint64_t pinned_left; /* bytes still pinned with every hold let go */
};

/* Runs the workload; the counts land in st. 0, or -1 when a thread could
 * not start. */
int store_stress_run(struct store_stress *st);

#endif
