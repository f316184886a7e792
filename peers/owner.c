/*
 * Placement hash in the daemon: the owner of a key among this node and
 * its peers (placement.h has the rule, shared with the simulator).
 */
#include "peers_impl.h"

#include <string.h>

#include "clock.h"
#include "placement.h"

/* Whether p takes part in placement now: a sumcache peer, named as it
 * names itself, and up; under sharing none (no summaries to say it is
 * back) a down peer is tried again once its backoff has passed. */
static bool
placeable(const struct peers *ps, const struct peer *p, uint64_t now)
{
	if (p->self || p->retired || p->spec.type != PEER_SUMCACHE ||
	    (p->found && !p->named))
		return false;
	return p->up || (!ps->conf.summaries && now >= p->probe_at_ms);
}

static struct peer *owner(struct peers *ps, const char *key, size_t len);

struct peer *
peers_owner(struct peers *ps, const char *key, size_t len)
{
	peers_enter(ps);
	struct peer *o = owner(ps, key, len);
	peers_leave(ps);
	return o;
}

static struct peer *
owner(struct peers *ps, const char *key, size_t len)
{
	struct place_node nodes[PEERS_MAX + 1];
	struct peer *who[PEERS_MAX + 1];
	const char *self = ps->conf.node_name;
	uint64_t now = mono_ms();
	size_t n = 0;

	nodes[n] = (struct place_node){place_hash(self, strlen(self)),
	    ps->conf.weight};
	who[n++] = NULL;
	for (size_t i = 0; i < ps->n && n < PEERS_MAX + 1; i++) {
		struct peer *p = ps->v[i];
		if (!placeable(ps, p, now))
			continue;
		nodes[n] = (struct place_node){place_hash(p->spec.name,
		    strlen(p->spec.name)), p->spec.weight};
		who[n++] = p;
	}
	struct peer *o = who[place_owner(nodes, n, place_hash(key, len))];
	if (o != NULL)
		peer_hold(o);
	return o;
}
