/*
 * See feed.h.
 *
 * During a rebuild an object belongs in the new filter once the walk has
 * passed it or it arrived after the rebuild began. Each object's mark says
 * which: it holds the parity of the filter that counts it, and a rebuild
 * flips the parity. Outside a rebuild every stored object carries the
 * current parity, so at the start of the next one none carries the new
 * parity and the walk adds each exactly once.
 */
#include "feed.h"

#include <stdlib.h>

#include <event2/event.h>

#include "peers.h"

/* Objects added per loop turn: about a millisecond of hashing. */
#define FEED_STEP 4096

struct feed {
	struct server *srv;
	struct event *step;
	bool rebuilding;
	uint8_t parity;       /* of the filter in use */
};

static void
on_step(evutil_socket_t fd, short what, void *arg)
{
	struct feed *f = arg;
	struct server *s = f->srv;
	uint8_t next = !f->parity;

	(void)fd;
	(void)what;
	for (int i = 0; i < FEED_STEP; i++) {
		struct store_obj *o = store_walk_next(s->store);
		if (o == NULL) {
			peers_rebuild_end(s->peers);
			f->parity = next;
			f->rebuilding = false;
			return;
		}
		if (o->mark != next) {
			peers_rebuild_add(s->peers, o->key, o->key_len);
			o->mark = next;
		}
	}
	event_active(f->step, EV_TIMEOUT, 0);
}

static void
on_insert(void *arg, struct store_obj *o)
{
	struct feed *f = arg;
	struct peers *ps = f->srv->peers;

	peers_object_added(ps, o->key, o->key_len);
	o->mark = f->parity;
	if (f->rebuilding) {
		peers_rebuild_add(ps, o->key, o->key_len);
		o->mark = !f->parity;
	} else if (peers_wants_rebuild(ps)) {
		peers_rebuild_begin(ps);
		f->rebuilding = true;
		store_walk_start(f->srv->store);
		event_active(f->step, EV_TIMEOUT, 0);
	}
}

static void
on_remove(void *arg, struct store_obj *o)
{
	struct feed *f = arg;
	struct peers *ps = f->srv->peers;

	peers_object_removed(ps, o->key, o->key_len);
	if (f->rebuilding && o->mark != f->parity)
		peers_rebuild_remove(ps, o->key, o->key_len);
}

int
feed_start(struct server *s)
{
	struct feed *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	f->srv = s;
	f->step = event_new(s->base, -1, 0, on_step, f);
	struct store_observer ob = {on_insert, on_remove, f};
	if (f->step == NULL || store_observe(s->store, &ob) < 0) {
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
