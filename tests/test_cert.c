/*
 * The interception CA and its leaves (proxy/cert/): every way a CA is
 * refused (a key others may read, not a CA, expired, a key that is not
 * its own, not PEM), then the CA --make-ca writes; leaves that verify
 * against the CA for their host only, host names no leaf may carry, and
 * the bounded cache; the identities of peer links, derived from the
 * cluster key.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "cert.h"
#include "cluster.h"
#include "hostpat.h"
#include "leaves.h"
#include "nc.h"

static char dir[] = "/tmp/sumcache-cert-XXXXXX";
static char crt[128], key[128];
static char err[1024];

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(crt, sizeof(crt), "%s/ca/%s", dir, CA_CERT_FILE);
	snprintf(key, sizeof(key), "%s/ca/%s", dir, CA_KEY_FILE);
}

static void
teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cert, .init = setup, .fini = teardown);

/* Writes a certificate of spec (self-signed) and its key as path_crt,
 * path_key (0600). */
static void
write_pair(const struct cert_spec *spec, const char *path_crt,
    const char *path_key)
{
	EVP_PKEY *k = cert_new_key(err, sizeof(err));
	cr_assert_not_null(k, "%s", err);
	X509 *x = cert_build(spec, k, NULL, NULL, err, sizeof(err));
	cr_assert_not_null(x, "%s", err);
	FILE *f = fopen(path_crt, "w");
	cr_assert_not_null(f);
	cr_assert(PEM_write_X509(f, x));
	fclose(f);
	f = fopen(path_key, "w");
	cr_assert_not_null(f);
	cr_assert(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL));
	fclose(f);
	cr_assert_eq(chmod(path_key, 0600), 0);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void
make_ca(void)
{
	char d[128];

	snprintf(d, sizeof(d), "%s/ca", dir);
	cr_assert_eq(ca_make(d, "test", NULL, err, sizeof(err)), 0, "%s", err);
}

static void
assert_refused(const char *cert_path, const char *key_path,
    const char *why)
{
	struct ca *ca = ca_load(cert_path, key_path, err, sizeof(err));

	cr_assert_null(ca, "a CA that %s was accepted", why);
	cr_assert(strstr(err, why) != NULL, "'%s' does not say '%s'", err,
	    why);
}

