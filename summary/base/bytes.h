/*
 * Little-endian integers in byte arrays, whatever the host's order: the
 * summary's keys and the disk tier's records are written with them.
 */
#ifndef BYTES_H
#define BYTES_H

#include <stdint.h>

static inline uint64_t
load_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void
store_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t
load_le32(const uint8_t *p)
{
	return (uint32_t)load_le(p, 4);
}

static inline uint64_t
load_le64(const uint8_t *p)
{
	return load_le(p, 8);
}

static inline void
store_le32(uint8_t *p, uint32_t v)
{
	store_le(p, v, 4);
}

static inline void
store_le64(uint8_t *p, uint64_t v)
{
	store_le(p, v, 8);
}

#endif
