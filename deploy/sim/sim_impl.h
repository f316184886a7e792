/*
 * The simulator's cluster, as its files share it (sim.h has what the
 * command line sees):
 *
 *   sim.c          a run: the trace's requests, lookups, placement
 *   sim_cache.c    each proxy's SIEVE cache: storing, evicting, copies
 *   sim_publish.c  each proxy's publisher, its messages, and the view
 *                  the others hold of it
 */
#ifndef SIM_IMPL_H
#define SIM_IMPL_H

#include "placement.h"
#include "psum.h"
#include "sim.h"
#include "wire.h"

struct entry {
	uint32_t obj;
	uint32_t newer, older;  /* SIEVE queue, by entry number */
	uint32_t pub_seq;       /* publications of the proxy when added;
	                         * 0 when it was in the last one anyway */
	double expires;
	bool visited;
};

/* A queue in an array: entries at..n-1 are in it, oldest first. */
struct fifo {
	char *v;
	size_t size;            /* of an entry */
	size_t at, n, cap;
};

/* An object evicted while the proxy had made `pubs` publications: in the
 * view until publication pubs + 1, which says so, arrives. */
struct ghost {
	uint32_t obj;
	uint32_t pubs;
};

struct proxy {
	uint64_t used, cap;     /* bytes */
	uint32_t head, tail, hand;  /* newest, oldest, SIEVE hand */
	struct publisher *pub;
	struct psum *view;      /* what every peer holds of this proxy */
	uint32_t pubs;          /* publications made so far */
	uint32_t arrived;       /* of them, those in the view */
	double pub_fpr;         /* (1 - e^(-kn/m))^k at the last arrived */
	struct fifo ghosts;     /* of struct ghost, in eviction order */
	bool live;              /* in the cluster (--membership) */
	struct admit *admit;    /* placement: copies of others' objects */
};

/* A publication on its way: its payload is its own. */
struct flight {
	double at;              /* trace time it arrives */
	unsigned from;
	struct publication pub;
};

struct sim {
	const struct trace *t;
	struct params p;
	struct proxy *px;
	unsigned nodes;         /* proxies, and the one that joins */
	/* the live nodes as placement sees them, and their proxy numbers */
	struct place_node live[MAX_PROXIES + 1];
	unsigned live_px[MAX_PROXIES + 1];
	unsigned nlive;
	struct entry *e;
	size_t ne, ecap;
	uint32_t efree;         /* free list through .newer */
	struct map cache;       /* (proxy, object) -> entry */
	struct map ghost;       /* (proxy, object) -> its ghost's pubs */
	struct fifo flights;    /* of struct flight, oldest first */
	struct stats st;
	struct sum_buf payload, msg;
	uint8_t wire_key[32];
	struct claim_record *claims; /* [asker * nodes + peer] */
	uint32_t *copies;       /* [object]: proxies holding it */
	uint8_t *fetched;       /* [object]: fetched from the origin before */
	uint64_t entries, distinct;  /* copies, and objects with one */
	struct sumkey_hasher *hasher;  /* the trace's */
};

/* ---- sim_cache.c ---- */

void *fifo_push(struct fifo *q);
void *fifo_head(const struct fifo *q);
void fifo_pop(struct fifo *q);

/* Stores obj at proxy i (evicting as need be), fresh until expires. */
void store(struct sim *s, unsigned i, uint32_t obj, double expires,
    double now);
/* Proxy i leaves: its cache is gone. */
void flush(struct sim *s, unsigned i);
/* The fresh copy proxy i holds of obj, fresh for at least `margin` more
 * seconds, or NULL. */
struct entry *fresh_copy(struct sim *s, unsigned i, uint32_t obj,
    double now, double margin);

/* ---- sim_publish.c ---- */

/* Proxy i's node name: what its summaries are signed with and what
 * placement hashes. Returns its length. */
size_t node_name(unsigned i, char *buf, size_t len);

/* Trace time in the publisher's milliseconds. */
uint64_t trace_ms(double t);
/* The publications whose time has come arrive. */
void deliver(struct sim *s, double now);
void publish(struct sim *s, unsigned i, double now);
/* More objects than the filter was sized for: rebuilt at once. */
void rebuild(struct sim *s, unsigned i, double now);
/* Was obj in what proxy i last published (and has arrived)? */
bool in_view(const struct sim *s, unsigned i, uint32_t obj);
/* The peers a publication goes to: the other live nodes. */
static inline unsigned
receivers(const struct sim *s)
{
	return s->nlive > 0 ? s->nlive - 1 : 0;
}

#endif
