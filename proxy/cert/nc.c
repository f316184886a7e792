/*
 * Name constraints (nc.h). A CA's key is what an attacker wants from a
 * node: whoever reads it can mint a certificate for any bank that every
 * client trusting the CA accepts. Most deployments intercept a few hosts
 * (package registries, mirrors), so `--make-ca --for` writes a CA that
 * X.509 itself limits to them (RFC 5280 4.2.1.10; critical, as the RFC
 * asks): a stolen key then signs nothing a client takes for another
 * site. The matching below follows OpenSSL's (x509/v3_ncons.c): a DNS
 * base permits itself and every name below it, a base with a leading dot
 * only the names below it; an iPAddress base is an address and a mask.
 */
#include "nc.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/x509v3.h>

static int
ip_of(const char *s, unsigned char ip[16])
{
	if (inet_pton(AF_INET, s, ip) == 1)
		return 4;
	if (inet_pton(AF_INET6, s, ip) == 1)
		return 16;
	return 0;
}

int
nc_value(const struct hostpats *permit, char *out, size_t len, char *err,
    size_t elen)
{
	bool dns = false, ip = false;
	unsigned char addr[16];
	size_t n = (size_t)snprintf(out, len, "critical");

	for (unsigned i = 0; i < permit->n && n < len; i++) {
		const char *p = permit->p[i];
		const char *name = strncmp(p, "*.", 2) == 0 ? p + 2 : p;
		int al = ip_of(name, addr);
		if (strcmp(p, "*") == 0) {
			snprintf(err, elen, "--for '*' would permit every host: "
			    "leave --for out for a CA that may sign for any");
			return -1;
		}
		if (al != 0 && name != p) {
			snprintf(err, elen, "--for %s: no names are below an "
			    "address", p);
			return -1;
		}
		if (al == 4)
			n += (size_t)snprintf(out + n, len - n, ",permitted;IP:"
			    "%s/255.255.255.255", name);
		else if (al == 16)
			n += (size_t)snprintf(out + n, len - n, ",permitted;IP:"
			    "%s/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", name);
		else
			n += (size_t)snprintf(out + n, len - n,
			    ",permitted;DNS:%s", name);
		dns = dns || al == 0;
		ip = ip || al != 0;
	}
	/* a kind no pattern names is shut: permitted subtrees of one kind
	 * leave the other kinds free (RFC 5280) */
	if (!dns && n < len)
		n += (size_t)snprintf(out + n, len - n, ",permitted;DNS:"
		    "invalid");
	if (!ip && n < len)
		n += (size_t)snprintf(out + n, len - n, ",excluded;IP:0.0.0.0/"
		    "0.0.0.0,excluded;IP:::/::");
	if (n >= len) {
		snprintf(err, elen, "too many --for patterns");
		return -1;
	}
	return 0;
}

/* Whether every name below-or-at name (below only, when below) is under
 * the DNS base b (bl bytes). */
static bool
within(const char *name, bool below, const char *b, size_t bl)
{
	size_t nl = strlen(name);

	if (bl == 0)
		return true;      /* an empty base is every name */
	if (b[0] == '.')          /* only the names below b + 1 */
		return (nl + 1 == bl && below && strncasecmp(name, b + 1,
		    nl) == 0) || (nl > bl && strncasecmp(name + nl - bl, b,
		    bl) == 0);
	return (nl == bl && strncasecmp(name, b, bl) == 0) || (nl > bl &&
	    name[nl - bl - 1] == '.' && strncasecmp(name + nl - bl, b,
	    bl) == 0);
}

/* A DNS subtree's base as a C string (it is an IA5String). */
static bool
dns_base(const GENERAL_SUBTREE *st, char *out, size_t len)
{
	const ASN1_IA5STRING *s = st->base->d.dNSName;
	int l = ASN1_STRING_length(s);

	if (st->base->type != GEN_DNS || l < 0 || (size_t)l >= len)
		return false;
	memcpy(out, ASN1_STRING_get0_data(s), (size_t)l);
	out[l] = '\0';
	return memchr(out, '\0', (size_t)l) == NULL;
}

/* Whether the names of a pattern (name, and below: those below it
 * only) meet the DNS subtrees: all of them inside one (all), or any of
 * them inside any (!all). Subtrees of no DNS base: none. */
