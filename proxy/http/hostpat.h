/*
 * Host patterns, as tls_intercept and tls_no_intercept list them: "*"
 * (every host), "*.example.org" (every name under example.org, not
 * example.org itself, as a wildcard certificate reads), or one exact
 * name or IP literal. Matching is case-blind and ignores a trailing dot.
 */
#ifndef HOSTPAT_H
#define HOSTPAT_H

#include <stdbool.h>

#define HOSTPAT_MAX 256

struct hostpats {
	char *p[HOSTPAT_MAX];        /* lower case, no trailing dot */
	unsigned n;
};

/* Adds pattern text; 0, or -1 with the reason in *why. */
int hostpat_add(struct hostpats *hp, const char *text, const char **why);
void hostpat_clear(struct hostpats *hp);

/* Whether host (as a client named it) matches one of hp's patterns. */
bool hostpat_match(const struct hostpats *hp, const char *host);

#endif
