/* What a shared cache keeps of a response; see stored.c. */
#ifndef STORED_H
#define STORED_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "proxy.h"

struct evbuffer;

/* The largest response head taken from an origin or peer. */
#define RESPONSE_HEAD_MAX (256 * 1024)

/* Appends resp's fields a cache keeps ("Name: value\r\n" each), Age too
 * when keep_age (a response passed on, not stored), but any called except
 * (NULL: none). false on ENOMEM. */
bool stored_fields(const struct http_head *resp, struct evbuffer *out,
    bool keep_age, const char *except);
/* The same fields a store keeps, in a new string of *len bytes (the
 * caller frees it); NULL on ENOMEM. */
char *stored_fields_copy(const struct http_head *resp, size_t *len);

/*
 * A new object (one reference) for t's URL from resp, with head (hlen
 * bytes of stored fields, copied) and body (the object takes its own
 * reference); request_time is when the request went out. NULL on ENOMEM
 * or when resp's Vary names a field twice.
 */
struct store_obj *stored_object(const struct txn *t,
    const struct http_head *resp, const char *head, size_t hlen,
    struct store_body *body, time_t request_time);

/* The object a 304 (resp), or a 200 to HEAD that agrees with it, makes of
 * t->stale: its fields updated with resp's, its body shared. A new
 * reference, or NULL. */
struct store_obj *stored_refresh(const struct txn *t,
    const struct http_head *resp, time_t request_time);

/*
 * Whether resp, a 200 to HEAD, describes the stored o (RFC 9111 4.3.5):
 * each validator resp carries (ETag, Last-Modified) and its Content-Length,
 * if any, equal o's. Then resp may refresh o as a 304 would; else o is
 * out of date.
 */
bool stored_head_agrees(const struct store_obj *o,
    const struct http_head *resp);

/* Drops every variant of url (normalized) from both tiers, and has the
 * cluster's peers drop theirs (peers_invalidate). Returns how many
 * objects left this node. */
unsigned stored_drop_everywhere(struct worker *s, const char *url,
    size_t len);

/* After t's unsafe request got resp (below 400): its URL and the same-host
 * Location and Content-Location leave the store, counted. */
void stored_invalidate(const struct txn *t, const struct http_head *resp);

/* Whether o is the variant request (a const struct http_head *) selects
 * by o's Vary: a store_lookup match function. */
bool stored_vary_matches(const struct store_obj *o, void *request);

#endif
