/*
 * Threads doing what workers do to a shared store, all at once: look up
 * hot keys and check every byte of what they find, keep some bodies as a
 * slow client would (pins), insert new versions (replacing, evicting),
 * invalidate (a purge) and remove (the disk tier's demotions). A body's
 * bytes are a function of its key and version, named in its head, so a
 * body that is not its object's is caught wherever it is read.
 */
#include "storestress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store.h"

#define HELD_MAX 8 /* bodies a thread keeps, as slow clients */

struct shared {
	struct store_stress *cfg;
	struct store *s;
	atomic_bool stop;
	_Atomic uint64_t version;
	_Atomic uint64_t ops, hits, inserts, removes, wrong, over;
	/* the observers' counts: they run under the store's queue lock */
	uint64_t in, out;
};

static unsigned
rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 8) & 0xffffff;
}

static char
byte_of(uint64_t version, size_t i)
{
	return (char)('a' + (version * 31 + i * 7) % 26);
}

static struct store_obj *
make(unsigned k, uint64_t version, size_t len)
{
	char key[48], head[48];
	int kl = snprintf(key, sizeof(key), "http://stress/%u", k);
	int hl = snprintf(head, sizeof(head), "V: %llu\r\n",
	    (unsigned long long)version);
	struct store_body *b = store_body_new(len);
	char chunk[512];

	for (size_t at = 0; at < len; at += sizeof(chunk)) {
		size_t n = len - at < sizeof(chunk) ? len - at : sizeof(chunk);
		for (size_t i = 0; i < n; i++)
			chunk[i] = byte_of(version, at + i);
		store_body_append(&b, chunk, n);
	}
	struct store_meta m = {.status = 200, .lifetime = 60};
	struct store_obj *o = store_obj_new(key, (size_t)kl, head, (size_t)hl,
	    "", 0, &m, b);
	store_body_unref(&b);
	return o;
}

/* Whether o's body is the one its head names. */
static bool
intact(const struct store_obj *o)
{
	const char *v;
	size_t vl;

	if (!store_head_find(o, "V", &v, &vl))
		return false;
	uint64_t version = strtoull(v, NULL, 10);
	for (size_t i = 0; i < o->body->len; i++)
		if (o->body->data[i] != byte_of(version, i))
			return false;
	return true;
}

static void
seen_in(void *arg, struct store_obj *o)
{
	(void)o;
	((struct shared *)arg)->in++;
}

static void
seen_out(void *arg, struct store_obj *o, enum store_exit why)
{
	(void)o;
	(void)why;
	((struct shared *)arg)->out++;
}

static void *
worker(void *arg)
{
	struct shared *sh = arg;
	unsigned seed = (unsigned)(uintptr_t)pthread_self() ^ 0x9e3779b9u;
	struct store_body *held[HELD_MAX] = {0};
	char key[48];

	while (!atomic_load(&sh->stop)) {
		unsigned k = rnd(&seed) % sh->cfg->keys, op = rnd(&seed) % 100;
		int kl = snprintf(key, sizeof(key), "http://stress/%u", k);

		atomic_fetch_add(&sh->ops, 1);
		if (op < 80) {
			struct store_obj *o = store_lookup(sh->s, key,
			    (size_t)kl, NULL, NULL);
			if (o == NULL)
				continue;
			atomic_fetch_add(&sh->hits, 1);
			if (!intact(o))
				atomic_fetch_add(&sh->wrong, 1);
			unsigned slot = rnd(&seed) % HELD_MAX;
			store_body_unref(&held[slot]);
			if (op < 20)
				held[slot] = store_body_ref(o->body);
			if (op < 5 && store_remove(sh->s, o, STORE_EVICTED))
				atomic_fetch_add(&sh->removes, 1);
			store_obj_unref(&o);
		} else if (op < 98) {
			uint64_t v = atomic_fetch_add(&sh->version, 1);
			struct store_obj *o = make(k, v,
			    100 + rnd(&seed) % 6000);
			if (store_insert(sh->s, o))
				atomic_fetch_add(&sh->inserts, 1);
			store_obj_unref(&o);
		} else {
			store_invalidate(sh->s, key, (size_t)kl);
		}
		if (op % 16 == 0 &&
		    store_stats(sh->s).bytes > sh->cfg->budget)
			atomic_fetch_add(&sh->over, 1);
	}
	for (unsigned i = 0; i < HELD_MAX; i++)
		store_body_unref(&held[i]);
	return NULL;
}

int
store_stress_run(struct store_stress *cfg)
{
	struct shared sh = {.cfg = cfg, .s = store_new(cfg->budget)};
	struct store_observer ob = {seen_in, seen_out, &sh};
	pthread_t th[64];
	unsigned n = cfg->threads < 64 ? cfg->threads : 64, started = 0;
	int rc = 0;

	if (sh.s == NULL)
		return -1;
	store_observe(sh.s, &ob);
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, worker, &sh) != 0) {
			rc = -1;
			break;
		}
	struct timespec pause = {cfg->ms / 1000,
	    (long)(cfg->ms % 1000) * 1000000};
	nanosleep(&pause, NULL);
	atomic_store(&sh.stop, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	struct store_stats end = store_stats(sh.s);
	cfg->ops = sh.ops;
	cfg->hits = sh.hits;
	cfg->inserts = sh.inserts;
	cfg->removes = sh.removes;
	cfg->wrong = sh.wrong;
	cfg->over_budget = sh.over;
	cfg->evictions = end.evictions;
	cfg->invalidations = end.invalidations;
	cfg->pinned_left = end.pinned;
	store_free(&sh.s);
	cfg->unbalanced = sh.in - sh.out;
	return rc;
}
