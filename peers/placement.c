/*
 * Rendezvous hashing (placement.h). The score is computed in doubles:
 * -ln(u) of a 53-bit u is exact enough that two nodes never disagree on
 * an owner unless their scores are within an ulp, and then both break
 * the tie the same way.
 */
#include "placement.h"

#include <math.h>

#include <xxhash.h>

/* Any fixed value: keys are hashed apart from every other use of xxh3 in
 * sumcache (summary positions use the unseeded 128-bit hash). */
#define PLACE_SEED 0x73756d6361636865ull  /* "sumcache" */

uint64_t
place_hash(const char *s, size_t len)
{
	return XXH3_64bits_withSeed(s, len, PLACE_SEED);
}

/* A node's draw for a key: the two hashes mixed (the finalizer of
 * MurmurHash3, a bijection with full avalanche), so a node's draws for
 * different keys, and different nodes' draws for one key, are as good as
 * independent. */
static uint64_t
draw(uint64_t name_hash, uint64_t key_hash)
{
	uint64_t h = name_hash ^ key_hash;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static double
score(const struct place_node *node, uint64_t key_hash)
{
	/* u in (0, 1): 53 bits and half a step, never 0 or 1 */
	double u = ((double)(draw(node->name_hash, key_hash) >> 11) + 0.5) *
	    0x1.0p-53;
	return node->weight / -log(u);
}

size_t
place_owner(const struct place_node *nodes, size_t n, uint64_t key_hash)
{
	size_t best = 0;
	double top = score(&nodes[0], key_hash);

	for (size_t i = 1; i < n; i++) {
		double sc = score(&nodes[i], key_hash);
		if (sc > top || (sc == top &&
		    nodes[i].name_hash > nodes[best].name_hash)) {
			top = sc;
			best = i;
		}
	}
	return best;
}
