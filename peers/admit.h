/*
 * Admission: whether a node keeps its own copy of an object it does not
 * own (placement.h).
 *
 * Under `placement hash` the owner keeps what it fetches; a node that got
 * an object from the owner or from a peer keeps a copy by the rule here:
 *
 *   always      every copy (the cluster then holds popular objects once
 *               per node, as Summary Cache alone does)
 *   second-hit  only an object asked of this node before, among roughly
 *               the last `window` to 2 x `window` distinct keys it
 *               recorded (TinyLFU's doorkeeper): the many objects asked
 *               once are held once in the cluster, at their owner, and
 *               what clients here ask again is served without a hop
 *   never       no copy: every request for it is a hop to the owner
 *
 * The memory is two bit arrays of 8 bits per key of the window; a key is
 * remembered in the newer one, and when it has taken `window` new keys the
 * older is cleared and the two swap. A false "seen" (about 5 %) admits a
 * copy early; nothing is ever refused that the rule would keep.
 */
#ifndef ADMIT_H
#define ADMIT_H

#include <stdbool.h>
#include <stdint.h>

enum admit_rule {
	ADMIT_ALWAYS = 0,
	ADMIT_SECOND_HIT,
	ADMIT_NEVER,
};

/* "always", "second-hit", "never"; parse: 0, or -1 for another word. */
const char *admit_rule_name(enum admit_rule r);
int admit_rule_parse(const char *s, enum admit_rule *r);

struct admit;

/* NULL on ENOMEM. window: distinct keys remembered, at least 1024. */
struct admit *admit_new(enum admit_rule rule, uint64_t window);
void admit_free(struct admit **a);

/* A copy of the object of key_hash (placement.h's place_hash) came from
 * a peer: whether to keep it. Records the key. */
bool admit_keep(struct admit *a, uint64_t key_hash);

/* Bytes it holds, for the metrics. */
uint64_t admit_bytes(const struct admit *a);

#endif
