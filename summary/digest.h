/*
 * Squid Cache Digest v5 (PROTOCOLS.md section 2): the 128-byte control
 * block and the mask, built from a squid-md5 filter and parsed from a Squid
 * peer into a peer summary.
 */
#ifndef DIGEST_H
#define DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "cbf.h"
#include "psum.h"
#include "rice.h"

#define DIGEST_HEADER 128
#define DIGEST_VERSION 5
#define DIGEST_REQUIRED 3
/* Squid refuses a digest with more than this share of bits set. */
#define DIGEST_MAX_FILL 0.65

struct digest_info {
	uint16_t version;
	uint16_t required;
	uint32_t capacity;
	uint32_t count;
	uint32_t del_count;
	uint32_t mask_size;
	uint8_t bits_per_entry;
	uint8_t hash_count;
};

/* Mask size in bytes Squid expects for a capacity: the filter built for a
 * digest needs m = 8 * digest_mask_size(...). */
uint32_t digest_mask_size(uint32_t capacity, uint8_t bits_per_entry);

/*
 * Appends the control block and mask of f (squid-md5, k = 4, and
 * m = 8 * digest_mask_size(capacity, bits_per_entry)) to out. count is
 * what Squid reports as entries added. Returns 0, SUM_ERR_PARAMS, or -1.
 */
int digest_build(const struct cbf *f, uint32_t capacity,
    uint8_t bits_per_entry, struct sum_buf *out);

/*
 * Parses a digest with Squid's own receiver checks into a new peer summary
 * (*out, epoch and seq 0). Returns 0 or SUM_ERR_MALFORMED (*why says
 * which check failed) / SUM_ERR_NOMEM.
 */
int digest_parse(const uint8_t *in, size_t len, struct psum **out,
    struct digest_info *info, const char **why);

#endif
