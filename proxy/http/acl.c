/*
 * CIDR allow lists. Lists are short (a handful of site networks), so a
 * linear scan with a prefix compare is faster than any tree would be.
 */
#include "acl.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int
acl_add(struct acl *a, const char *cidr, const char **why)
{
	struct acl_entry e = {0};
	char buf[64];
	const char *slash = strchr(cidr, '/');
	size_t alen = slash ? (size_t)(slash - cidr) : strlen(cidr);

	if (alen == 0 || alen >= sizeof(buf)) {
		*why = "bad address";
		return -1;
	}
	memcpy(buf, cidr, alen);
	buf[alen] = '\0';
	if (inet_pton(AF_INET, buf, e.addr) == 1) {
		e.family = AF_INET;
		e.prefix = 32;
	} else if (inet_pton(AF_INET6, buf, e.addr) == 1) {
		e.family = AF_INET6;
		e.prefix = 128;
	} else {
		*why = "bad address";
		return -1;
	}
	if (slash) {
		char *end;
		unsigned long p = strtoul(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || p > e.prefix) {
			*why = "bad prefix length";
			return -1;
		}
		e.prefix = (unsigned)p;
	}
	void *n = realloc(a->v, (a->n + 1) * sizeof(*a->v));
	if (n == NULL) {
		*why = "out of memory";
		return -1;
	}
	a->v = n;
	a->v[a->n++] = e;
	return 0;
}

static bool
prefix_match(const uint8_t *x, const uint8_t *y, unsigned bits)
{
	unsigned bytes = bits / 8, rest = bits % 8;

	if (memcmp(x, y, bytes) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (x[bytes] & mask) == (y[bytes] & mask);
}

bool
acl_allows(const struct acl *a, const struct sockaddr *sa)
{
	const uint8_t *addr;
	int family = sa->sa_family;

	if (family == AF_INET) {
		addr = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
	} else if (family == AF_INET6) {
		const struct in6_addr *a6 =
		    &((const struct sockaddr_in6 *)sa)->sin6_addr;
		addr = a6->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a6)) {
			addr += 12;
			family = AF_INET;
		}
	} else {
		return false;
	}
	for (unsigned i = 0; i < a->n; i++)
		if (a->v[i].family == family &&
		    prefix_match(a->v[i].addr, addr, a->v[i].prefix))
			return true;
	return false;
}

void
acl_clear(struct acl *a)
{
	free(a->v);
	a->v = NULL;
	a->n = 0;
}
