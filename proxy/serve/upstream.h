/* The request head a fetch sends upstream; see upstream.c. */
#ifndef UPSTREAM_H
#define UPSTREAM_H

#include <stdbool.h>

#include <curl/curl.h>

#include "proxy.h"

/* Who a request goes to: the origin; a sibling whose summary claims the
 * object (only-if-cached, PROTOCOLS.md 4); the key's owner under
 * placement hash (a normal proxy request, with the hop field). */
enum upstream_to {
	UPSTREAM_ORIGIN = 0,
	UPSTREAM_SIBLING,
	UPSTREAM_OWNER,
};

/* The field a node asking a key's owner adds: from a peer, it tells the
 * owner to answer a miss from the origin, never from another peer, so a
 * request crosses at most one placement hop whatever the nodes' views of
 * the live set. Never sent on beyond the owner. */
#define UPSTREAM_HOP_FIELD "sumcache-hop"

/* The field lines for t's request, for CURLOPT_HTTPHEADER: revalidating
 * t->stale, for a whole object (the client's conditionals left out: the
 * cache answers them from the object), to whom; with t->range_whole,
 * without its Range and If-Range (range.c). A new list (free
 * with curl_slist_free_all), or NULL on ENOMEM. */
struct curl_slist *upstream_fields(const struct txn *t, bool revalidate,
    bool whole, enum upstream_to to);

#endif
