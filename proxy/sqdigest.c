/*
 * See sqdigest.h.
 */
#include "sqdigest.h"

#include <stdio.h>
#include <stdlib.h>

#include "cbf.h"
#include "digest.h"
#include "store.h"
#include "sumkey.h"

struct sqdigest {
	struct cbf *f;
	struct sumkey_hasher *md5;
	uint32_t capacity;
	uint32_t period_s;
	struct sum_buf body;     /* the copy served */
	time_t made;             /* when body was copied; 0 = never */
	bool warned_full;
};

static void
changed(void *arg, struct store_obj *o, bool added)
{
	struct sqdigest *d = arg;
	struct sumkey k;

	if (sumkey_make(d->md5, SUM_METHOD_GET, o->key, o->key_len, &k) < 0)
		return;
	if (added)
		cbf_add(d->f, &k);
	else
		cbf_remove(d->f, &k);
}

static void
on_insert(void *arg, struct store_obj *o)
{
	changed(arg, o, true);
}

static void
on_remove(void *arg, struct store_obj *o)
{
	changed(arg, o, false);
}

struct sqdigest *
sqdigest_new(struct server *s, uint32_t capacity, uint32_t period_ms)
{
	struct sqdigest *d = calloc(1, sizeof(*d));

	if (d == NULL)
		return NULL;
	d->capacity = capacity;
	d->period_s = period_ms / 1000 ? period_ms / 1000 : 1;
	uint64_t m = 8ull * digest_mask_size(capacity, SQDIGEST_BITS_PER_ENTRY);
	d->f = cbf_new(SUM_SQUID_MD5, m, SUM_SQUID_K, 0);
	d->md5 = sumkey_hasher_new(SUM_SQUID_MD5);
	struct store_observer ob = {on_insert, on_remove, d};
	if (d->f == NULL || d->md5 == NULL ||
	    store_observe(s->store, &ob) < 0) {
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
	sumkey_hasher_free(&d->md5);
	free(d->body.p);
	free(d);
}

const struct sum_buf *
sqdigest_get(struct sqdigest *d, time_t now, time_t *made, time_t *expires)
{
	if (d->made == 0 || now - d->made >= (time_t)d->period_s) {
		struct sum_buf b = {0};
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
