/*
 * What a shared cache keeps of a response (RFC 9111): the fields it stores
 * (no hop-by-hop, no framing, no Age), the object it makes of a response
 * (freshness from the response, the Vary key from the request), the
 * object a 304 refreshes (the stored fields updated with the 304's, the
 * same body), and what a successful unsafe method invalidates (its URL,
 * and its Location and Content-Location on the same host, 4.4). fetch.c
 * decides when; this file says what.
 */
#include "stored.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>

#include "peers.h"
#include "tiers.h"
#include "writer.h"

/* A response field a cache keeps: no hop-by-hop, no framing, and no Age
 * unless asked (it is recomputed on every hit). */
static bool
kept_field(const struct http_head *resp, const struct http_field *fl,
    bool keep_age)
{
	return !http_field_hop_by_hop(resp, fl) &&
	    !http_field_is(fl, "content-length") &&
	    (keep_age || !http_field_is(fl, "age"));
}

bool
stored_fields(const struct http_head *resp, struct evbuffer *out,
    bool keep_age, const char *except)
{
	for (unsigned i = 0; i < resp->nfields; i++) {
		const struct http_field *fl = &resp->fields[i];
		if (!kept_field(resp, fl, keep_age) ||
		    (except != NULL && http_field_is(fl, except)))
			continue;
		if (!writer_field(out, fl->name, fl->nlen, fl->value,
		    fl->vlen))
			return false;
	}
	return true;
}

char *
stored_fields_copy(const struct http_head *resp, size_t *len)
{
	struct evbuffer *h = evbuffer_new();
	char *p = NULL;

	if (h != NULL && stored_fields(resp, h, false, NULL)) {
		*len = evbuffer_get_length(h);
		p = malloc(*len + 1);
		if (p != NULL)
			evbuffer_remove(h, p, *len);
	}
	if (h != NULL)
		evbuffer_free(h);
	return p;
}

unsigned
stored_drop_everywhere(struct worker *s, const char *url, size_t len)
{
	struct node *n = s->node;
	if (n->peers != NULL)
		peers_invalidate(n->peers, url, len);
	return tiers_invalidate(n->tiers, url, len);
}

static void
invalidate_one(struct worker *s, const struct url *base, const char *v,
    size_t vl)
{
	struct url u;
	const char *why;

	if (vl > 0 && v[0] == '/') {
		/* path-absolute: same origin as the request */
		size_t n = base->path_off + vl;
		char *abs = malloc(n);
		if (abs == NULL)
			return;
		memcpy(abs, base->norm, base->path_off);
		memcpy(abs + base->path_off, v, vl);
		int rc = url_parse_absolute(abs, n, &u, &why);
		free(abs);
		if (rc < 0)
			return;
	} else if (url_parse_absolute(v, vl, &u, &why) < 0) {
		return;
	}
	/* RFC 9111 4.4: only URLs on the request's own host */
	if (u.host_len == base->host_len && u.port == base->port &&
	    memcmp(u.norm + u.host_off, base->norm + base->host_off,
		u.host_len) == 0)
		METRIC_ADD(s->m.invalidations, stored_drop_everywhere(s, u.norm, u.len));
	url_clear(&u);
}

void
stored_invalidate(const struct txn *t, const struct http_head *resp)
{
	struct worker *s = t->w;
	static const char *const safe[] = {"GET", "HEAD", "OPTIONS", "TRACE"};

	if (resp->status >= 400)
		return;
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (http_token_eq(t->req.method, t->req.method_len, safe[i]))
			return;
	METRIC_ADD(s->m.invalidations, stored_drop_everywhere(s, t->url.norm,
	    t->url.len));
	const struct http_field *fl;
	if ((fl = http_field_find(resp, "location")) != NULL)
		invalidate_one(s, &t->url, fl->value, fl->vlen);
	if ((fl = http_field_find(resp, "content-location")) != NULL)
		invalidate_one(s, &t->url, fl->value, fl->vlen);
}

