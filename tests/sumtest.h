/* Shared by the summary library's unit tests: a repeatable random source
 * and distinct URL keys by number. */
#ifndef SUMTEST_H
#define SUMTEST_H

#include <stdint.h>

#include "sumkey.h"

/* xorshift64; every test process starts from the same seed */
uint64_t test_rand(void);

/* The xxh3 key of a URL made from id; distinct ids, distinct URLs. */
void test_key(uint64_t id, struct sumkey *k);

#endif
