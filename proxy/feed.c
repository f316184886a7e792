/*
 * See feed.h. Each stored object's mark belongs to the publisher
 * (summary/publisher.h says how a rebuild's walk uses it); the feed only
 * carries it between the store and the peers.
 */
#include "feed.h"

#include <stdlib.h>

#include <event2/event.h>

#include "peers.h"
#include "tiers.h"

/* Objects walked per loop turn: about a millisecond of hashing. */
#define FEED_STEP 4096

struct feed {
	struct server *srv;
	struct event *step;
};

static void
on_disk_object(void *arg, const char *key, size_t klen, uint8_t *mark)
{
	struct feed *f = arg;

	peers_rebuild_walk(f->srv->peers, key, klen, mark);
}

static void
on_disk_walked(void *arg)
{
	struct feed *f = arg;

	peers_rebuild_end(f->srv->peers);
}

static void
on_step(evutil_socket_t fd, short what, void *arg)
{
	struct feed *f = arg;
	struct server *s = f->srv;

	(void)fd;
	(void)what;
	for (int i = 0; i < FEED_STEP; i++) {
		struct store_obj *o = store_walk_next(s->store);
		if (o == NULL) {
			/* memory's objects walked: the disk's next */
			tiers_walk_disk(s, on_disk_object, on_disk_walked, f);
			return;
		}
		peers_rebuild_walk(s->peers, o->key, o->key_len, &o->mark);
	}
	event_active(f->step, EV_TIMEOUT, 0);
}

static uint8_t
on_added(void *arg, const char *key, size_t klen)
{
	struct feed *f = arg;
	struct peers *ps = f->srv->peers;
	uint8_t mark = peers_object_added(ps, key, klen);

	if (peers_wants_rebuild(ps)) {
		peers_rebuild_begin(ps);
		store_walk_start(f->srv->store);
		event_active(f->step, EV_TIMEOUT, 0);
	}
	return mark;
}

static void
on_removed(void *arg, const char *key, size_t klen, uint8_t mark)
{
	struct feed *f = arg;

	peers_object_removed(f->srv->peers, key, klen, mark);
}

int
feed_start(struct server *s)
{
	struct feed *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	f->srv = s;
	f->step = event_new(s->base, -1, 0, on_step, f);
	struct tiers_observer ob = {on_added, on_removed, f};
	if (f->step == NULL || tiers_observe(s, &ob) < 0) {
		if (f->step)
			event_free(f->step);
		free(f);
		return -1;
	}
	s->feed = f;
	return 0;
}

void
feed_stop(struct server *s)
{
	struct feed *f = s->feed;

	if (f == NULL)
		return;
	event_free(f->step);
	free(f);
	s->feed = NULL;
}
