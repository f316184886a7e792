/*
 * PURGE, as Squid and Varnish take it: "PURGE http://host/path" drops
 * every stored variant of that URL from both tiers, and the summary
 * forgets it with the next publication. Only clients in purge_allow may
 * (loopback by default: the operator's own tools on the node); anyone
 * else gets 403, counted and logged, and the cache is untouched.
 *
 * The request never reaches the origin: PURGE is a question to the
 * cache, not a method the origin knows.
 */
#include "purge.h"

#include <stdio.h>

#include "accesslog.h"
#include "acl.h"
#include "deliver.h"
#include "stored.h"

bool
purge_asked(const struct txn *t)
{
	return http_token_eq(t->req.method, t->req.method_len, "PURGE");
}

void
purge_request(struct txn *t)
{
	struct worker *s = t->w;
	char body[64];

	if (!acl_allows(&s->node->conf.purge_allow,
	    (const struct sockaddr *)&t->c->sa)) {
		METRIC_INC(s->m.purge_denied);
		deliver_error(t, 403, SQ_TCP_DENIED, "PURGE is not allowed "
		    "from this address (purge_allow)", false);
		return;
	}
	/* the peers are told even when this node had none */
	unsigned n = stored_drop_everywhere(s, t->url.norm, t->url.len);
	if (n == 0) {
		METRIC_INC(s->m.purge_absent);
		deliver_text(t, 404, SQ_NONE_NONE, RESULT_ADMIN,
		    "not in cache\n", false);
		return;
	}
	METRIC_INC(s->m.purged);
	snprintf(body, sizeof(body), "purged %u\n", n);
	deliver_text(t, 200, SQ_NONE_NONE, RESULT_ADMIN, body, false);
}
