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
#include "tiers.h"

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
changed(struct sqdigest *d, const char *key, size_t klen, bool added)
{
	struct sumkey k;

	if (sumkey_make(d->md5, SUM_METHOD_GET, key, klen, &k) < 0)
		return;
	if (added)
		cbf_add(d->f, &k);
	else
		cbf_remove(d->f, &k);
}

static void
on_added(void *arg, const char *key, size_t klen, uint64_t expires_ms)
{
	(void)expires_ms;
	changed(arg, key, klen, true);
}

static void
on_removed(void *arg, const char *key, size_t klen)
{
	changed(arg, key, klen, false);
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
	struct tiers_observer ob = {on_added, on_removed, d};
	if (d->f == NULL || d->md5 == NULL ||
	    tiers_observe(s, &ob) < 0) {
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
