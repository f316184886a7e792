/*
 * This node's Squid Cache Digest (PROTOCOLS.md section 2), served at
 * /squid-internal-periodic/store_digest for Squid siblings.
 *
 * A counting filter with Squid's keys (MD5 of method and URL, k = 4, 5
 * bits per entry) follows every store insert and removal; the digest
 * served is a copy of its bits taken at most once per period (a copy of
 * the mask: no walk over the store, nothing that blocks the loop), and
 * says so in Expires. It lists only copies that will still be fresh when
 * it expires, as Squid's own digest does: a claims table (claims.h) keeps
 * each key until its expiry less a period, and the keys whose time has
 * come leave the filter before each copy. Unlike Squid's hourly rebuild,
 * which must judge every object at once, a copy stored between renewals
 * is in the next one without a walk.
 */
#ifndef SQDIGEST_H
#define SQDIGEST_H

#include <stdint.h>
#include <time.h>

#include "psum.h"

struct tiers;

#define SQDIGEST_PATH "/squid-internal-periodic/store_digest"
#define SQDIGEST_BITS_PER_ENTRY 5  /* Squid's default */

struct sqdigest;

/* A digest for up to capacity objects of tr's (which it observes; tr
 * outlives it), re-copied every period_ms. NULL on ENOMEM. */
struct sqdigest *sqdigest_new(struct tiers *tr, uint32_t capacity,
    uint32_t period_ms);
void sqdigest_free(struct sqdigest **d);

struct sqdigest_stats {
	uint64_t entries;        /* the URLs the filter claims now */
	uint64_t table_bytes;    /* the memory of its claims table */
};

/* d's figures, brought up to date: a copy. Any worker, as every
 * function here (d's lock). */
struct sqdigest_stats sqdigest_stats(struct sqdigest *d);

/* A copy of the current digest body into *out (out->p is the caller's
 * to free) and its Last-Modified and Expires times; -1 when there is
 * none or no memory for the copy. */
int sqdigest_get(struct sqdigest *d, time_t now, struct sum_buf *out,
    time_t *made, time_t *expires);

#endif
