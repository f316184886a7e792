/*
 * store-stress: the threaded store workload (storestress.c) as a program,
 * for the ThreadSanitizer stage of tests/run.sh, where the Criterion
 * runner cannot go. Exits 1 on any wrong body, budget overrun, observer
 * imbalance or pin left behind; TSan's own exit code on a race.
 *
 *   store-stress [threads] [seconds]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "storestress.h"

int
main(int argc, char **argv)
{
	struct store_stress st = {
		.threads = argc > 1 ? (unsigned)atoi(argv[1]) : 4,
		.ms = (argc > 2 ? (unsigned)atoi(argv[2]) : 10) * 1000,
		.keys = 500,
		.budget = 1u << 20,
	};

	if (store_stress_run(&st) != 0) {
		fprintf(stderr, "store-stress: a thread did not start\n");
		return 1;
	}
	printf("store-stress: %u threads %u s: %llu ops, %llu hits, "
	    "%llu inserts, %llu evictions, %llu invalidations, %llu removes; "
	    "wrong %llu, over budget %llu, unbalanced %llu, pinned left %llu\n",
	    st.threads, st.ms / 1000, (unsigned long long)st.ops,
	    (unsigned long long)st.hits, (unsigned long long)st.inserts,
	    (unsigned long long)st.evictions,
	    (unsigned long long)st.invalidations,
	    (unsigned long long)st.removes, (unsigned long long)st.wrong,
	    (unsigned long long)st.over_budget,
	    (unsigned long long)st.unbalanced,
	    (unsigned long long)st.pinned_left);
	bool ok = st.wrong == 0 && st.over_budget == 0 && st.unbalanced == 0 &&
	    st.pinned_left == 0 && st.hits > 0 && st.evictions > 0;
	return ok ? 0 : 1;
}
