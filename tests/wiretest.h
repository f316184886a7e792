/* Shared by the unit and end-to-end tests: Summaries as another version
 * of sumcache would send them, validly signed, which wire.c never makes. */
#ifndef WIRETEST_H
#define WIRETEST_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "sumcache.pb-c.h"

/* A Signed Summary from sender of this version and kind (m 64, k as
 * given, a two-byte payload), its MAC under key; the caller frees p. */
struct sum_buf wiretest_versioned(uint32_t version, Sumcache__V1__Kind kind,
    uint32_t k, const char *sender, const void *key, size_t keylen);

#endif
