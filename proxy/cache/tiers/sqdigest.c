/*
 * See sqdigest.h.
 */
#include "sqdigest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cbf.h"
#include "claims.h"
#include "digest.h"
#include "sc_assert.h"
#include "store.h"
#include "sumkey.h"
#include "tiers.h"

#define SQDIGEST_MAGIC 0x963f3894u
/* The cache's observers run on whichever worker changes the cache, and
 * any worker serves the digest: lock guards every field but magic. */
struct sqdigest {
	unsigned magic;         /* SQDIGEST_MAGIC (SC_CAST) */
	pthread_mutex_t lock;
	struct cbf *f;           /* counts the claimed keys */
	struct claims *claims;   /* every key stored, claimed or not */
	struct sumkey_hasher *md5;
	uint32_t capacity;
	uint32_t period_s;
	struct sum_buf body;     /* the copy served */
	time_t made;             /* when body was copied; 0 = never */
	bool warned_full;
	struct sqdigest_stats stats;
};

/* A copy is claimed while it will still be fresh when the digest that
 * lists it expires: until its expiry less a period. */
static void
on_added(void *arg, const char *key, size_t klen, uint64_t expires_ms)
{
	struct sqdigest *d = SC_CAST(struct sqdigest, arg, SQDIGEST_MAGIC);
	uint64_t until = claims_until(expires_ms, 1000ull * d->period_s);
	struct sumkey k;
	struct claim *c;

	pthread_mutex_lock(&d->lock);
	if (sumkey_make(d->md5, SUM_METHOD_GET, key, klen, &k) == 0 &&
	    claims_add(d->claims, &k, until, wall_us() / 1000, &c, NULL) == 1)
		cbf_add(d->f, &c->key);
	pthread_mutex_unlock(&d->lock);
}

static void
on_removed(void *arg, const char *key, size_t klen)
{
	struct sqdigest *d = SC_CAST(struct sqdigest, arg, SQDIGEST_MAGIC);
	struct sumkey k;
	struct claim gone;

	pthread_mutex_lock(&d->lock);
	if (sumkey_make(d->md5, SUM_METHOD_GET, key, klen, &k) == 0 &&
	    claims_remove(d->claims, &k, &gone) == 1)
		cbf_remove(d->f, &gone.key);
	pthread_mutex_unlock(&d->lock);
}

struct sqdigest *
sqdigest_new(struct tiers *tr, uint32_t capacity, uint32_t period_ms)
{
	struct sqdigest *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->magic = SQDIGEST_MAGIC;
	pthread_mutex_init(&d->lock, NULL);
	d->capacity = capacity;
	d->period_s = period_ms / 1000 ? period_ms / 1000 : 1;
	uint64_t m = 8ull * digest_mask_size(capacity, SQDIGEST_BITS_PER_ENTRY);
	d->f = cbf_new(SUM_SQUID_MD5, m, SUM_SQUID_K);
	d->md5 = sumkey_hasher_new(SUM_SQUID_MD5);
	d->claims = claims_new();
	struct tiers_observer ob = {.added = on_added, .removed = on_removed,
	    .arg = d};
	if (d->f == NULL || d->md5 == NULL || d->claims == NULL ||
	    tiers_observe(tr, &ob) < 0) {
		sqdigest_free(&d);
		return NULL;
	}
	return d;
}

void
sqdigest_free(struct sqdigest **dp)
{
	struct sqdigest *d = *dp;

	if (d == NULL)
		return;
	*dp = NULL;
	cbf_free(&d->f);
	claims_free(&d->claims);
	sumkey_hasher_free(&d->md5);
	free(d->body.p);
	pthread_mutex_destroy(&d->lock);
	d->magic = 0;
	free(d);
}

struct sqdigest_stats
sqdigest_stats(struct sqdigest *d)
{
	pthread_mutex_lock(&d->lock);
	d->stats.entries = d->f->entries;
	d->stats.table_bytes = claims_bytes(d->claims);
	struct sqdigest_stats st = d->stats;
	pthread_mutex_unlock(&d->lock);
	return st;
}

/* Under d's lock: the body served now, rebuilt when its period is up. */
static const struct sum_buf *
current(struct sqdigest *d, time_t now, time_t *made, time_t *expires)
{
	if (d->made == 0 || now - d->made >= (time_t)d->period_s) {
		struct sum_buf b = {0};
		const struct claim *c;
		while ((c = claims_lapse(d->claims,
		    (uint64_t)now * 1000)) != NULL)
			cbf_remove(d->f, &c->key);
		if (digest_build(d->f, d->capacity, SQDIGEST_BITS_PER_ENTRY,
		    &b) == 0) {
			free(d->body.p);
			d->body = b;
			d->made = now;
		} else {
			free(b.p);  /* out of memory: the old copy stays */
		}
		/* Squid refuses a digest more than 65 % full */
		if (!d->warned_full && d->f->entries > d->capacity) {
			fprintf(stderr, "sumcache: the Squid digest holds %llu "
			    "objects, sized for %u; Squid siblings may refuse "
			    "it\n", (unsigned long long)d->f->entries,
			    d->capacity);
			d->warned_full = true;
		}
	}
	*made = d->made;
	*expires = d->made + (time_t)d->period_s;
	return d->made != 0 ? &d->body : NULL;
}

int
sqdigest_get(struct sqdigest *d, time_t now, struct sum_buf *out,
    time_t *made, time_t *expires)
{
	int rc = -1;

	pthread_mutex_lock(&d->lock);
	const struct sum_buf *b = current(d, now, made, expires);
	if (b != NULL && (out->p = malloc(b->len ? b->len : 1)) != NULL) {
		memcpy(out->p, b->p, b->len);
		out->len = b->len;
		rc = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}
