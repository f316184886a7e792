/* PURGE: an operator drops a URL from the cache; see purge.c. */
#ifndef PURGE_H
#define PURGE_H

#include "proxy.h"

/* Whether t's method is PURGE. */
bool purge_asked(const struct txn *t);
/* Answers t, a PURGE of t->url: 200 when copies were dropped, 404 when
 * there were none, 403 from an address purge_allow does not list. */
void purge_request(struct txn *t);

#endif
