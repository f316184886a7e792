/* The request head a fetch sends upstream; see upstream.c. */
#ifndef UPSTREAM_H
#define UPSTREAM_H

#include <stdbool.h>

#include <curl/curl.h>

#include "proxy.h"

/* The field lines for t's request, for CURLOPT_HTTPHEADER: revalidating
 * t->stale, for a whole object (the client's conditionals left out: the
 * cache answers them from the object), or to a peer; with t->range_whole,
 * without its Range and If-Range (range.c). A new list (free
 * with curl_slist_free_all), or NULL on ENOMEM. */
struct curl_slist *upstream_fields(const struct txn *t, bool revalidate,
    bool whole, bool to_peer);

#endif
