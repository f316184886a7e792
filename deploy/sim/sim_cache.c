/*
 * Each simulated proxy's cache: a byte-bounded SIEVE queue, as
 * proxy/cache/store.c keeps, whose inserts and evictions feed the proxy's
 * publisher; and the array queue the simulator's FIFOs use.
 */
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"

/* Room for one more at the tail: the entries move down to the start when
 * the array is full, or it doubles. */
void *
fifo_push(struct fifo *q)
{
	if (q->n == q->cap && q->at > 0) {
		q->n -= q->at;
		memmove(q->v, q->v + q->at * q->size, q->n * q->size);
		q->at = 0;
	}
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 256;
		q->v = realloc(q->v, q->cap * q->size);
		if (q->v == NULL)
			die("out of memory");
	}
	return q->v + q->n++ * q->size;
}

/* The oldest entry, or NULL when the queue is empty. */
void *
fifo_head(const struct fifo *q)
{
	return q->at < q->n ? q->v + q->at * q->size : NULL;
}

void
fifo_pop(struct fifo *q)
{
	if (++q->at == q->n)
		q->at = q->n = 0;
}

static uint32_t
entry_new(struct sim *s)
{
	if (s->efree != NIL) {
		uint32_t i = s->efree;
		s->efree = s->e[i].newer;
		return i;
	}
	if (s->ne == s->ecap) {
		s->ecap = s->ecap ? s->ecap * 2 : 1 << 16;
		s->e = realloc(s->e, s->ecap * sizeof(*s->e));
		if (s->e == NULL)
			die("out of memory");
	}
	return (uint32_t)s->ne++;
}

static void
evict(struct sim *s, unsigned i)
{
	struct proxy *x = &s->px[i];
	uint32_t v = x->hand != NIL ? x->hand : x->tail;

	while (s->e[v].visited) {
		s->e[v].visited = false;
		v = s->e[v].newer != NIL ? s->e[v].newer : x->tail;
	}
	struct entry *d = &s->e[v];
	x->hand = d->newer;
	if (d->newer != NIL)
		s->e[d->newer].older = d->older;
	else
		x->head = d->older;
	if (d->older != NIL)
		s->e[d->older].newer = d->newer;
	else
		x->tail = d->newer;
	x->used -= s->t->obj[d->obj].size;
	map_del(&s->cache, map_key(i, d->obj));
	s->entries--;
	s->distinct -= --s->copies[d->obj] == 0;
	if (mode_summaries(s->p.mode))
		pub_removed(x->pub, &s->t->obj[d->obj].key);
	if (mode_summaries(s->p.mode) && d->pub_seq < x->pubs) {
		*(struct ghost *)fifo_push(&x->ghosts) =
		    (struct ghost){d->obj, x->pubs};
		map_put(&s->ghost, map_key(i, d->obj), x->pubs);
	}
	d->newer = s->efree;
	s->efree = v;
}

void
store(struct sim *s, unsigned i, uint32_t obj, double expires, double now)
{
	struct proxy *x = &s->px[i];
	const struct object *o = &s->t->obj[obj];

	if (o->nostore || o->size > x->cap)
		return;
	while (x->used + o->size > x->cap)
		evict(s, i);
	uint32_t v = entry_new(s);
	s->e[v] = (struct entry){.obj = obj, .newer = NIL, .older = x->head,
	    .pub_seq = x->pubs, .expires = expires};
	if (x->head != NIL)
		s->e[x->head].newer = v;
	else
		x->tail = v;
	x->head = v;
	x->used += o->size;
	map_put(&s->cache, map_key(i, obj), v);
	s->entries++;
	s->distinct += s->copies[obj]++ == 0;
	if (!mode_summaries(s->p.mode))
		return;
	if (!pub_added(x->pub, &o->key, trace_ms(expires), trace_ms(now)))
		die("out of memory");
	/* back in the cache before the next publication: its removal is
	 * never published, and it stays in the view */
	uint64_t gk = map_key(i, obj);
	if (map_get(&s->ghost, gk) == x->pubs) {
		map_del(&s->ghost, gk);
		s->e[v].pub_seq = 0;
	}
	if (pub_wants_rebuild(x->pub))
		rebuild(s, i, now);
	else if (pub_threshold_reached(x->pub, receivers(s), trace_ms(now)))
		publish(s, i, now);
}

void
flush(struct sim *s, unsigned i)
{
	while (s->px[i].head != NIL)
		evict(s, i);
}

/* The fresh copy proxy i holds of obj, fresh for at least `margin` more
 * seconds, or NULL. */
struct entry *
fresh_copy(struct sim *s, unsigned i, uint32_t obj, double now,
    double margin)
{
	uint32_t v = map_get(&s->cache, map_key(i, obj));

	if (v == NIL || s->e[v].expires - now < margin ||
	    s->e[v].expires <= now)
		return NULL;
	return &s->e[v];
}
