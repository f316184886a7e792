/*
 * libFuzzer target for summary messages. The input is tried twice: as a
 * message off the wire (envelope and MAC checks), and as the Summary
 * inside an envelope we sign, so the field checks and summary/'s full
 * and delta decoders see it too (a forged MAC would stop it at the door).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "psum.h"
#include "sumcache.pb-c.h"
#include "wire.h"

/* filters larger than this are checked but not allocated: a 64 MB
 * array per input would leave no time for anything else */
#define FUZZ_MAX_BITS (1u << 20)

static const uint8_t key[] = "fuzzing-cluster-key-0123456789";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
decode(const struct wire_summary *w)
{
	struct sum_msg msg = wire_msg(w);
	struct psum *p = NULL;
	struct sum_buf empty = {0};

	if (w->m > FUZZ_MAX_BITS)
		return;
	if (!w->full) {
		/* the delta follows an empty full summary of its epoch and
		 * kind */
		struct sum_msg e = msg;
		uint64_t *zero = calloc((w->m + 63) / 64, 8);
		if (zero == NULL || (w->timed ? rice_encode(&empty, NULL, 0) :
		    sum_encode_full(zero, w->m, &empty)) < 0) {
			free(zero);
			goto out;
		}
		e.full = true;
		e.seq = w->seq - 1;
		e.payload = empty.p;
		e.len = empty.len;
		e.checksum = w->timed ? 0 : sum_checksum(zero, w->m);
		free(zero);
		if (psum_take(&p, &e, 0) != 0)
			goto out;
	}
	if (psum_take(&p, &msg, 0) == 0) {
		struct sumkey k = {0};
		(void)psum_contains(p, &k, 1000);
	}
out:
	free(empty.p);
	psum_free(&p);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_summary w;
	uint8_t tag[32];
	unsigned n = 0;

	if (wire_decode(data, size, key, sizeof(key) - 1, &w) == WIRE_OK) {
		decode(&w);
		wire_summary_clear(&w);
	}
	Sumcache__V1__Signed sig = SUMCACHE__V1__SIGNED__INIT;
	sig.summary.data = (uint8_t *)data;
	sig.summary.len = size;
	if (HMAC(EVP_sha256(), key, sizeof(key) - 1, data, size, tag, &n) ==
	    NULL)
		return 0;
	sig.mac.data = tag;
	sig.mac.len = n;
	size_t len = sumcache__v1__signed__get_packed_size(&sig);
	uint8_t *buf = malloc(len);
	if (buf == NULL)
		return 0;
	sumcache__v1__signed__pack(&sig, buf);
	if (wire_decode(buf, len, key, sizeof(key) - 1, &w) == WIRE_OK) {
		decode(&w);
		wire_summary_clear(&w);
	}
	free(buf);
	return 0;
}
