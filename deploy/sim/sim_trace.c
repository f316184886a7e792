/*
 * The trace as the simulator holds it: each distinct URL an object (its
 * key hashed once, its size and freshness as the demo origin would serve
 * it, the bytes of its ICP query and reply), each line a request. Client
 * names are numbered in address order, as the replayer numbers them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "demo.h"
#include "icp.h"
#include "placement.h"
#include "sim.h"
#include "trace.h"

void
die(const char *what)
{
	fprintf(stderr, "sumcache-sim: %s\n", what);
	exit(1);
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (p == NULL)
		die("out of memory");
	return p;
}

static void
urls_grow(struct trace *t)
{
	struct url_table u = {.nslots = t->urls.nslots ? t->urls.nslots * 2 :
	    1 << 16};

	u.hash = xcalloc(u.nslots, sizeof(*u.hash));
	u.obj = xcalloc(u.nslots, sizeof(*u.obj));
	u.urls = t->urls.urls;
	for (size_t i = 0; i < t->urls.nslots; i++) {
		if (t->urls.obj[i] == 0)
			continue;
		size_t s = t->urls.hash[i] & (u.nslots - 1);
		while (u.obj[s] != 0)
			s = (s + 1) & (u.nslots - 1);
		u.hash[s] = t->urls.hash[i];
		u.obj[s] = t->urls.obj[i];
	}
	free(t->urls.hash);
	free(t->urls.obj);
	t->urls = u;
	t->urls.urls = realloc(t->urls.urls, u.nslots / 2 * sizeof(char *));
	if (t->urls.urls == NULL)
		die("out of memory");
}

static uint32_t
new_object(struct trace *t, const char *url, unsigned long long bytes)
{
	struct object *o;
	size_t len = strlen(url);

	if (t->nobj == UINT32_MAX - 1)
		die("more than 2^32 objects");
	if (t->nobj == t->objcap) {
		t->objcap = t->objcap ? t->objcap * 2 : 1 << 16;
		t->obj = realloc(t->obj, t->objcap * sizeof(*t->obj));
		if (t->obj == NULL)
			die("out of memory");
	}
	o = &t->obj[t->nobj];
	/* served as the demo origin serves what the replayer asks it for */
	char *target = trace_demo_target(url, bytes);
	struct demo_obj d;
	if (target == NULL)
		die("out of memory");
	demo_parse(target, &d);
	free(target);
	*o = (struct object){
		.size = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes,
		.max_age = d.max_age,
		.nostore = d.nostore,
	};
	if (sumkey_make(t->hasher, SUM_METHOD_GET, url, len, &o->key) < 0)
		die("cannot hash a URL");
	o->place = place_hash(url, len);
	uint8_t dgram[ICP_MAX];
	size_t q = icp_encode(dgram, ICP_OP_QUERY, 1, url, len);
	size_t r = icp_encode(dgram, ICP_OP_HIT, 1, url, len);
	if (q == 0 || r == 0)
		die("a URL too long for ICP");
	o->icp_query = (uint16_t)q;
	o->icp_reply = (uint16_t)r;
	return (uint32_t)t->nobj++;
}

static uint32_t
intern(struct trace *t, const char *url, unsigned long long bytes)
{
	if (t->nobj >= t->urls.nslots / 2)
		urls_grow(t);
	uint64_t h = XXH3_64bits(url, strlen(url));
	size_t s = h & (t->urls.nslots - 1);
	for (; t->urls.obj[s] != 0; s = (s + 1) & (t->urls.nslots - 1)) {
		uint32_t i = t->urls.obj[s] - 1;
		if (t->urls.hash[s] == h && strcmp(t->urls.urls[i], url) == 0)
			return i;
	}
	uint32_t i = new_object(t, url, bytes);
	t->urls.hash[s] = h;
	t->urls.obj[s] = i + 1;
	if ((t->urls.urls[i] = strdup(url)) == NULL)
		die("out of memory");
	return i;
}

static int
keep(void *arg, const struct trace_line *l)
{
	struct trace *t = arg;

	if (t->nreq == t->reqcap) {
		t->reqcap = t->reqcap ? t->reqcap * 2 : 1 << 16;
		t->req = realloc(t->req, t->reqcap * sizeof(*t->req));
		if (t->req == NULL)
			die("out of memory");
	}
	/* Squid logs a request when it ends, so times may go back a little;
	 * they only age copies and pace the max interval */
	t->req[t->nreq++] = (struct request){
		.obj = intern(t, l->url, l->bytes),
		.client = l->client,
		.time = l->time,
	};
	return 0;
}

void
trace_load(struct trace *t, const char *path)
{
	struct trace_clients c;

	t->hasher = sumkey_hasher_new(SUM_XXH3);
	if (t->hasher == NULL)
		die("out of memory");
	if (trace_read(path, "sumcache-sim", keep, t, &c) < 0)
		exit(1);
	if (t->nreq == 0)
		die("the trace has no GET http:// requests");
	for (size_t i = 0; i < t->nreq; i++)
		t->req[i].client = c.order[t->req[i].client];
	t->nclients = c.n;
	trace_clients_free(&c);
	for (size_t i = 0; i < t->nobj; i++)
		free(t->urls.urls[i]);
	free(t->urls.urls);
	free(t->urls.hash);
	free(t->urls.obj);
	t->urls = (struct url_table){0};
}

