/* Client access control: a list of CIDR prefixes, IPv4 and IPv6. */
#ifndef ACL_H
#define ACL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct acl_entry {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned prefix;
};

struct acl {
	struct acl_entry *v;
	unsigned n;
};

/* Appends "addr/prefix" (or a bare address); -1 with *why when malformed. */
int acl_add(struct acl *a, const char *cidr, const char **why);
/* Whether the address matches an entry; IPv4-mapped IPv6 counts as IPv4. */
bool acl_allows(const struct acl *a, const struct sockaddr *sa);
void acl_clear(struct acl *a);

#endif
