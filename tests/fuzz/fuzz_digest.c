/*
 * libFuzzer target for the Squid Cache Digest parser: any body is either
 * refused by Squid's receiver checks or loaded into a peer summary.
 */
#include <stddef.h>
#include <stdint.h>

#include "digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct psum *p = NULL;
	struct digest_info info;
	const char *why;

	if (digest_parse(data, size, &p, &info, &why) == 0)
		psum_free(&p);
	return 0;
}
