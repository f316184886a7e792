/*
 * Rice coding of sorted positions.
 *
 * For a Bloom filter's changed bits the gaps are close to geometric, for
 * which a Golomb code with a power-of-two divisor (Rice) is within a few
 * percent of the entropy: about log2(mean gap) + 1.5..2 bits per position,
 * against 32 bits in the paper's raw list. The parameter is found by
 * computing the exact size for the few candidates around log2(mean gap).
 *
 * The decoder treats its input as hostile: counts and quotients are bounded
 * by m before any allocation or loop, and nothing is read past len.
 */
#include "rice.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static uint64_t
gap(const uint64_t *pos, size_t i)
{
	return i == 0 ? pos[0] : pos[i] - pos[i - 1] - 1;
}

size_t
rice_size(const uint64_t *pos, size_t n, unsigned r)
{
	uint64_t bits = (uint64_t)n * (r + 1);

	for (size_t i = 0; i < n; i++)
		bits += gap(pos, i) >> r;
	return sum_varint_len(n) + 1 + (size_t)((bits + 7) / 8);
}

unsigned
rice_best_param(const uint64_t *pos, size_t n)
{
	if (n == 0)
		return 0;
	uint64_t mean = (pos[n - 1] + 1) / n;
	unsigned r0 = 0;
	while (r0 < 62 && (2ull << r0) <= mean)
		r0++;
	unsigned best = r0;
	size_t best_size = rice_size(pos, n, r0);
	for (unsigned r = r0 > 2 ? r0 - 2 : 0; r <= r0 + 1 && r < 63; r++) {
		size_t s = rice_size(pos, n, r);
		if (s < best_size) {
			best_size = s;
			best = r;
		}
	}
	return best;
}

struct bitw {
	struct sum_buf *out;
	uint64_t acc; /* pending bits, in the low nbits */
	unsigned nbits;
	int err;
};

static void
put_bits(struct bitw *w, uint64_t v, unsigned n)
{
	/* n <= 32 per call keeps acc from overflowing */
	w->acc = (w->acc << n) | (n ? v & ((1ull << n) - 1) : 0);
	w->nbits += n;
	while (w->nbits >= 8) {
		uint8_t byte = (uint8_t)(w->acc >> (w->nbits - 8));
		if (sum_buf_put(w->out, &byte, 1) < 0)
			w->err = -1;
		w->nbits -= 8;
	}
	w->acc &= w->nbits ? (1ull << w->nbits) - 1 : 0;
}

int
rice_encode(struct sum_buf *out, const uint64_t *pos, size_t n)
{
	uint8_t r = (uint8_t)rice_best_param(pos, n);

	if (sum_buf_varint(out, n) < 0 || sum_buf_put(out, &r, 1) < 0)
		return -1;
	struct bitw w = {out, 0, 0, 0};
	for (size_t i = 0; i < n; i++) {
		uint64_t g = gap(pos, i), q = g >> r;
		for (; q >= 32; q -= 32)
			put_bits(&w, 0xffffffffull, 32);
		put_bits(&w, ((1ull << q) - 1) << 1, (unsigned)q + 1);
		if (r > 32) {
			put_bits(&w, g >> 32, r - 32);
			put_bits(&w, g, 32);
		} else {
			put_bits(&w, g, r);
		}
	}
	if (w.nbits)
		put_bits(&w, 0, 8 - w.nbits);
	return w.err;
}

struct bitr {
	const uint8_t *p;
	size_t len;   /* bytes */
	uint64_t pos; /* bit position */
};

static bool
get_bit(struct bitr *r, unsigned *bit)
{
	if (r->pos >= (uint64_t)r->len * 8)
		return false;
	*bit = (r->p[r->pos >> 3] >> (7 - (r->pos & 7))) & 1;
	r->pos++;
	return true;
}

long
rice_decode(const uint8_t *in, size_t len, uint64_t m, uint64_t **pos,
    size_t *n)
{
	uint64_t count;
	size_t i = sum_varint_read(in, len, &count);

	*pos = NULL;
	*n = 0;
	if (i == 0 || i >= len || count > m)
		return SUM_ERR_MALFORMED;
	unsigned r = in[i++];
	if (r > 62)
		return SUM_ERR_MALFORMED;
	/* every entry takes r + 1 bits at least */
	if (count > 0 && (uint64_t)(len - i) * 8 / (r + 1) < count)
		return SUM_ERR_MALFORMED;
	uint64_t *v = count ? malloc((size_t)count * sizeof(*v)) : NULL;
	if (count && v == NULL)
		return SUM_ERR_NOMEM;
	struct bitr br = {in + i, len - i, 0};
	uint64_t prev = 0;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t q = 0, low = 0;
		unsigned bit;
		for (;;) {
			if (!get_bit(&br, &bit))
				goto bad;
			if (!bit)
				break;
			if (++q > (m >> r))
				goto bad; /* the gap alone would pass m */
		}
		for (unsigned j = 0; j < r; j++) {
			if (!get_bit(&br, &bit))
				goto bad;
			low = low << 1 | bit;
		}
		uint64_t g = q << r | low;
		uint64_t p = k == 0 ? g : prev + 1 + g;
		if (p >= m || (k > 0 && p <= prev))
			goto bad;
		v[k] = p;
		prev = p;
	}
	/* the rest of the last byte must be zero padding */
	uint64_t end = (br.pos + 7) & ~7ull;
	for (unsigned bit; br.pos < end;) {
		if (!get_bit(&br, &bit) || bit)
			goto bad;
	}
	*pos = v;
	*n = (size_t)count;
	return (long)(i + end / 8);
bad:
	free(v);
	return SUM_ERR_MALFORMED;
}
