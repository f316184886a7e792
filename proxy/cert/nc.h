/*
 * X.509 name constraints on the interception CA: what `--make-ca DIR
 * --for PATTERN...` writes into it, and whether a CA's constraints
 * permit a host pattern (a node refuses at start, and -t refuses, a
 * tls_intercept pattern its CA may not sign for).
 */
#ifndef CERT_NC_H
#define CERT_NC_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>

#include "hostpat.h"

/*
 * The nameConstraints value (OpenSSL's v3 configuration text, critical)
 * that permits what permit's patterns name and nothing else: a DNS
 * subtree for each name ("*.example.org" and "example.org" both give
 * example.org: a name and every name below it, which is what X.509 can
 * say), an iPAddress subtree for each IP literal; a kind no pattern
 * names is shut whole (every address excluded; DNS names only under
 * .invalid, which no host has). "*" is refused: a CA for every host
 * needs no constraints. 0, or -1 with the reason in err.
 */
int nc_value(const struct hostpats *permit, char *out, size_t len,
    char *err, size_t elen);

/* Whether ca may sign a leaf for every host pattern names (tls_intercept's
 * syntax): true when it carries no name constraints. */
bool nc_permits(X509 *ca, const char *pattern);

/* What ca's constraints permit, as text ("DNS example.org, IP
 * 10.0.0.0/8"), for a message; "any host" without constraints. */
void nc_describe(X509 *ca, char *out, size_t len);

#endif
