/*
 * The certificate authority that signs the leaves of intercepted hosts:
 * made once by `sumcache --make-ca DIR`, loaded at start. A CA that fails
 * any check is refused whole with the reason; nothing turns a check off.
 */
#ifndef CERT_CA_H
#define CERT_CA_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "hostpat.h"

#define CA_CERT_FILE "ca.crt"
#define CA_KEY_FILE "ca.key"
#define CA_VALID_DAYS 3650

/* A loaded CA; owns both. */
struct ca {
	X509 *cert;
	EVP_PKEY *key;
};

/*
 * Writes dir/ca.crt and dir/ca.key (mode 0600): an ECDSA P-256 key and
 * its self-signed CA certificate, CN "sumcache CA <name>", valid for
 * CA_VALID_DAYS. With patterns in permit (NULL or none: any host), the
 * certificate's name constraints permit only what they name (nc.h).
 * Makes dir (0700) if need be; never overwrites a file. 0, or -1 with
 * the reason in err.
 */
int ca_make(const char *dir, const char *name, const struct hostpats *permit,
    char *err, size_t elen);

/*
 * Loads the CA from cert_path and key_path and checks it: the key file is
 * readable by its owner only, the certificate is a CA (basicConstraints
 * CA:TRUE) valid now, and the key is its key. NULL with the reason (the
 * file named) in err.
 */
struct ca *ca_load(const char *cert_path, const char *key_path, char *err,
    size_t elen);
void ca_free(struct ca **ca);

/* path is a PEM file of one or more CA certificates (tls_upstream_ca):
 * 0, or -1 with the reason in err. */
int ca_bundle_check(const char *path, char *err, size_t elen);

/* ca_load's checks, and that the CA may sign for every pattern of
 * intercept (its name constraints permit it), for -t and start-up
 * (conf_hooks): 0, or -1 with err naming the pattern and the CA. */
int ca_check(const char *cert_path, const char *key_path,
    const struct hostpats *intercept, char *err, size_t elen);

#endif
