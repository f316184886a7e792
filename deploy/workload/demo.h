/*
 * The demo workload's contract between its origin and its replayer: what a
 * URL on the demo origin means and the exact bytes of its body, so the
 * replayer can check every response that comes back through the cluster.
 *
 *   /ANY/PATH?size=N&max_age=S&change=P&nostore=1&delay=MS
 *
 * Every parameter is optional (size 1024, max_age 3600, change 0). The body
 * is N bytes derived from the request target (path and query, as sent) and
 * the object's version. An object with change=P gets a new version every P
 * seconds of wall-clock time (version = now / P; its ETag says which), so a
 * cache may hold an older version than the origin's, but never bytes that
 * belong to no version.
 */
#ifndef DEMO_H
#define DEMO_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#define DEMO_MAX_SIZE (64u << 20)  /* larger sizes are clamped */

struct demo_obj {
	uint64_t size;
	uint32_t max_age;
	uint32_t change;    /* seconds between versions; 0: never changes */
	uint32_t delay_ms;  /* the origin answers this much later */
	int nostore;
};

/* Reads the query of target (after '?'); unknown parameters are ignored. */
static inline void
demo_parse(const char *target, struct demo_obj *o)
{
	const char *q = strchr(target, '?');

	*o = (struct demo_obj){.size = 1024, .max_age = 3600};
	while (q != NULL) {
		q++;
		unsigned long long v = 0;
		const char *eq = strchr(q, '='), *amp = strchr(q, '&');
		if (eq != NULL && (amp == NULL || eq < amp)) {
			for (const char *d = eq + 1; *d >= '0' && *d <= '9'; d++)
				v = v * 10 + (unsigned)(*d - '0');
			size_t n = (size_t)(eq - q);
			if (n == 4 && memcmp(q, "size", 4) == 0)
				o->size = v > DEMO_MAX_SIZE ? DEMO_MAX_SIZE : v;
			else if (n == 7 && memcmp(q, "max_age", 7) == 0)
				o->max_age = (uint32_t)v;
			else if (n == 6 && memcmp(q, "change", 6) == 0)
				o->change = (uint32_t)v;
			else if (n == 7 && memcmp(q, "nostore", 7) == 0)
				o->nostore = v != 0;
			else if (n == 5 && memcmp(q, "delay", 5) == 0)
				o->delay_ms = (uint32_t)(v > 60000 ? 60000 : v);
		}
		q = amp;
	}
}

static inline uint64_t
demo_version(const struct demo_obj *o, uint64_t unix_seconds)
{
	return o->change == 0 ? 0 : unix_seconds / o->change;
}

/* The seed of one version of the object at target. */
static inline uint64_t
demo_seed(const char *target, uint64_t version)
{
	return XXH3_64bits(target, strlen(target)) ^
	    (version * 0x9E3779B97F4A7C15ull);
}

/* splitmix64: a fast, well-mixed word per position */
static inline uint64_t
demo_word(uint64_t seed, uint64_t index)
{
	uint64_t z = seed + (index + 1) * 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The body bytes [off, off + len) of the version with seed. */
static inline void
demo_fill(uint64_t seed, uint64_t off, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len;) {
		uint64_t pos = off + i, w = demo_word(seed, pos / 8);
		for (unsigned b = (unsigned)(pos % 8); b < 8 && i < len; b++)
			out[i++] = (uint8_t)(w >> (8 * b));
	}
}

#endif
