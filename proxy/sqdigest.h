/*
 * This node's Squid Cache Digest (PROTOCOLS.md section 2), served at
 * /squid-internal-periodic/store_digest for Squid siblings.
 *
 * A counting filter with Squid's keys (MD5 of method and URL, k = 4, 5
 * bits per entry) follows every store insert and removal, so it is
 * always exact; the digest served is a copy of its bits taken at most
 * once per period (a copy of the mask: no walk over the store, nothing
 * that blocks the loop), and says so in Expires.
 */
#ifndef SQDIGEST_H
#define SQDIGEST_H

#include <stdint.h>
#include <time.h>

#include "proxy.h"
#include "psum.h"

#define SQDIGEST_PATH "/squid-internal-periodic/store_digest"
#define SQDIGEST_BITS_PER_ENTRY 5  /* Squid's default */

struct sqdigest;

/* A digest for up to capacity objects of s->store, re-copied every
 * period_ms. NULL on ENOMEM. */
struct sqdigest *sqdigest_new(struct server *s, uint32_t capacity,
    uint32_t period_ms);
void sqdigest_free(struct sqdigest **d);

/* The current digest body and its Last-Modified and Expires times. */
const struct sum_buf *sqdigest_get(struct sqdigest *d, time_t now,
    time_t *made, time_t *expires);

#endif