Test(cert, key_that_others_may_read_is_refused)
{
	make_ca();
	cr_assert_eq(chmod(key, 0644), 0);
	assert_refused(crt, key, "mode 0644");
	cr_assert_eq(chmod(key, 0640), 0);
	assert_refused(crt, key, "mode 0640");
	cr_assert_eq(chmod(key, 0600), 0);
	struct ca *ca = ca_load(crt, key, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	ca_free(&ca);
}

Test(cert, certificate_that_is_not_a_ca_is_refused)
{
	char c[128], k[128];
	time_t now = time(NULL);
	struct cert_spec leaf = {.cn = "example.org", .host = "example.org",
	    .not_before = now - 60, .not_after = now + 86400};

	snprintf(c, sizeof(c), "%s/leaf.crt", dir);
	snprintf(k, sizeof(k), "%s/leaf.key", dir);
	write_pair(&leaf, c, k);
	assert_refused(c, k, "is not a CA");
}

Test(cert, expired_or_future_ca_is_refused)
{
	char c[128], k[128];
	time_t now = time(NULL);
	struct cert_spec old = {.cn = "old", .is_ca = true,
	    .not_before = now - 20 * 86400, .not_after = now - 86400};
	struct cert_spec later = {.cn = "later", .is_ca = true,
	    .not_before = now + 86400, .not_after = now + 20 * 86400};

	snprintf(c, sizeof(c), "%s/old.crt", dir);
	snprintf(k, sizeof(k), "%s/old.key", dir);
	write_pair(&old, c, k);
	assert_refused(c, k, "has expired");
	write_pair(&later, c, k);
	assert_refused(c, k, "is not valid yet");
}

Test(cert, key_of_another_ca_is_refused)
{
	char c[128], k[128];
	time_t now = time(NULL);
	struct cert_spec other = {.cn = "other", .is_ca = true,
	    .not_before = now - 60, .not_after = now + 86400};

	make_ca();
	snprintf(c, sizeof(c), "%s/other.crt", dir);
	snprintf(k, sizeof(k), "%s/other.key", dir);
	write_pair(&other, c, k);
	assert_refused(crt, k, "does not match tls_ca_key");
}

Test(cert, files_that_are_not_pem_are_refused)
{
	char junk[128];

	make_ca();
	snprintf(junk, sizeof(junk), "%s/junk", dir);
	FILE *f = fopen(junk, "w");
	cr_assert_not_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nnot base64 at all\n", f);
	fclose(f);
	cr_assert_eq(chmod(junk, 0600), 0);
	assert_refused(junk, key, "not a PEM certificate");
	assert_refused(crt, junk, "not a PEM private key");
	snprintf(junk, sizeof(junk), "%s/absent", dir);
	assert_refused(crt, junk, "No such file");
}

/* What --make-ca writes: a CA valid now, its key 0600, never replaced. */
Test(cert, made_ca_loads_and_is_never_overwritten)
{
	struct stat st;
	char d[128];

	make_ca();
	cr_assert_eq(stat(key, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	struct ca *ca = ca_load(crt, key, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	ca_free(&ca);
	snprintf(d, sizeof(d), "%s/ca", dir);
	cr_assert_eq(ca_make(d, "again", NULL, err, sizeof(err)), -1);
	cr_assert(strstr(err, "never overwritten") != NULL, "%s", err);
	ca = ca_load(crt, key, err, sizeof(err));
	cr_assert_not_null(ca, "the refused second make harmed the first");
	ca_free(&ca);
}

/* Whether leaf verifies against ca, for a server named host. */
static bool
verifies(const struct ca *ca, X509 *leaf, const char *host)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	bool ok;

	X509_STORE_add_cert(store, ca->cert);
	X509_STORE_CTX_init(ctx, store, leaf, NULL);
	X509_VERIFY_PARAM *vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_X509_STRICT);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	if (strchr(host, ':') != NULL || strspn(host, "0123456789.") ==
	    strlen(host))
		X509_VERIFY_PARAM_set1_ip_asc(vp, host);
	else
		X509_VERIFY_PARAM_set1_host(vp, host, 0);
	ok = X509_verify_cert(ctx) == 1;
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

static struct ca *
load_made_ca(void)
{
	make_ca();
	struct ca *ca = ca_load(crt, key, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	return ca;
}

Test(cert, leaf_verifies_for_its_host_only)
{
	struct ca *ca = load_made_ca();
	struct leaves *l = leaves_new(ca, 8, err, sizeof(err));
	cr_assert_not_null(l, "%s", err);

	X509 *x = leaves_get(l, "deb.example.org", err, sizeof(err));
	cr_assert_not_null(x, "%s", err);
	cr_assert(verifies(ca, x, "deb.example.org"));
	cr_assert_not(verifies(ca, x, "example.org"));
	cr_assert_not(verifies(ca, x, "evil.example"));
	cr_assert_eq(X509_get_extension_flags(x) & EXFLAG_CA, 0,
	    "a leaf must not be a CA");
	cr_assert_eq(X509_check_private_key(x, leaves_key(l)), 1);

	X509 *ip = leaves_get(l, "127.0.0.1", err, sizeof(err));
	cr_assert_not_null(ip, "%s", err);
	cr_assert(verifies(ca, ip, "127.0.0.1"));
	cr_assert_not(verifies(ca, ip, "127.0.0.2"));
	X509 *ip6 = leaves_get(l, "::1", err, sizeof(err));
	cr_assert_not_null(ip6, "%s", err);
	cr_assert(verifies(ca, ip6, "::1"));

	/* a leaf from another CA's cache does not verify against this one */
	struct cert_spec other = {.cn = "other", .is_ca = true,
	    .not_before = time(NULL) - 60, .not_after = time(NULL) + 86400};
	struct ca o = {.key = cert_new_key(err, sizeof(err))};
	o.cert = cert_build(&other, o.key, NULL, NULL, err, sizeof(err));
	cr_assert_not_null(o.cert, "%s", err);
	struct leaves *ol = leaves_new(&o, 8, err, sizeof(err));
	X509 *forged = leaves_get(ol, "deb.example.org", err, sizeof(err));
	cr_assert_not_null(forged);
	cr_assert_not(verifies(ca, forged, "deb.example.org"));
	leaves_free(&ol);
	X509_free(o.cert);
	EVP_PKEY_free(o.key);
	leaves_free(&l);
	ca_free(&ca);
}

/* A client names the host: nothing in it may add a name or a line. */
Test(cert, hosts_no_leaf_may_name_are_refused)
{
	struct ca *ca = load_made_ca();
	struct leaves *l = leaves_new(ca, 8, err, sizeof(err));
	char long_name[300];
	const char *bad[] = {"", "a.example,DNS:bank.example",
	    "a.example\n", "*.example.org", "-lead.example", ".example",
	    "a b.example", "a.example:443", long_name};

	memset(long_name, 'a', 254);
	long_name[254] = '\0';
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_null(leaves_get(l, bad[i], err, sizeof(err)),
		    "a leaf was minted for '%s'", bad[i]);
	cr_assert_eq(leaves_stats(l)->refused, sizeof(bad) / sizeof(bad[0]));
	/* the refusal names the host, printable and cut short */
	cr_assert_null(leaves_get(l, "a.example\n", err, sizeof(err)));
	cr_assert_str_eq(err, "no certificate may name the host a.example?");
	cr_assert_null(leaves_get(l, long_name, err, sizeof(err)));
	cr_assert_eq(strlen(err), strlen("no certificate may name the host ") +
	    80, "%s", err);
	cr_assert(strstr(err, "aaa...") != NULL, "%s", err);
	cr_assert_eq(leaves_stats(l)->minted, 0);
	leaves_free(&l);
	ca_free(&ca);
}

Test(cert, leaves_are_reused_and_bounded)
{
	struct ca *ca = load_made_ca();
	struct leaves *l = leaves_new(ca, 2, err, sizeof(err));

	X509 *a = leaves_get(l, "a.example", err, sizeof(err));
	cr_assert_eq(leaves_get(l, "A.Example", err, sizeof(err)), a,
	    "names are case-blind: one leaf");
	cr_assert_eq(leaves_stats(l)->minted, 1);
	cr_assert_eq(leaves_stats(l)->reused, 1);
	cr_assert_not_null(leaves_get(l, "b.example", err, sizeof(err)));
	/* b is newer than a: c pushes a out */
	cr_assert_not_null(leaves_get(l, "c.example", err, sizeof(err)));
	cr_assert_eq(leaves_stats(l)->evicted, 1);
	cr_assert_eq(leaves_stats(l)->cached, 2);
	leaves_get(l, "b.example", err, sizeof(err));
	cr_assert_eq(leaves_stats(l)->minted, 3, "b was kept");
	leaves_get(l, "a.example", err, sizeof(err));
	cr_assert_eq(leaves_stats(l)->minted, 4, "a was the one dropped");
	leaves_free(&l);
	ca_free(&ca);
}

/* A leaf never outlives the CA that signed it. */
Test(cert, leaf_ends_no_later_than_its_ca)
{
	char c[128], k[128];
	time_t now = time(NULL);
	struct cert_spec soon = {.cn = "soon", .is_ca = true,
	    .not_before = now - 60, .not_after = now + 10 * 86400};

	snprintf(c, sizeof(c), "%s/soon.crt", dir);
	snprintf(k, sizeof(k), "%s/soon.key", dir);
	write_pair(&soon, c, k);
	struct ca *ca = ca_load(c, k, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	struct leaves *l = leaves_new(ca, 2, err, sizeof(err));
	X509 *x = leaves_get(l, "a.example", err, sizeof(err));
	cr_assert_not_null(x, "%s", err);
	cr_assert_leq(ASN1_TIME_compare(X509_get0_notAfter(x),
	    X509_get0_notAfter(ca->cert)), 0);
	cr_assert(verifies(ca, x, "a.example"));
	leaves_free(&l);
	ca_free(&ca);
}

/* Peer links: two nodes of one cluster key derive one CA, so each
 * verifies the other's certificate, as a server's and as a client's; a
 * node of another key does not. */
Test(cert, cluster_identities_verify_within_their_cluster_only)
{
	static const unsigned char ours[] = "cluster-key-0123456789abcdef",
	    other[] = "cluster-key-0123456789abcdeF";
	struct cluster_id *a = cluster_id_new(ours, sizeof(ours) - 1, "a", err,
	    sizeof(err));
	cr_assert_not_null(a, "%s", err);
	struct cluster_id *b = cluster_id_new(ours, sizeof(ours) - 1, "b", err,
	    sizeof(err));
	cr_assert_not_null(b, "%s", err);
	struct cluster_id *x = cluster_id_new(other, sizeof(other) - 1, "x",
	    err, sizeof(err));
	cr_assert_not_null(x, "%s", err);

	struct ca as_a = {.cert = a->ca}, as_b = {.cert = b->ca},
	    as_x = {.cert = x->ca};
	cr_assert(verifies(&as_a, b->cert, CLUSTER_LINK_NAME));
	cr_assert(verifies(&as_b, a->cert, CLUSTER_LINK_NAME));
	cr_assert_not(verifies(&as_a, b->cert, "127.0.0.1"));
	cr_assert_eq(X509_check_purpose(a->cert, X509_PURPOSE_SSL_CLIENT, 0),
	    1, "a node's certificate is a client's too");
	cr_assert_not(verifies(&as_x, a->cert, CLUSTER_LINK_NAME));
	cr_assert_not(verifies(&as_a, x->cert, CLUSTER_LINK_NAME));
	/* each node's key is its own; the CA's is not kept */
	cr_assert_eq(X509_check_private_key(a->cert, b->key), 0);
	cr_assert(strstr(a->key_pem, "PRIVATE KEY") != NULL);
	ERR_clear_error();
	cluster_id_free(&a);
	cluster_id_free(&b);
	cluster_id_free(&x);
}

/* ---- name constraints (--make-ca --for) ---- */

/* A CA made for permit's patterns, loaded. */
static struct ca *
load_ca_for(const char *const *pats)
{
	struct hostpats hp = {0};
	const char *why;
	char d[128];

	for (; *pats != NULL; pats++)
		cr_assert_eq(hostpat_add(&hp, *pats, &why), 0, "%s", *pats);
	snprintf(d, sizeof(d), "%s/ca", dir);
	cr_assert_eq(ca_make(d, "test", &hp, err, sizeof(err)), 0, "%s", err);
	hostpat_clear(&hp);
	struct ca *ca = ca_load(crt, key, err, sizeof(err));
	cr_assert_not_null(ca, "%s", err);
	return ca;
}

/* A leaf for host signed by ca's key whatever its constraints say: what
 * a thief holding ca.key would mint. */
static X509 *
forge_leaf(const struct ca *ca, EVP_PKEY *k, const char *host)
{
	struct cert_spec spec = {.cn = "forged", .host = host,
	    .not_before = time(NULL) - 60, .not_after = time(NULL) + 86400};
	X509 *x = cert_build(&spec, k, ca->cert, ca->key, err, sizeof(err));

	cr_assert_not_null(x, "%s", err);
	return x;
}

/* The CA permits names under example.org, mirror.example and 127.0.0.1:
 * leaves for those verify, and leaves its own key signs for anything
 * else (another site, another address) do not. The constraints are
 * critical, as RFC 5280 asks. */
Test(cert, a_ca_made_for_some_hosts_signs_for_those_only)
{
	const char *pats[] = {"*.example.org", "mirror.example", "127.0.0.1",
	    NULL};
	struct ca *ca = load_ca_for(pats);
	struct leaves *l = leaves_new(ca, 8, err, sizeof(err));
	cr_assert_not_null(l, "%s", err);
	int crit = 0;
	NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca->cert, NID_name_constraints,
	    &crit, NULL);
	cr_assert_not_null(nc);
	cr_assert_eq(crit, 1, "name constraints not critical");
	NAME_CONSTRAINTS_free(nc);

	const char *inside[] = {"deb.example.org", "a.b.example.org",
	    "example.org", "mirror.example", "x.mirror.example", "127.0.0.1"};
	for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
		X509 *x = leaves_get(l, inside[i], err, sizeof(err));
		cr_assert_not_null(x, "%s", err);
		cr_assert(verifies(ca, x, inside[i]), "%s", inside[i]);
	}
	EVP_PKEY *k = cert_new_key(err, sizeof(err));
	const char *outside[] = {"bank.example", "example.org.evil.net",
	    "notexample.org", "127.0.0.2", "::1"};
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		X509 *x = forge_leaf(ca, k, outside[i]);
		cr_assert_not(verifies(ca, x, outside[i]), "a leaf for %s "
		    "verified", outside[i]);
		X509_free(x);
	}
	EVP_PKEY_free(k);
	leaves_free(&l);
	ca_free(&ca);
}

/* A CA for names only may sign for no address, and one for addresses
 * only for no name. */
Test(cert, a_ca_for_one_kind_of_name_signs_for_no_other)
{
	const char *names[] = {"*.example.org", NULL};
	struct ca *ca = load_ca_for(names);
	EVP_PKEY *k = cert_new_key(err, sizeof(err));
	X509 *x = forge_leaf(ca, k, "10.0.0.1");
	cr_assert_not(verifies(ca, x, "10.0.0.1"));
	X509_free(x);
	ca_free(&ca);
	cr_assert_eq(unlink(crt), 0);
	cr_assert_eq(unlink(key), 0);
	const char *addrs[] = {"10.0.0.1", NULL};
	ca = load_ca_for(addrs);
	x = forge_leaf(ca, k, "deb.example.org");
	cr_assert_not(verifies(ca, x, "deb.example.org"));
	X509_free(x);
	x = forge_leaf(ca, k, "10.0.0.1");
	cr_assert(verifies(ca, x, "10.0.0.1"));
	X509_free(x);
	EVP_PKEY_free(k);
	ca_free(&ca);
}

/* Which tls_intercept patterns a CA may sign for: all under no
 * constraints; under some, those whose every host they permit. */
Test(cert, intercept_patterns_are_checked_against_the_constraints)
{
	struct ca *any = load_made_ca();
	cr_assert(nc_permits(any->cert, "*"));
	cr_assert(nc_permits(any->cert, "bank.example"));
	ca_free(&any);
	cr_assert_eq(unlink(crt), 0);
	cr_assert_eq(unlink(key), 0);

	const char *pats[] = {"*.example.org", "mirror.example", "127.0.0.1",
	    NULL};
	struct ca *ca = load_ca_for(pats);
	const char *yes[] = {"*.example.org", "example.org", "a.example.org",
	    "*.a.example.org", "mirror.example", "*.mirror.example",
	    "127.0.0.1"};
	const char *no[] = {"*", "*.org", "org", "bank.example",
	    "*.example", "notexample.org", "127.0.0.2", "::1"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		cr_assert(nc_permits(ca->cert, yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_assert_not(nc_permits(ca->cert, no[i]), "%s", no[i]);
	struct hostpats hp = {0};
	const char *why;
	cr_assert_eq(hostpat_add(&hp, "*.example.org", &why), 0);
	cr_assert_eq(ca_check(crt, key, &hp, err, sizeof(err)), 0, "%s",
	    err);
	cr_assert_eq(hostpat_add(&hp, "*.bank.example", &why), 0);
	cr_assert_eq(ca_check(crt, key, &hp, err, sizeof(err)), -1);
	cr_assert(strstr(err, "'*.bank.example'") != NULL && strstr(err,
	    crt) != NULL && strstr(err, "DNS example.org") != NULL, "%s",
	    err);
	hostpat_clear(&hp);
	ca_free(&ca);
}

/* --for '*' would be no constraint at all, and a name below an address
 * none: both refused, nothing written. */
Test(cert, patterns_that_constrain_nothing_are_refused)
{
	const char *bad[] = {"*", "*.10.0.0.1"};
	char d[128];
	struct stat st;

	snprintf(d, sizeof(d), "%s/ca", dir);
	for (size_t i = 0; i < 2; i++) {
		struct hostpats hp = {0};
		const char *why;
		cr_assert_eq(hostpat_add(&hp, bad[i], &why), 0);
		cr_assert_eq(ca_make(d, "test", &hp, err, sizeof(err)), -1,
		    "%s", bad[i]);
		cr_assert(strstr(err, "--for") != NULL, "%s", err);
		hostpat_clear(&hp);
	}
	cr_assert_neq(stat(key, &st), 0, "a key was written");
}
