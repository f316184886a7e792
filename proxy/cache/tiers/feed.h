/*
 * Feeds the cache's objects into the Summary Cache publisher: every
 * object that joins or leaves either tier, with when it stops being
 * fresh.
 */
#ifndef FEED_H
#define FEED_H

struct peers;
struct tiers;

/* Observes tr for ps: what joins and leaves, and a restored disk, which
 * ps announces anew to its peers. Both are borrowed for tr's life.
 * Returns 0 or -1. */
int feed_start(struct tiers *tr, struct peers *ps);

#endif