static bool
dns_meets(const STACK_OF(GENERAL_SUBTREE) *sts, const char *name,
    bool below, bool all, bool *any)
{
	char b[256];

	for (int i = 0; i < sk_GENERAL_SUBTREE_num(sts); i++) {
		if (!dns_base(sk_GENERAL_SUBTREE_value(sts, i), b, sizeof(b)))
			continue;
		*any = true;
		size_t bl = strlen(b);
		if (within(name, below, b, bl))
			return true;
		/* some name below name is inside b: b is below name */
		if (!all && below && b[0] != '.' && within(b, true, name,
		    strlen(name)))
			return true;
	}
	return false;
}

/* Whether ip (al bytes) is inside one of the iPAddress subtrees. */
static bool
ip_meets(const STACK_OF(GENERAL_SUBTREE) *sts, const unsigned char *ip,
    int al, bool *any)
{
	for (int i = 0; i < sk_GENERAL_SUBTREE_num(sts); i++) {
		const GENERAL_SUBTREE *st = sk_GENERAL_SUBTREE_value(sts, i);
		if (st->base->type != GEN_IPADD)
			continue;
		*any = true;
		const ASN1_OCTET_STRING *o = st->base->d.iPAddress;
		const unsigned char *d = ASN1_STRING_get0_data(o);
		if (ASN1_STRING_length(o) != 2 * al)
			continue;
		bool in = true;
		for (int k = 0; k < al && in; k++)
			in = (ip[k] & d[al + k]) == (d[k] & d[al + k]);
		if (in)
			return true;
	}
	return false;
}

bool
nc_permits(X509 *ca, const char *pattern)
{
	int crit = -1;
	NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, &crit,
	    NULL);
	unsigned char ip[16];
	bool any = false, ok;

	if (nc == NULL)
		return crit == -1;   /* none; -2 (two of them): refused */
	if (strcmp(pattern, "*") == 0) {
		NAME_CONSTRAINTS_free(nc);
		return false;
	}
	bool below = strncmp(pattern, "*.", 2) == 0;
	const char *name = below ? pattern + 2 : pattern;
	int al = ip_of(name, ip);
	if (al != 0) {
		ok = ip_meets(nc->permittedSubtrees, ip, al, &any) || !any;
		any = false;
		ok = ok && !ip_meets(nc->excludedSubtrees, ip, al, &any);
	} else {
		ok = dns_meets(nc->permittedSubtrees, name, below, true,
		    &any) || !any;
		ok = ok && !dns_meets(nc->excludedSubtrees, name, below,
		    false, &any);
	}
	NAME_CONSTRAINTS_free(nc);
	return ok;
}

void
nc_describe(X509 *ca, char *out, size_t len)
{
	NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, NULL,
	    NULL);
	size_t n = 0;
	char b[256], a[INET6_ADDRSTRLEN], m[INET6_ADDRSTRLEN];

	out[0] = '\0';
	if (nc == NULL) {
		snprintf(out, len, "any host");
		return;
	}
	for (int i = 0; i < sk_GENERAL_SUBTREE_num(nc->permittedSubtrees) &&
	    n < len; i++) {
		const GENERAL_SUBTREE *st = sk_GENERAL_SUBTREE_value(
		    nc->permittedSubtrees, i);
		const char *sep = n > 0 ? ", " : "";
		if (dns_base(st, b, sizeof(b))) {
			n += (size_t)snprintf(out + n, len - n, "%sDNS %s", sep,
			    b);
		} else if (st->base->type == GEN_IPADD) {
			const ASN1_OCTET_STRING *o = st->base->d.iPAddress;
			const unsigned char *d = ASN1_STRING_get0_data(o);
			int af = ASN1_STRING_length(o) == 8 ? AF_INET :
			    AF_INET6, al = af == AF_INET ? 4 : 16;
			if (ASN1_STRING_length(o) != 2 * al ||
			    inet_ntop(af, d, a, sizeof(a)) == NULL ||
			    inet_ntop(af, d + al, m, sizeof(m)) == NULL)
				continue;
			n += (size_t)snprintf(out + n, len - n, "%sIP %s/%s",
			    sep, a, m);
		}
	}
	if (n == 0)
		snprintf(out, len, "no host");
	NAME_CONSTRAINTS_free(nc);
}