struct store_obj *
stored_object(const struct txn *t, const struct http_head *resp,
    const char *head, size_t hlen, struct store_body *body,
    time_t request_time)
{
	time_t now = time(NULL);
	struct cc respcc;
	size_t vlen = 0;
	/* each name of the Vary list once, with the request's values: a key
	 * longer than both heads names a field twice, and is not stored */
	size_t vcap = t->req.len + resp->len + 16;
	char *vkey = malloc(vcap);
	bool keyed = vkey != NULL;

	for (unsigned i = 0; i < resp->nfields && keyed; i++)
		if (http_field_is(&resp->fields[i], "vary"))
			keyed = cachectl_varykey(&t->req, resp->fields[i].value,
			    resp->fields[i].vlen, vkey, vcap, &vlen);
	if (!keyed) {
		free(vkey);
		return NULL;
	}
	cc_parse(resp, false, &respcc);
	struct store_meta meta = {
		.status = resp->status,
		.response_time = now,
		.initial_age = cachectl_initial_age(resp, request_time, now),
		.lifetime = cachectl_lifetime(resp, &respcc,
		    refresh_find(&t->w->node->conf.refresh, t->url.norm), now),
		.must_revalidate = respcc.must_revalidate,
		.no_cache = respcc.no_cache,
	};
	struct store_obj *o = store_obj_new(t->url.norm, t->url.len, head,
	    hlen, vkey, vlen, &meta, body);
	free(vkey);
	return o;
}

bool
stored_head_agrees(const struct store_obj *o, const struct http_head *resp)
{
	const struct http_field *etag = http_field_find(resp, "etag");
	const struct http_field *lm = http_field_find(resp, "last-modified");
	const char *v;
	size_t vl;

	if (etag != NULL && (!store_head_find(o, "etag", &v, &vl) ||
	    vl != etag->vlen || memcmp(v, etag->value, vl) != 0))
		return false;
	if (lm != NULL && (!store_head_find(o, "last-modified", &v, &vl) ||
	    http_date_parse(v, vl) != http_date_parse(lm->value, lm->vlen)))
		return false;
	return resp->content_length < 0 ||
	    (uint64_t)resp->content_length == o->body->len;
}

struct store_obj *
stored_refresh(const struct txn *t, const struct http_head *resp,
    time_t request_time)
{
	struct store_obj *old = t->stale;
	struct evbuffer *h = evbuffer_new();
	struct store_obj *o = NULL;
	const char *n, *v, *why;
	size_t nl, vl, pos = 0;
	struct http_head merged;

	if (h == NULL)
		return NULL;
	while (store_head_next(old, &pos, &n, &nl, &v, &vl)) {
		bool replaced = false;
		for (unsigned i = 0; i < resp->nfields && !replaced; i++) {
			const struct http_field *fl = &resp->fields[i];
			replaced = fl->nlen == nl &&
			    strncasecmp(fl->name, n, nl) == 0 &&
			    kept_field(resp, fl, false);
		}
		if (!replaced)
			writer_field(h, n, nl, v, vl);
	}
	stored_fields(resp, h, false, NULL);
	size_t len = evbuffer_get_length(h);
	const char *p = (const char *)evbuffer_pullup(h, -1);
	struct http_limits lim = {RESPONSE_HEAD_MAX, RESPONSE_HEAD_MAX, 2000};
	const char *fields;
	size_t flen;
	if (http_parse_fields(old->meta.status, p != NULL ? p : "", len, &lim,
	    &merged, &fields, &flen, &why) == 0) {
		o = stored_object(t, &merged, fields, flen, old->body,
		    request_time);
		http_head_clear(&merged);
	}
	evbuffer_free(h);
	return o;
}

bool
stored_vary_matches(const struct store_obj *o, void *request)
{
	const struct http_head *req = request;
	char stack[2048];
	size_t len = 0, pos = 0, nl, vl;
	const char *n, *v;
	bool same = true;

	if (o->vary_len == 0)
		return true;
	/* a key that outgrows the stored one cannot match it: room for
	 * that much is enough, whatever the request's size */
	size_t cap = o->vary_len + 3;
	char *key = cap <= sizeof(stack) ? stack : malloc(cap);
	if (key == NULL)
		return false;
	while (same && store_head_next(o, &pos, &n, &nl, &v, &vl))
		if (http_token_eq(n, nl, "vary"))
			same = cachectl_varykey(req, v, vl, key, cap, &len);
	same = same && len == o->vary_len &&
	    memcmp(key, store_obj_varykey(o), len) == 0;
	if (key != stack)
		free(key);
	return same;
}
