/*
 * The peer protocol's messages (proto/sumcache.proto): a Summary inside a
 * Signed envelope whose HMAC-SHA256 under the cluster key covers the
 * Summary's exact bytes. Decoding checks the MAC before it parses the
 * Summary, and the Summary's fields before anyone uses them.
 */
#ifndef WIRE_H
#define WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "publisher.h"
#include "rice.h"
#include "sumkey.h"

/* The largest message a peer may send: a raw array of WIRE_MAX_BITS bits
 * plus framing. */
#define WIRE_MAX_BITS (1ull << 29)
#define WIRE_MAX_BYTES (WIRE_MAX_BITS / 8 + 4096)
#define WIRE_MAX_SENDER 63
#define WIRE_KEY_MIN 16  /* bytes of cluster key, at least */

/*
 * A node's name, as it signs its messages and as peer lines and node_name
 * give it: 1 to WIRE_MAX_SENDER letters, digits, '-', '.' or '_'. It goes
 * into Via, into the logs and into metric labels, so a message naming
 * its sender otherwise is malformed, whatever its MAC.
 */
bool wire_name_ok(const char *name, size_t len);

/* The Summary's version this code writes and reads (proto/): 3, the
 * timed kinds a cuckoo table's (summary/cuckoo.h); 2 carried timed
 * cells, 1 no deadlines. */
#define WIRE_VERSION 3

struct wire_summary {
	char sender[WIRE_MAX_SENDER + 1];
	uint32_t version;
	uint64_t epoch;
	uint64_t seq;
	enum sum_scheme scheme;
	uint64_t m;
	unsigned k;
	bool full;
	uint8_t *payload;     /* owned after wire_decode */
	size_t payload_len;
	uint64_t checksum;
	uint64_t entries;
	bool timed;           /* a table of fingerprints with deadlines
	                       * (summary/cuckoo.h) */
	uint64_t sent_ms;     /* timed: the sender's clock */
};

enum wire_err {
	WIRE_OK = 0,
	WIRE_TOO_BIG = 1,     /* over WIRE_MAX_BYTES */
	WIRE_MALFORMED = 2,   /* not a Signed, or a Summary with bad fields */
	WIRE_BAD_MAC = 3,     /* forged, or a different cluster key */
	WIRE_NOMEM = 4,
	WIRE_VERSION_DIFFERS = 5, /* s->version is the sender's */
};

/* Appends a Signed message for s to out. Returns 0 or -1 (ENOMEM). */
int wire_encode(const struct wire_summary *s, const uint8_t *key,
    size_t keylen, struct sum_buf *out);

/* The same for a publication (summary/publisher.h) signed by sender. */
int wire_encode_publication(const struct publication *pub,
    const char *sender, const uint8_t *key, size_t keylen,
    struct sum_buf *out);

/* Checks and parses a Signed message into *s (payload allocated; free it
 * with wire_summary_clear). On error *s is zeroed, except for
 * WIRE_VERSION_DIFFERS: s->sender and s->version are the message's. */
enum wire_err wire_decode(const uint8_t *in, size_t len, const uint8_t *key,
    size_t keylen, struct wire_summary *s);

void wire_summary_clear(struct wire_summary *s);

/* A decoded Summary as the receiving side takes it (psum_take); it
 * borrows s's payload. */
struct sum_msg wire_msg(const struct wire_summary *s);

/* An Invalidation: the URLs a sender dropped. */
#define WIRE_MAX_URLS 256
#define WIRE_MAX_URL 8192
struct wire_invalidation {
	char sender[WIRE_MAX_SENDER + 1];
	uint64_t time_us;
	char **urls;          /* owned after wire_decode_invalidation */
	size_t nurls;
};

/* Appends a Signed Invalidation of urls[0..n) (1 to WIRE_MAX_URLS, each
 * at most WIRE_MAX_URL bytes) to out. 0, or -1 on ENOMEM. */
int wire_encode_invalidation(const char *sender, uint64_t time_us,
    const char *const *urls, size_t n, const uint8_t *key, size_t keylen,
    struct sum_buf *out);
/* Checks and parses a Signed Invalidation (the MAC first); on error *inv
 * is zeroed. */
enum wire_err wire_decode_invalidation(const uint8_t *in, size_t len,
    const uint8_t *key, size_t keylen, struct wire_invalidation *inv);
void wire_invalidation_clear(struct wire_invalidation *inv);

const char *wire_strerror(enum wire_err e);

#endif
