/*
 * Stale copies served on purpose (RFC 5861).
 *
 * stale-while-revalidate: a copy stale by no more than the window is
 * served at once, and a revalidation runs behind it (request.c's
 * refresh_behind). That revalidation is a transaction of its own with no
 * client (txn_clientless, txn.c): the request that found the stale copy,
 * parsed again, so that the fetch asks for the same variant. It is a busy
 * object's fetch like any other (busy.c): one at a time per URL while it
 * runs, joined by whoever misses meanwhile; what it gets is stored (a 304
 * refreshes the copy; a 200 that memory can hold replaces it); what it
 * cannot keep (a body too large for memory) it drops. It writes an
 * access-log line as a client's would. The same kind of transaction
 * carries on a range request's fetch of the whole object once the client
 * has its bytes (fetchrecv.c). This file is the rules, below the fetch.
 *
 * stale-if-error: when the origin answers 500, 502, 503 or 504, or cannot
 * be reached, a stale copy within the window answers instead. Neither
 * ever serves past must-revalidate, proxy-revalidate, s-maxage or
 * no-cache (cachectl.c has the rules).
 */
#include "stale.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/util.h>

#include "txn.h"

void
stale_entry(const struct store_obj *o, struct cachectl_entry *e)
{
	*e = (struct cachectl_entry){
		.lifetime = o->meta.lifetime,
		.age = store_meta_age(&o->meta, time(NULL)),
		.must_revalidate = o->meta.must_revalidate,
		.no_cache = o->meta.no_cache,
		.swr = CC_ABSENT,
		.sie = CC_ABSENT,
	};
	if (e->age < e->lifetime)
		return;
	struct cc cc;
	size_t pos = 0, nl, vl;
	const char *n, *v;
	cc_init(&cc);
	while (store_head_next(o, &pos, &n, &nl, &v, &vl))
		if (http_token_eq(n, nl, "cache-control"))
			cc_parse_value(&cc, v, vl, false);
	cachectl_entry_stale_rules(e, &cc);
}

bool
stale_error_status(int status)
{
	return status == 500 || status == 502 || status == 503 ||
	    status == 504;
}

bool
stale_on_error(const struct txn *t, bool disconnected)
{
	struct cachectl_entry e;

	if (t->stale == NULL)
		return false;
	stale_entry(t->stale, &e);
	return cachectl_stale_on_error(&e, &t->reqcc, disconnected);
}

static void
drop_stale(struct txn *t)
{
	store_obj_unref(&t->stale);
}

static const struct txn_part stale_part = {"stale copy", drop_stale};

void
stale_keep(struct txn *t, struct store_obj *o)
{
	if (t->stale != o)
		store_obj_unref(&t->stale);
	t->stale = o;
	txn_hold(t, &stale_part);
}
