/*
 * libFuzzer target for the compact timed summary (summary/cuckoo.h). The
 * first byte picks one of two games:
 *
 *   even  the rest is a message for a peer's copy: nb, kind, the
 *         sender's clock and checksum, then the payload. A full one goes
 *         to an empty copy, a delta to a copy holding a real table's
 *         full summary. The decoders take it or refuse it, and a refusal
 *         leaves the copy as it was.
 *   odd   the rest is a script for a node's table: adds, removals and
 *         new deadlines of 64 keys, and clock steps (STEPS at most), each step a
 *         publication taken by a copy, which must then believe exactly
 *         what the table does (the encoder and decoders checked against
 *         each other).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "cuckoo.h"
#include "rice.h"

#define KEYS 64
/* a script's steps: enough for a table to fill, shift and empty, few
 * enough that the checks after each do not take the fuzzer's time */
#define STEPS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The keys a script plays with, and 16 it never adds; made once. */
static struct sumkey
key_of(unsigned id)
{
	static struct sumkey keys[KEYS + 16];
	static bool made;

	if (!made) {
		for (unsigned j = 0; j < KEYS + 16; j++) {
			uint64_t x = 0x9e3779b97f4a7c15ull * (j + 1);
			for (int i = 0; i < 16; i++) {
				x ^= x >> 29;
				x *= 0xbf58476d1ce4e5b9ull;
				keys[j].bytes[i] = (uint8_t)(x >> 56);
			}
		}
		made = true;
	}
	return keys[id % (KEYS + 16)];
}

static void
message(const uint8_t *data, size_t size)
{
	if (size < 18)
		return;
	uint64_t nb = 1 + data[0] % 64;
	bool full = data[1] & 1;
	uint64_t sent = load_le64(data + 2) % (1ull << 40);
	uint64_t sum = load_le64(data + 10);
	const uint8_t *in = data + 18;
	size_t len = size - 18;
	struct ck_copy *c = ck_copy_new(nb);
	struct ck_table *t = ck_new(nb, 0);
	struct sum_buf b = {0};
	uint64_t tsent, tsum;
	bool tfull;

	if (c == NULL || t == NULL)
		abort();
	if (!full) {
		for (unsigned i = 0; i < 3 * nb && i < KEYS; i++) {
			struct sumkey k = key_of(i);
			(void)ck_add(t, &k, 1000ull * (i + 1) * 977);
		}
		if (ck_publish(t, 0, &b, &tfull, &tsent, &tsum) != 0 ||
		    ck_copy_load(c, tsent, b.p, b.len, tsum) != 0)
			abort();
	}
	size_t held = nb * CK_BUCKET_BYTES + 1;
	uint8_t *before = malloc(held);
	memcpy(before, c->bytes, held);
	int rc = full ? ck_copy_load(c, sent, in, len, sum) :
	    ck_copy_apply(c, sent, in, len, sum);
	if (rc != 0 && memcmp(before, c->bytes, held) != 0)
		abort();
	for (unsigned i = 0; i < 8; i++) {
		struct sumkey k = key_of(i);
		(void)ck_copy_contains(c, &k, sent);
	}
	free(before);
	free(b.p);
	ck_copy_free(&c);
	ck_free(&t);
}

static void
script(const uint8_t *data, size_t size)
{
	uint64_t until[KEYS] = {0}, now = 0;
	uint64_t nb = 1 + (size ? data[0] % 32 : 0);
	struct ck_table *t = ck_new(nb, 0);
	struct ck_copy *c = ck_copy_new(nb);

	if (t == NULL || c == NULL)
		abort();
	if (size > 1 + 2 * STEPS)
		size = 1 + 2 * STEPS;
	for (size_t i = 1; i + 1 < size; i += 2) {
		unsigned op = data[i] & 3, id = data[i] >> 2;
		struct sumkey k = key_of(id);
		/* deadlines from a second to a day out, or never */
		uint64_t later = data[i + 1] == 255 ? UINT64_MAX :
		    now + 1000 + 1000ull * data[i + 1] * data[i + 1];
		switch (op) {
		case 0:
			if (until[id] == 0 && ck_add(t, &k, later) == 0)
				until[id] = later;
			break;
		/* a key not found is one a shift emptied, its code come to
		 * 0: the table must not claim it */
		case 1:
			if (until[id] != 0) {
				if (!ck_remove(t, &k, until[id]) &&
				    ck_contains(t, &k, now))
					abort();
				until[id] = 0;
			}
			break;
		case 2:
			if (until[id] != 0) {
				if (ck_retime(t, &k, until[id], later)) {
					until[id] = later;
					break;
				}
				if (ck_contains(t, &k, now))
					abort();
				/* as the publisher does: in afresh */
				until[id] = ck_add(t, &k, later) == 0 ?
				    later : 0;
			}
			break;
		case 3: {
			now += 37000ull * data[i + 1];
			/* the publisher's walk: a deadline come within range
			 * gets its exact code, its slot found by the top */
			uint64_t n = ck_shift(t, now);
			for (unsigned j = 0; n > 0 && j < KEYS; j++) {
				struct sumkey kj = key_of(j);
				if (until[j] != 0 &&
				    ck_came_within(t, n, until[j]) &&
				    !ck_retime(t, &kj, UINT64_MAX, until[j]))
					abort();
			}
			struct sum_buf b = {0};
			uint64_t sent, sum;
			bool full;
			if (ck_publish(t, now, &b, &full, &sent, &sum) != 0)
				abort();
			int rc = full ? ck_copy_load(c, sent, b.p, b.len,
			    sum) : ck_copy_apply(c, sent, b.p, b.len, sum);
			free(b.p);
			if (rc != 0)
				abort();
			for (unsigned j = 0; j < KEYS + 16; j++) {
				struct sumkey kj = key_of(j);
				if (ck_copy_contains(c, &kj, sent) !=
				    ck_contains(t, &kj, now))
					abort();
			}
			break;
		}
		}
	}
	ck_free(&t);
	ck_copy_free(&c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		script(data + 1, size - 1);
	else
		message(data + 1, size - 1);
	return 0;
}
