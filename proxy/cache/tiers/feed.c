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
	peers_object_added(arg, key, klen, expires_ms);
}

static void
on_removed(void *arg, const char *key, size_t klen)
{
	peers_object_removed(arg, key, klen);
}

/* the cache was restored from disk: peers drop what they held of us and
 * take the whole of it */
static void
on_restored(void *arg)
{
	peers_announce(arg);
}

int
feed_start(struct tiers *tr, struct peers *ps)
{
	struct tiers_observer ob = {.added = on_added, .removed = on_removed,
	    .restored = on_restored, .arg = ps};

	return tiers_observe(tr, &ob);
}
