/*
 * URLs whose last answer could not be stored, remembered for a while so
 * that the next requests for them go straight to the origin (Varnish's
 * hit-for-pass): not to the key's owner under placement hash, whose copy
 * cannot exist, nor through an ICP round or a busy object's wait, which
 * could not end in a shared answer either.
 */
#ifndef PASS_H
#define PASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How long a URL stays marked after an answer that could not be stored:
 * Varnish's default for a hit-for-pass object. An answer that can be
 * stored clears the mark sooner. */
#define PASS_TTL_MS (120 * 1000)
/* URLs remembered at once, at most (a power of two): 16 bytes each. */
#define PASS_SLOTS (1u << 14)

struct pass;

/* A table for PASS_SLOTS URLs; NULL on ENOMEM. */
struct pass *pass_new(void);
void pass_free(struct pass **p);

/* url's answer could not be stored (whatever the request asked): marks it
 * until now_ms + PASS_TTL_MS. A URL whose slot another took is simply
 * forgotten (it then takes the usual way once more). */
void pass_note(struct pass *p, const char *url, size_t len, uint64_t now_ms);
/* url's answer could be stored: the mark goes. */
void pass_clear(struct pass *p, const char *url, size_t len);
/* Whether url is marked at now_ms. */
bool pass_marked(const struct pass *p, const char *url, size_t len,
    uint64_t now_ms);

#endif
