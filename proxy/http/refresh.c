/*
 * refresh_pattern rules. Squid's syntax is kept so that an operator's
 * rules move over unchanged: a POSIX extended regex matched anywhere in
 * the URL, minutes for MIN and MAX, a percentage of the Last-Modified age.
 *
 * Squid's options that override what the origin said (override-expire,
 * ignore-no-store, ignore-private, ignore-reload...) are refused, not
 * ignored: a rule here only fills in what the origin left unsaid, so it
 * can never make a cache serve what RFC 9111 forbids.
 */
#include "refresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MIN and MAX: minutes, at most 10 years, as seconds */
static int
minutes(const char *w, int64_t *out)
{
	char *end;
	unsigned long long m = strtoull(w, &end, 10);

	if (end == w || *end != '\0' || w[0] == '-' || m > 5256000)
		return -1;
	*out = (int64_t)m * 60;
	return 0;
}

static int
percent(const char *w, unsigned *out)
{
	char *end;
	unsigned long p = strtoul(w, &end, 10);

	if (end == w || w[0] == '-' || p > 100000)
		return -1;
	if (*end == '%')
		end++;
	if (*end != '\0')
		return -1;
	*out = (unsigned)p;
	return 0;
}

int
refresh_add(struct refresh_rules *r, const char *spec, const char **why)
{
	char buf[1024], *words[6], *save = NULL;
	unsigned n = 0;
	int flags = REG_EXTENDED | REG_NOSUB;
	struct refresh_rule rule;

	if (strlen(spec) >= sizeof(buf)) {
		*why = "refresh_pattern longer than 1023 characters";
		return -1;
	}
	memcpy(buf, spec, strlen(spec) + 1);
	for (char *w = strtok_r(buf, " \t", &save); w != NULL && n < 6;
	    w = strtok_r(NULL, " \t", &save))
		words[n++] = w;
	unsigned at = n > 0 && strcmp(words[0], "-i") == 0;
	if (at)
		flags |= REG_ICASE;
	if (n > at + 4) {
		*why = "refresh_pattern options (override-expire, ignore-reload "
		    "...) are not supported: a rule only gives freshness the "
		    "origin did not";
		return -1;
	}
	if (n != at + 4) {
		*why = "expected \"[-i] REGEX MIN PERCENT MAX\" (MIN and MAX in "
		    "minutes)";
		return -1;
	}
	if (minutes(words[at + 1], &rule.heur.min) < 0 ||
	    minutes(words[at + 3], &rule.heur.max) < 0) {
		*why = "refresh_pattern MIN and MAX are minutes (0 to 5256000)";
		return -1;
	}
	if (percent(words[at + 2], &rule.heur.percent) < 0) {
		*why = "refresh_pattern PERCENT is a whole number (0 to 100000), "
		    "with or without %";
		return -1;
	}
	if (rule.heur.min > rule.heur.max) {
		*why = "refresh_pattern MIN is more than MAX";
		return -1;
	}
	if (regcomp(&rule.re, words[at], flags) != 0) {
		*why = "refresh_pattern REGEX is not a POSIX extended regular "
		    "expression";
		return -1;
	}
	struct refresh_rule *v = realloc(r->v, (r->n + 1) * sizeof(*v));
	if (v == NULL) {
		regfree(&rule.re);
		*why = "out of memory";
		return -1;
	}
	r->v = v;
	r->v[r->n++] = rule;
	return 0;
}

const struct cachectl_heuristic *
refresh_find(const struct refresh_rules *r, const char *url)
{
	for (unsigned i = 0; i < r->n; i++)
		if (regexec(&r->v[i].re, url, 0, NULL, 0) == 0)
			return &r->v[i].heur;
	return &cachectl_heuristic_default;
}

void
refresh_clear(struct refresh_rules *r)
{
	for (unsigned i = 0; i < r->n; i++)
		regfree(&r->v[i].re);
	free(r->v);
	r->v = NULL;
	r->n = 0;
}
