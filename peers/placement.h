/*
 * Placement: which node owns a key, by rendezvous (highest random weight)
 * hashing over node names.
 *
 * With `placement hash`, a miss that no summary claims goes to the key's
 * owner, which fetches it from the origin once and keeps it. Every node
 * computes owners alone from what it already shares with the others (the
 * node names peers sign with, the weights on the peer lines) and the
 * live set it sees, so no coordination is needed and the daemon and the
 * simulator use this one rule.
 *
 * A node's score for a key is weight / -ln(u), with u uniform in (0, 1)
 * from a hash of the node's name and the key; the highest score owns it.
 * A node that joins takes from each other node about weight / total of
 * its keys and no others; one that leaves gives its keys to the others
 * in proportion to their weights. Equal scores (a 2^-53 chance) go to
 * the higher name hash, so every node agrees.
 */
#ifndef PLACEMENT_H
#define PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* A node as placement sees it. */
struct place_node {
	uint64_t name_hash;   /* place_hash of its name */
	double weight;        /* > 0; a cache of twice the size: 2 */
};

/* The hash of a node's name, or of a key (a normalized URL). */
uint64_t place_hash(const char *s, size_t len);

/* The index of key_hash's owner among nodes[0..n); n > 0. */
size_t place_owner(const struct place_node *nodes, size_t n,
    uint64_t key_hash);

/* The weight a peer line has unless it says weight=. */
#define PLACE_WEIGHT_DEFAULT 1.0
#define PLACE_WEIGHT_MAX 1000000.0

#endif
