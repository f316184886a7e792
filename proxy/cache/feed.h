/*
 * Feeds the cache's objects into the Summary Cache publisher: every
 * object that joins or leaves either tier, with when it stops being
 * fresh.
 */
#ifndef FEED_H
#define FEED_H

#include "proxy.h"

/* Observes s's tiers for s->peers. Returns 0 or -1. */
int feed_start(struct server *s);

#endif
