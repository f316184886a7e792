/* Shared by the unit tests: a repeatable random source, distinct URL keys
 * by number, and request heads to test HTTP rules on. */
#ifndef SUMTEST_H
#define SUMTEST_H

#include <stdint.h>

#include "http_parse.h"
#include "sumkey.h"

/* xorshift64; every test process starts from the same seed */
uint64_t test_rand(void);

/* The xxh3 key of a URL made from id; distinct ids, distinct URLs. */
void test_key(uint64_t id, struct sumkey *k);

/* "GET http://a/" with Host and the given field lines (each ending in
 * CRLF), parsed; the caller clears it. */
struct http_head test_request(const char *fields);

#endif
