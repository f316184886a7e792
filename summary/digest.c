/*
 * Squid Cache Digests, byte-exact. Fields are written and read one at a
 * time in network order, never as a struct image. The mask is the filter's
 * projection as is: Squid's bit b is byte b >> 3, mask 1 << (b & 7), which
 * is our little-endian word layout.
 *
 * The receiver checks are Squid's (peer_digest.cc, CacheDigest.cc): a
 * digest that Squid itself would refuse is refused here too, so a sumcache
 * node and a Squid node agree on which peers have usable digests.
 */
#include "digest.h"

#include <stdlib.h>
#include <string.h>

#include "netorder.h"

uint32_t
digest_mask_size(uint32_t capacity, uint8_t bits_per_entry)
{
	return (uint32_t)(((uint64_t)capacity * bits_per_entry + 7) / 8);
}

int
digest_build(const struct cbf *f, uint32_t capacity, uint8_t bits_per_entry,
    struct sum_buf *out)
{
	uint32_t mask = digest_mask_size(capacity, bits_per_entry);
	uint8_t h[DIGEST_HEADER] = {0};

	if (f->scheme != SUM_SQUID_MD5 || f->k != SUM_SQUID_K ||
	    capacity == 0 || bits_per_entry == 0 || f->m != (uint64_t)mask * 8)
		return SUM_ERR_PARAMS;
	put16(h + 0, DIGEST_VERSION);
	put16(h + 2, DIGEST_REQUIRED);
	put32(h + 4, capacity);
	put32(h + 8, f->entries > UINT32_MAX ? UINT32_MAX :
	    (uint32_t)f->entries);
	put32(h + 12, 0); /* Squid rebuilds rather than deletes */
	put32(h + 16, mask);
	h[20] = bits_per_entry;
	h[21] = SUM_SQUID_K;
	if (sum_buf_put(out, h, sizeof(h)) < 0 ||
	    sum_buf_put(out, f->bits, mask) < 0)
		return -1;
	return 0;
}

int
digest_parse(const uint8_t *in, size_t len, struct psum **out,
    struct digest_info *info, const char **why)
{
	*out = NULL;
	if (len < DIGEST_HEADER) {
		*why = "shorter than the control block";
		return SUM_ERR_MALFORMED;
	}
	*info = (struct digest_info){
		.version = get16(in), .required = get16(in + 2),
		.capacity = get32(in + 4), .count = get32(in + 8),
		.del_count = get32(in + 12), .mask_size = get32(in + 16),
		.bits_per_entry = in[20], .hash_count = in[21],
	};
	if (info->required > DIGEST_VERSION || info->version < DIGEST_REQUIRED ||
	    info->required > info->version) {
		*why = "unsupported digest version";
		return SUM_ERR_MALFORMED;
	}
	if (info->capacity == 0 || info->mask_size == 0 ||
	    info->bits_per_entry == 0 || (int32_t)info->capacity < 0 ||
	    (int32_t)info->mask_size < 0) {
		*why = "a size field is not positive";
		return SUM_ERR_MALFORMED;
	}
	if (info->mask_size != digest_mask_size(info->capacity,
	    info->bits_per_entry)) {
		*why = "mask size does not match capacity and bits per entry";
		return SUM_ERR_MALFORMED;
	}
	if (info->hash_count != SUM_SQUID_K) {
		*why = "hash function count is not 4";
		return SUM_ERR_MALFORMED;
	}
	if (len != DIGEST_HEADER + (size_t)info->mask_size) {
		*why = len > DIGEST_HEADER + (size_t)info->mask_size ?
		    "body longer than declared" : "body shorter than declared";
		return SUM_ERR_MALFORMED;
	}
	uint64_t m = (uint64_t)info->mask_size * 8;
	struct psum *p = psum_new(SUM_SQUID_MD5, m, SUM_SQUID_K);
	if (p == NULL) {
		*why = "out of memory";
		return SUM_ERR_NOMEM;
	}
	memcpy(p->bits, in + DIGEST_HEADER, info->mask_size);
	p->ones = sum_popcount(p->bits, m);
	if ((double)p->ones > DIGEST_MAX_FILL * (double)m) {
		psum_free(&p);
		*why = "more than 65 % of the bits set";
		return SUM_ERR_MALFORMED;
	}
	p->checksum = sum_checksum(p->bits, m);
	p->loaded = true;
	*out = p;
	return 0;
}
