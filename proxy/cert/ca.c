/*
 * The interception CA (ca.h). Its key is the most sensitive thing a node
 * holds: whoever reads it can impersonate any site to every client that
 * trusts it. So it is written 0600 with O_EXCL (never over an older one),
 * refused at load when its file grants anything to group or others, and
 * never printed. The certificate is checked as a client would check it:
 * a CA, valid now, matching the key.
 */
#include "ca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "cert.h"
#include "nc.h"

/* Opens path for writing, new, with mode; the FILE or NULL with err. */
static FILE *
create(const char *path, mode_t mode, char *err, size_t elen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	FILE *f;

	if (fd < 0) {
		snprintf(err, elen, "%s: %s%s", path, strerror(errno),
		    errno == EEXIST ? " (a CA is never overwritten: move it "
		    "away first)" : "");
		return NULL;
	}
	if ((f = fdopen(fd, "w")) == NULL) {
		snprintf(err, elen, "%s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
	}
	return f;
}

/* Closes f, written with ok; on failure unlinks path. */
static int
finish(FILE *f, const char *path, int ok, char *err, size_t elen)
{
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		ok = 0;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok) {
		snprintf(err, elen, "%s: cannot write it", path);
		unlink(path);
		return -1;
	}
	return 0;
}

int
ca_make(const char *dir, const char *name, const struct hostpats *permit,
    char *err, size_t elen)
{
	char crt[4096], key[4096], cn[128], nc[HOSTPAT_MAX * 80];
	time_t now = time(NULL);
	struct cert_spec spec = {.cn = cn, .is_ca = true,
	    .not_before = now - 3600,
	    .not_after = now + (time_t)CA_VALID_DAYS * 86400};
	EVP_PKEY *k = NULL;
	X509 *x = NULL;
	FILE *f;
	int rc = -1;

	if (permit != NULL && permit->n > 0) {
		if (nc_value(permit, nc, sizeof(nc), err, elen) < 0)
			return -1;
		spec.constraints = nc;
	}

	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, elen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	snprintf(crt, sizeof(crt), "%s/%s", dir, CA_CERT_FILE);
	snprintf(key, sizeof(key), "%s/%s", dir, CA_KEY_FILE);
	snprintf(cn, sizeof(cn), "sumcache CA %s", name);
	if ((k = cert_new_key(err, elen)) == NULL ||
	    (x = cert_build(&spec, k, NULL, NULL, err, elen)) == NULL)
		goto out;
	if ((f = create(key, 0600, err, elen)) == NULL)
		goto out;
	if (finish(f, key, PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL,
	    NULL), err, elen) < 0)
		goto out;
	if ((f = create(crt, 0644, err, elen)) == NULL) {
		unlink(key);
		goto out;
	}
	if (finish(f, crt, PEM_write_X509(f, x), err, elen) < 0) {
		unlink(key);
		goto out;
	}
	rc = 0;
out:
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

/* The key from path, whose file must grant nothing to group or others. */
static EVP_PKEY *
load_key(const char *path, char *err, size_t elen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	EVP_PKEY *k = NULL;
	FILE *f;

	if (fd < 0) {
		snprintf(err, elen, "tls_ca_key %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, elen, "tls_ca_key %s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(err, elen, "tls_ca_key %s: mode %04o lets others "
		    "than its owner at the CA's key (chmod 600 it)", path,
		    (unsigned)(st.st_mode & 07777));
		close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		snprintf(err, elen, "tls_ca_key %s: %s", path,
		    strerror(errno));
		close(fd);
		return NULL;
	}
	if ((k = PEM_read_PrivateKey(f, NULL, NULL, NULL)) == NULL) {
		char what[4200];
		snprintf(what, sizeof(what), "tls_ca_key %s: not a PEM private "
		    "key (an encrypted one needs its passphrase removed)",
		    path);
		cert_ssl_error(what, err, elen);
	}
	fclose(f);
	return k;
}

static X509 *
load_cert(const char *path, char *err, size_t elen)
{
	FILE *f = fopen(path, "re");
	X509 *x;

	if (f == NULL) {
		snprintf(err, elen, "tls_ca_cert %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	if ((x = PEM_read_X509(f, NULL, NULL, NULL)) == NULL) {
		char what[4200];
		snprintf(what, sizeof(what), "tls_ca_cert %s: not a PEM "
		    "certificate", path);
		cert_ssl_error(what, err, elen);
	}
	fclose(f);
	return x;
}

/* What a client would refuse the CA for, or NULL. */
static const char *
unfit(X509 *x, EVP_PKEY *k)
{
	if ((X509_get_extension_flags(x) & EXFLAG_CA) == 0)
		return "is not a CA certificate (basicConstraints CA:TRUE)";
	if ((X509_get_key_usage(x) & KU_KEY_CERT_SIGN) == 0)
		return "may not sign certificates (keyUsage keyCertSign)";
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0)
		return "is not valid yet";
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0)
		return "has expired";
	if (X509_check_private_key(x, k) != 1)
		return "does not match tls_ca_key";
	return NULL;
}

struct ca *
ca_load(const char *cert_path, const char *key_path, char *err,
    size_t elen)
{
	struct ca *ca = calloc(1, sizeof(*ca));
	const char *why;

	if (ca == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	if ((ca->cert = load_cert(cert_path, err, elen)) == NULL ||
	    (ca->key = load_key(key_path, err, elen)) == NULL) {
		ca_free(&ca);
		return NULL;
	}
	if ((why = unfit(ca->cert, ca->key)) != NULL) {
		ERR_clear_error();
		snprintf(err, elen, "tls_ca_cert %s %s", cert_path, why);
		ca_free(&ca);
		return NULL;
	}
	return ca;
}

void
ca_free(struct ca **cap)
{
	struct ca *ca = *cap;

	if (ca == NULL)
		return;
	*cap = NULL;
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	free(ca);
}

int
ca_check(const char *cert_path, const char *key_path,
    const struct hostpats *intercept, char *err, size_t elen)
{
	struct ca *ca = ca_load(cert_path, key_path, err, elen);
	char may[512];

	if (ca == NULL)
		return -1;
	for (unsigned i = 0; intercept != NULL && i < intercept->n; i++) {
		if (nc_permits(ca->cert, intercept->p[i]))
			continue;
		nc_describe(ca->cert, may, sizeof(may));
		snprintf(err, elen, "tls_intercept '%s' names hosts the CA "
		    "tls_ca_cert %s may not sign for (its name constraints "
		    "permit %s)", intercept->p[i], cert_path, may);
		ca_free(&ca);
		return -1;
	}
	ca_free(&ca);
	return 0;
}

int
ca_bundle_check(const char *path, char *err, size_t elen)
{
	FILE *f = fopen(path, "re");
	X509 *x;
	int n = 0, cas = 0;

	if (f == NULL) {
		snprintf(err, elen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
		n++;
		cas += (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
		X509_free(x);
	}
	ERR_clear_error();     /* the end of the file reads as an error */
	fclose(f);
	if (n == 0 || cas == 0) {
		snprintf(err, elen, "%s: %s", path, n == 0 ?
		    "no PEM certificate in it" : "none of its certificates "
		    "is a CA");
		return -1;
	}
	return 0;
}
