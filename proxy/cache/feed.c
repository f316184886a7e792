/*
 * See feed.h. The summary keeps its own table of what it claims and until
 * when (summary/publisher.h); the feed only tells it what joins and leaves
 * the cache, in either tier.
 */
#include "feed.h"

#include <stdlib.h>

#include "peers.h"
#include "tiers.h"

static void
on_added(void *arg, const char *key, size_t klen, uint64_t expires_ms)
{
	struct server *s = arg;

	peers_object_added(s->peers, key, klen, expires_ms);
}

static void
on_removed(void *arg, const char *key, size_t klen)
{
	struct server *s = arg;

	peers_object_removed(s->peers, key, klen);
}

int
feed_start(struct server *s)
{
	struct tiers_observer ob = {on_added, on_removed, s};

	return tiers_observe(s, &ob);
}
