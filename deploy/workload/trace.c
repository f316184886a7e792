/* Squid native access.log reader shared by replay and sumcache-sim. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "trace.h"

struct client_name {
	char addr[256];   /* an address, or a host name (log_fqdn) */
	unsigned seen;  /* its number in first-seen order */
};

/* Client addresses, found by an open-addressed table of indexes into
 * names: a trace for hundreds of proxies has thousands of clients. */
struct clients {
	struct client_name *names;
	size_t n, cap;
	uint32_t *slots;  /* index + 1; 0 is empty */
	size_t nslots;    /* a power of two, at least 2 n */
};

static uint64_t
hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;  /* FNV-1a */

	while (*s != '\0')
		h = (h ^ (uint8_t)*s++) * 1099511628211ull;
	return h;
}

static int
grow(struct clients *cs)
{
	size_t nslots = cs->nslots ? cs->nslots * 2 : 1024;
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	struct client_name *names = realloc(cs->names, nslots / 2 *
	    sizeof(*names));

	if (slots == NULL || names == NULL) {
		free(slots);
		if (names != NULL)
			cs->names = names;
		return -1;
	}
	for (size_t i = 0; i < cs->n; i++) {
		size_t s = hash_str(names[i].addr) & (nslots - 1);
		while (slots[s] != 0)
			s = (s + 1) & (nslots - 1);
		slots[s] = (uint32_t)i + 1;
	}
	free(cs->slots);
	cs->slots = slots;
	cs->nslots = nslots;
	cs->names = names;
	cs->cap = nslots / 2;
	return 0;
}

/* The first-seen number of addr, adding it; -1 on ENOMEM. */
static long
client_number(struct clients *cs, const char *addr)
{
	if (cs->n == cs->cap && grow(cs) < 0)
		return -1;
	size_t s = hash_str(addr) & (cs->nslots - 1);
	for (; cs->slots[s] != 0; s = (s + 1) & (cs->nslots - 1)) {
		struct client_name *c = &cs->names[cs->slots[s] - 1];
		if (strcmp(c->addr, addr) == 0)
			return c->seen;
	}
	struct client_name *c = &cs->names[cs->n];
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	c->seen = (unsigned)cs->n;
	cs->slots[s] = (uint32_t)++cs->n;
	return c->seen;
}

static int
cmp_addr(const void *a, const void *b)
{
	const char *x = ((const struct client_name *)a)->addr;
	const char *y = ((const struct client_name *)b)->addr;
	struct in_addr ix, iy;

	if (inet_pton(AF_INET, x, &ix) == 1 && inet_pton(AF_INET, y, &iy) == 1) {
		uint32_t hx = ntohl(ix.s_addr), hy = ntohl(iy.s_addr);
		return hx < hy ? -1 : hx > hy;
	}
	return strcmp(x, y);
}

int
trace_read(const char *path, const char *prog, trace_fn fn, void *arg,
    struct trace_clients *out)
{
	FILE *f = fopen(path, "r");
	/* fields are read into buffers as long as the line, so none can be
	 * cut short: a cut URL would silently merge two objects */
	char line[8192];
	struct clients cs = {0};
	int rc = -1;

	*out = (struct trace_clients){0};
	if (f == NULL) {
		fprintf(stderr, "%s: %s: %m\n", prog, path);
		return -1;
	}
	for (struct trace_line l = {.path = path};
	    fgets(line, sizeof(line), f) != NULL;) {
		char client[8192], method[8192], url[8192];
		l.lineno++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			fprintf(stderr, "%s: %s:%zu: line longer than %zu "
			    "bytes\n", prog, path, l.lineno, sizeof(line) - 1);
			goto done;
		}
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%lf %*s %8191s %*s %llu %8191s %8191s", &l.time,
		    client, &l.bytes, method, url) != 5) {
			fprintf(stderr, "%s: %s:%zu: not a Squid native log "
			    "line\n", prog, path, l.lineno);
			goto done;
		}
		if (strlen(client) >= sizeof(cs.names->addr)) {
			fprintf(stderr, "%s: %s:%zu: client name longer than "
			    "%zu bytes\n", prog, path, l.lineno,
			    sizeof(cs.names->addr) - 1);
			goto done;
		}
		if (strcmp(method, "GET") != 0 ||
		    strncmp(url, "http://", 7) != 0) {
			out->skipped++;
			continue;
		}
		long c = client_number(&cs, client);
		if (c < 0) {
			fprintf(stderr, "%s: out of memory\n", prog);
			goto done;
		}
		l.client = (unsigned)c;
		l.url = url;
		if (fn(arg, &l) < 0)
			goto done;
	}
	/* number the clients in address order */
	out->order = malloc((cs.n + 1) * sizeof(*out->order));
	if (out->order == NULL) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto done;
	}
	qsort(cs.names, cs.n, sizeof(*cs.names), cmp_addr);
	for (size_t i = 0; i < cs.n; i++)
		out->order[cs.names[i].seen] = (unsigned)i;
	out->n = cs.n;
	rc = 0;
done:
	fclose(f);
	free(cs.names);
	free(cs.slots);
	return rc;
}

char *
trace_demo_target(const char *url, unsigned long long bytes)
{
	const char *p = strchr(url + 7, '/');  /* after http:// */
	char buf[128];

	if (p != NULL && strncmp(p, "/demo/", 6) == 0)
		return strdup(p);
	snprintf(buf, sizeof(buf), "/real/%016llx?size=%llu",
	    (unsigned long long)XXH3_64bits(url, strlen(url)), bytes);
	return strdup(buf);
}

void
trace_clients_free(struct trace_clients *c)
{
	free(c->order);
	c->order = NULL;
}
