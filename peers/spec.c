/*
 * Peer lines as the configuration writes them: "NAME HOST:PORT
 * [type=sumcache|squid-digest] [icp=PORT] [proxy_only] [weight=W]". A
 * name is what a peer signs its summaries with, so it is held to the
 * characters a node name may have; the address part is shared with
 * peer_dns.
 */
#include "peers.h"
#include "placement.h"

#include <stdlib.h>
#include <string.h>

/* "HOST:PORT [options]" after a peer's name; expect says what a bad or
 * missing address is called in the error. */
int
peer_target_parse(const char *text, struct peer_spec *ps, const char *expect,
    const char **why)
{
	char buf[512], *save, *tok;

	if (strlen(text) >= sizeof(buf)) {
		*why = "too long";
		return -1;
	}
	strcpy(buf, text);
	tok = strtok_r(buf, " \t", &save);
	char *colon = tok ? strrchr(tok, ':') : NULL;
	char *end = NULL;
	unsigned long port = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (colon == NULL || colon == tok || *end || port == 0 ||
	    port > 65535 || (size_t)(colon - tok) >= sizeof(ps->host)) {
		*why = expect;
		return -1;
	}
	/* [v6]:port */
	const char *h = tok;
	size_t hl = (size_t)(colon - tok);
	if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(ps->host, h, hl);
	ps->host[hl] = '\0';
	ps->port = (uint16_t)port;
	ps->type = PEER_SUMCACHE;
	ps->weight = PLACE_WEIGHT_DEFAULT;
	while ((tok = strtok_r(NULL, " \t", &save)) != NULL) {
		if (strcmp(tok, "proxy_only") == 0) {
			ps->proxy_only = true;
		} else if (strcmp(tok, "type=sumcache") == 0) {
			ps->type = PEER_SUMCACHE;
		} else if (strcmp(tok, "type=squid-digest") == 0) {
			ps->type = PEER_SQUID_DIGEST;
		} else if (strncmp(tok, "icp=", 4) == 0) {
			port = strtoul(tok + 4, &end, 10);
			if (*end || port == 0 || port > 65535) {
				*why = "icp= needs a port";
				return -1;
			}
			ps->icp_port = (uint16_t)port;
		} else if (strncmp(tok, "weight=", 7) == 0) {
			double w = strtod(tok + 7, &end);
			if (end == tok + 7 || *end || !(w > 0) ||
			    w > PLACE_WEIGHT_MAX) {
				*why = "weight= needs a number over 0, at most "
				    "1000000";
				return -1;
			}
			ps->weight = w;
		} else if (strncmp(tok, "type=", 5) == 0) {
			*why = "unknown peer type (sumcache, squid-digest)";
			return -1;
		} else {
			*why = "unknown peer option (proxy_only, type=, icp=, "
			    "weight=)";
			return -1;
		}
	}
	return 0;
}

int
peer_spec_parse(const char *text, struct peer_spec *ps, const char **why)
{
	const char *expect = "expected NAME HOST:PORT";
	size_t n = strcspn(text, " \t");

	memset(ps, 0, sizeof(*ps));
	if (n == 0) {
		*why = expect;
		return -1;
	}
	if (n > WIRE_MAX_SENDER) {
		*why = "peer name too long";
		return -1;
	}
	if (!wire_name_ok(text, n)) {
		*why = "peer name may hold only letters, digits, - . _";
		return -1;
	}
	memcpy(ps->name, text, n);
	ps->name[n] = '\0';
	return peer_target_parse(text + n, ps, expect, why);
}
