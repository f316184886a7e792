/*
 * Operator freshness rules (refresh_pattern, Squid's meaning): a regular
 * expression on the URL and the heuristic freshness a response matching it
 * gets when its origin gave none. The first rule that matches applies.
 */
#ifndef REFRESH_H
#define REFRESH_H

#include <regex.h>

#include "cachectl.h"

struct refresh_rule {
	regex_t re;
	struct cachectl_heuristic heur;
};

struct refresh_rules {
	struct refresh_rule *v;
	unsigned n;
};

/*
 * Appends a rule from "[-i] REGEX MIN PERCENT[%] MAX", MIN and MAX in
 * minutes as in squid.conf (-i: the regex ignores case). -1 with *why
 * when malformed.
 */
int refresh_add(struct refresh_rules *r, const char *spec, const char **why);

/* The heuristic of the first rule whose regex matches url (NUL-
 * terminated), else cachectl_heuristic_default. Borrowed from r. */
const struct cachectl_heuristic *refresh_find(const struct refresh_rules *r,
    const char *url);

void refresh_clear(struct refresh_rules *r);

#endif
