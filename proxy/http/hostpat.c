/*
 * Host patterns (hostpat.h). A pattern is checked when it is read, so a
 * typo ("*debian.org", "deb.*.org") is a config error with its line, not
 * a rule that silently never matches.
 */
#include "hostpat.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool
name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':';
}

int
hostpat_add(struct hostpats *hp, const char *text, const char **why)
{
	const char *name = strncmp(text, "*.", 2) == 0 ? text + 2 : text;
	size_t n = strlen(text);

	if (strcmp(text, "*") != 0) {
		if (*name == '\0' || *name == '.' || strlen(name) > 253) {
			*why = "expected *, *.DOMAIN or a host name";
			return -1;
		}
		for (const char *p = name; *p != '\0'; p++)
			if (!name_char(*p)) {
				*why = "a host pattern is *, *.DOMAIN or a "
				    "host name (a * only as the whole "
				    "pattern or its first label)";
				return -1;
			}
	}
	if (hp->n == HOSTPAT_MAX) {
		*why = "too many host patterns";
		return -1;
	}
	char *copy = malloc(n + 1);
	if (copy == NULL) {
		*why = "out of memory";
		return -1;
	}
	for (size_t i = 0; i <= n; i++)
		copy[i] = (char)((text[i] >= 'A' && text[i] <= 'Z') ?
		    text[i] + 32 : text[i]);
	if (n > 1 && copy[n - 1] == '.')
		copy[n - 1] = '\0';
	hp->p[hp->n++] = copy;
	return 0;
}

void
hostpat_clear(struct hostpats *hp)
{
	for (unsigned i = 0; i < hp->n; i++)
		free(hp->p[i]);
	hp->n = 0;
}

static bool
one(const char *pat, const char *host, size_t hl)
{
	if (strcmp(pat, "*") == 0)
		return true;
	if (strncmp(pat, "*.", 2) == 0) {
		size_t dl = strlen(pat + 1);     /* ".example.org" */
		return hl > dl && strncasecmp(host + hl - dl, pat + 1, dl) == 0;
	}
	return strlen(pat) == hl && strncasecmp(host, pat, hl) == 0;
}

bool
hostpat_match(const struct hostpats *hp, const char *host)
{
	size_t hl = strlen(host);

	if (hl > 1 && host[hl - 1] == '.')
		hl--;
	for (unsigned i = 0; i < hp->n; i++)
		if (one(hp->p[i], host, hl))
			return true;
	return false;
}
