/*
 * The leaf cache (leaves.h): a hash of host names to leaves, with a list in
 * order of use; past its capacity the least recently used leaf goes.
 * Leaves are valid from an hour ago (clients with slow clocks) for
 * LEAF_VALID_DAYS, never past the CA's own end. All share one key, made
 * when the cache is: it never leaves memory, and a minted leaf then costs
 * a signature rather than a key generation as well.
 */
#include "leaves.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/x509v3.h>
#include <xxhash.h>

#include "cert.h"
#include "ca.h"

struct leaf {
	struct leaf *hnext;          /* in its bucket */
	struct leaf *prev, *next;    /* in order of use, newest first */
	X509 *cert;
	time_t not_after;
	char host[];                 /* lower case */
};

struct leaves {
	const struct ca *ca;
	EVP_PKEY *key;
	size_t capacity;
	size_t nbuckets;             /* a power of two */
	struct leaf **buckets;
	struct leaf *newest, *oldest;
	struct leaves_stats stats;
};

struct leaves *
leaves_new(const struct ca *ca, size_t capacity, char *err, size_t elen)
{
	struct leaves *l = calloc(1, sizeof(*l));

	if (l == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	l->ca = ca;
	l->capacity = capacity > 0 ? capacity : 1;
	for (l->nbuckets = 16; l->nbuckets < 2 * l->capacity;)
		l->nbuckets *= 2;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	if (l->buckets == NULL) {
		snprintf(err, elen, "out of memory");
		leaves_free(&l);
		return NULL;
	}
	if ((l->key = cert_new_key(err, elen)) == NULL)
		leaves_free(&l);
	return l;
}

static struct leaf **
bucket(struct leaves *l, const char *host)
{
	return &l->buckets[XXH3_64bits(host, strlen(host)) &
	    (l->nbuckets - 1)];
}

static void
unlink_use(struct leaves *l, struct leaf *f)
{
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		l->newest = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	else
		l->oldest = f->prev;
	f->prev = f->next = NULL;
}

static void
push_newest(struct leaves *l, struct leaf *f)
{
	f->next = l->newest;
	if (l->newest != NULL)
		l->newest->prev = f;
	l->newest = f;
	if (l->oldest == NULL)
		l->oldest = f;
}

static void
drop(struct leaves *l, struct leaf *f)
{
	struct leaf **p = bucket(l, f->host);

	while (*p != f)
		p = &(*p)->hnext;
	*p = f->hnext;
	unlink_use(l, f);
	X509_free(f->cert);
	free(f);
	l->stats.cached--;
}

static struct leaf *
mint(struct leaves *l, const char *host, char *err, size_t elen)
{
	time_t now = time(NULL), ca_end;
	size_t n = strlen(host);
	struct leaf *f = calloc(1, sizeof(*f) + n + 1);
	struct tm tm;

	if (f == NULL) {
		snprintf(err, elen, "out of memory");
		return NULL;
	}
	memcpy(f->host, host, n + 1);
	f->not_after = now + (time_t)LEAF_VALID_DAYS * 86400;
	if (ASN1_TIME_to_tm(X509_get0_notAfter(l->ca->cert), &tm) == 1 &&
	    (ca_end = timegm(&tm)) < f->not_after)
		f->not_after = ca_end;
	/* an address is named in the subjectAltName alone: as a common
	 * name it reads as a DNS name, which a CA's name constraints
	 * refuse when they permit DNS names and this address (OpenSSL
	 * checks a leaf's CN as one when it has no DNS name) */
	struct cert_spec spec = {.cn = cert_host_is_ip(host) ?
	    "sumcache leaf" : f->host,
	    .host = f->host, .not_before = now - 3600,
	    .not_after = f->not_after};
	f->cert = cert_build(&spec, l->key, l->ca->cert, l->ca->key, err,
	    elen);
	if (f->cert == NULL) {
		free(f);
		return NULL;
	}
	l->stats.minted++;
	return f;
}

X509 *
leaves_get(struct leaves *l, const char *host, char *err, size_t elen)
{
	struct leaf *f;
	char low[256];       /* cert_host_ok: at most 253 */

	if (!cert_host_ok(host)) {
		l->stats.refused++;
		char shown[81];
		cert_host_shown(host, shown, sizeof(shown));
		snprintf(err, elen, "no certificate may name the host %s",
		    shown);
		return NULL;
	}
	/* names are case-blind: one leaf for Example.ORG and example.org */
	for (size_t i = 0; (low[i] = host[i]) != '\0'; i++)
		if (low[i] >= 'A' && low[i] <= 'Z')
			low[i] = (char)(low[i] + 32);
	host = low;
	for (f = *bucket(l, host); f != NULL; f = f->hnext)
		if (strcmp(f->host, host) == 0)
			break;
	if (f != NULL && f->not_after - time(NULL) > LEAF_RENEW_S) {
		unlink_use(l, f);
		push_newest(l, f);
		l->stats.reused++;
		return f->cert;
	}
	if (f != NULL)
		drop(l, f);
	if ((f = mint(l, host, err, elen)) == NULL)
		return NULL;
	while (l->stats.cached >= l->capacity && l->oldest != NULL) {
		drop(l, l->oldest);
		l->stats.evicted++;
	}
	struct leaf **b = bucket(l, f->host);
	f->hnext = *b;
	*b = f;
	push_newest(l, f);
	l->stats.cached++;
	return f->cert;
}

EVP_PKEY *
leaves_key(const struct leaves *l)
{
	return l->key;
}

const struct leaves_stats *
leaves_stats(struct leaves *l)
{
	return &l->stats;
}

void
leaves_free(struct leaves **lp)
{
	struct leaves *l = *lp;

	if (l == NULL)
		return;
	*lp = NULL;
	while (l->oldest != NULL)
		drop(l, l->oldest);
	free(l->buckets);
	EVP_PKEY_free(l->key);
	free(l);
}
