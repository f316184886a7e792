/*
 * Feeds the store's objects into the Summary Cache filter: every insert
 * and removal, and the walk over the whole store that rebuilds the filter
 * larger when the cache outgrows it, a bounded number of objects per loop
 * turn so the proxy keeps serving meanwhile.
 */
#ifndef FEED_H
#define FEED_H

#include "proxy.h"

/* Observes s->store for s->peers. Returns 0 or -1. */
int feed_start(struct server *s);
void feed_stop(struct server *s);

#endif
