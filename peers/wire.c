/*
 * See wire.h. The generated protobuf-c code does the byte-level parsing;
 * this file decides what a well-formed summary message is.
 */
#include "wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "sumcache.pb-c.h"

#define MAC_LEN 32

static bool
mac(const uint8_t *key, size_t keylen, const uint8_t *data, size_t len,
    uint8_t out[MAC_LEN])
{
	unsigned int n = 0;

	return HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &n) !=
	    NULL && n == MAC_LEN;
}

bool
wire_name_ok(const char *name, size_t len)
{
	if (len == 0 || len > WIRE_MAX_SENDER)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
			return false;
	}
	return true;
}

/* An Invalidation's MAC: over its context, then its bytes. */
static const char inval_context[] = "sumcache invalidation";

static bool
inval_mac(const uint8_t *key, size_t keylen, const uint8_t *data,
    size_t len, uint8_t out[MAC_LEN])
{
	/* one buffer: an invalidation is small, and the one-shot HMAC is
	 * OpenSSL 3's undeprecated interface */
	uint8_t *b = malloc(sizeof(inval_context) + len);
	bool ok = b != NULL;

	if (ok) {
		memcpy(b, inval_context, sizeof(inval_context));
		memcpy(b + sizeof(inval_context), data, len);
		ok = mac(key, keylen, b, sizeof(inval_context) + len, out);
	}
	free(b);
	return ok;
}

/* Appends a Signed envelope holding the len bytes at msg, as a summary
 * or as an invalidation, with its MAC, to out. 0, or -1 on ENOMEM. */
static int
seal(const uint8_t *msg, size_t len, bool invalidation, const uint8_t *key,
    size_t keylen, struct sum_buf *out)
{
	Sumcache__V1__Signed sig = SUMCACHE__V1__SIGNED__INIT;
	uint8_t tag[MAC_LEN];

	if (!(invalidation ? inval_mac : mac)(key, keylen, msg, len, tag))
		return -1;
	ProtobufCBinaryData *field = invalidation ? &sig.invalidation :
	    &sig.summary;
	field->data = (uint8_t *)msg;
	field->len = len;
	sig.mac.data = tag;
	sig.mac.len = MAC_LEN;
	size_t n = sumcache__v1__signed__get_packed_size(&sig);
	if (sum_buf_reserve(out, n) < 0)
		return -1;
	sumcache__v1__signed__pack(&sig, out->p + out->len);
	out->len += n;
	return 0;
}

/* The Signed envelope in in[0..len), holding a summary or an
 * invalidation as asked and nothing else, with its MAC checked before
 * anything inside is parsed. On WIRE_OK *sig is the caller's to free;
 * otherwise it is freed (NULL). */
static enum wire_err
open_envelope(const uint8_t *in, size_t len, bool invalidation,
    const uint8_t *key, size_t keylen, Sumcache__V1__Signed **sig)
{
	uint8_t tag[MAC_LEN];

	*sig = NULL;
	if (len > WIRE_MAX_BYTES)
		return WIRE_TOO_BIG;
	Sumcache__V1__Signed *s = sumcache__v1__signed__unpack(NULL, len, in);
	if (s == NULL)
		return WIRE_MALFORMED;
	const ProtobufCBinaryData *body = invalidation ? &s->invalidation :
	    &s->summary;
	const ProtobufCBinaryData *other = invalidation ? &s->summary :
	    &s->invalidation;
	enum wire_err e = WIRE_OK;
	if (body->len == 0 || other->len != 0)
		e = WIRE_MALFORMED;
	else if (s->mac.len != MAC_LEN || !(invalidation ? inval_mac :
	    mac)(key, keylen, body->data, body->len, tag) ||
	    CRYPTO_memcmp(tag, s->mac.data, MAC_LEN) != 0)
		e = WIRE_BAD_MAC;
	if (e != WIRE_OK)
		sumcache__v1__signed__free_unpacked(s, NULL);
	else
		*sig = s;
	return e;
}

int
wire_encode(const struct wire_summary *s, const uint8_t *key, size_t keylen,
    struct sum_buf *out)
{
	Sumcache__V1__Summary sum = SUMCACHE__V1__SUMMARY__INIT;

	sum.sender = (char *)s->sender;
	sum.epoch = s->epoch;
	sum.seq = s->seq;
	sum.scheme = s->scheme == SUM_SQUID_MD5 ?
	    SUMCACHE__V1__HASH_SCHEME__HASH_SQUID_MD5 :
	    SUMCACHE__V1__HASH_SCHEME__HASH_XXH3;
	sum.m = s->m;
	sum.k = s->k;
	if (s->timed)
		sum.kind = s->full ? SUMCACHE__V1__KIND__KIND_TIMED_FULL :
		    SUMCACHE__V1__KIND__KIND_TIMED_DELTA;
	else
		sum.kind = s->full ? SUMCACHE__V1__KIND__KIND_FULL :
		    SUMCACHE__V1__KIND__KIND_DELTA;
	sum.version = WIRE_VERSION;
	sum.sent_ms = s->sent_ms;
	sum.payload.data = s->payload;
	sum.payload.len = s->payload_len;
	sum.checksum = s->checksum;
	sum.entries = s->entries;

	size_t slen = sumcache__v1__summary__get_packed_size(&sum);
	uint8_t *sbytes = malloc(slen ? slen : 1);
	if (sbytes == NULL)
		return -1;
	sumcache__v1__summary__pack(&sum, sbytes);
	int rc = seal(sbytes, slen, false, key, keylen, out);
	free(sbytes);
	return rc;
}

static enum wire_err
fields(const Sumcache__V1__Summary *m, struct wire_summary *s)
{
	size_t nlen = m->sender ? strlen(m->sender) : 0;

	if (!wire_name_ok(m->sender, nlen))
		return WIRE_MALFORMED;
	memcpy(s->sender, m->sender, nlen + 1);
	/* before anything else is read: a Summary of versions 1 and 2 has
	 * the same fields, and a payload that means something else */
	s->version = m->version;
	if (m->version != WIRE_VERSION)
		return WIRE_VERSION_DIFFERS;
	switch (m->scheme) {
	case SUMCACHE__V1__HASH_SCHEME__HASH_XXH3:
		s->scheme = SUM_XXH3;
		break;
	case SUMCACHE__V1__HASH_SCHEME__HASH_SQUID_MD5:
		s->scheme = SUM_SQUID_MD5;
		break;
	default:
		return WIRE_MALFORMED;
	}
	switch (m->kind) {
	case SUMCACHE__V1__KIND__KIND_FULL:
	case SUMCACHE__V1__KIND__KIND_TIMED_FULL:
		s->full = true;
		break;
	case SUMCACHE__V1__KIND__KIND_DELTA:
	case SUMCACHE__V1__KIND__KIND_TIMED_DELTA:
		s->full = false;
		break;
	default:
		return WIRE_MALFORMED;
	}
	s->timed = m->kind == SUMCACHE__V1__KIND__KIND_TIMED_FULL ||
	    m->kind == SUMCACHE__V1__KIND__KIND_TIMED_DELTA;
	s->sent_ms = m->sent_ms;
	/* a timed summary's k is its fingerprint's bits (cuckoo.h) */
	if (m->m == 0 || m->m > WIRE_MAX_BITS || m->seq == 0 ||
	    (s->timed ? m->k != CK_FP_BITS : m->k == 0 || m->k > CBF_MAX_K))
		return WIRE_MALFORMED;
	s->epoch = m->epoch;
	s->seq = m->seq;
	s->m = m->m;
	s->k = m->k;
	s->checksum = m->checksum;
	s->entries = m->entries;
	s->payload_len = m->payload.len;
	s->payload = malloc(m->payload.len ? m->payload.len : 1);
	if (s->payload == NULL)
		return WIRE_NOMEM;
	if (m->payload.len)
		memcpy(s->payload, m->payload.data, m->payload.len);
	return WIRE_OK;
}

int
wire_encode_publication(const struct publication *pub, const char *sender,
    const uint8_t *key, size_t keylen, struct sum_buf *out)
{
	struct wire_summary w = {
		.epoch = pub->epoch,
		.seq = pub->seq,
		.scheme = pub->scheme,
		.m = pub->m,
		.k = pub->k,
		.full = pub->full,
		.payload = pub->payload.p,
		.payload_len = pub->payload.len,
		.checksum = pub->checksum,
		.entries = pub->entries,
		.timed = pub->timed,
		.sent_ms = pub->sent_ms,
	};

	snprintf(w.sender, sizeof(w.sender), "%s", sender);
	return wire_encode(&w, key, keylen, out);
}

enum wire_err
wire_decode(const uint8_t *in, size_t len, const uint8_t *key, size_t keylen,
    struct wire_summary *s)
{
	Sumcache__V1__Signed *sig = NULL;
	Sumcache__V1__Summary *sum = NULL;

	memset(s, 0, sizeof(*s));
	enum wire_err e = open_envelope(in, len, false, key, keylen, &sig);
	if (e == WIRE_OK) {
		sum = sumcache__v1__summary__unpack(NULL, sig->summary.len,
		    sig->summary.data);
		e = sum == NULL ? WIRE_MALFORMED : fields(sum, s);
	}
	/* another version keeps its sender and version, to be named */
	if (e != WIRE_OK && e != WIRE_VERSION_DIFFERS)
		wire_summary_clear(s);
	if (sum)
		sumcache__v1__summary__free_unpacked(sum, NULL);
	if (sig)
		sumcache__v1__signed__free_unpacked(sig, NULL);
	return e;
}

int
wire_encode_invalidation(const char *sender, uint64_t time_us,
    const char *const *urls, size_t n, const uint8_t *key, size_t keylen,
    struct sum_buf *out)
{
	Sumcache__V1__Invalidation inv = SUMCACHE__V1__INVALIDATION__INIT;

	inv.sender = (char *)sender;
	inv.time_us = time_us;
	inv.n_urls = n;
	inv.urls = (char **)urls;
	size_t ilen = sumcache__v1__invalidation__get_packed_size(&inv);
	uint8_t *ibytes = malloc(ilen ? ilen : 1);
	if (ibytes == NULL)
		return -1;
	sumcache__v1__invalidation__pack(&inv, ibytes);
	int rc = seal(ibytes, ilen, true, key, keylen, out);
	free(ibytes);
	return rc;
}

static enum wire_err
inval_fields(const Sumcache__V1__Invalidation *m,
    struct wire_invalidation *inv)
{
	size_t nlen = m->sender ? strlen(m->sender) : 0;

	if (!wire_name_ok(m->sender, nlen) || m->n_urls == 0 ||
	    m->n_urls > WIRE_MAX_URLS)
		return WIRE_MALFORMED;
	memcpy(inv->sender, m->sender, nlen + 1);
	inv->time_us = m->time_us;
	inv->urls = calloc(m->n_urls, sizeof(*inv->urls));
	if (inv->urls == NULL)
		return WIRE_NOMEM;
	for (size_t i = 0; i < m->n_urls; i++) {
		size_t ul = strlen(m->urls[i]);
		if (ul == 0 || ul > WIRE_MAX_URL)
			return WIRE_MALFORMED;
		inv->urls[i] = strdup(m->urls[i]);
		if (inv->urls[i] == NULL)
			return WIRE_NOMEM;
		inv->nurls = i + 1;
	}
	return WIRE_OK;
}

enum wire_err
wire_decode_invalidation(const uint8_t *in, size_t len, const uint8_t *key,
    size_t keylen, struct wire_invalidation *inv)
{
	Sumcache__V1__Signed *sig = NULL;
	Sumcache__V1__Invalidation *m = NULL;

	memset(inv, 0, sizeof(*inv));
	enum wire_err e = open_envelope(in, len, true, key, keylen, &sig);
	if (e == WIRE_OK) {
		m = sumcache__v1__invalidation__unpack(NULL,
		    sig->invalidation.len, sig->invalidation.data);
		e = m == NULL ? WIRE_MALFORMED : inval_fields(m, inv);
	}
	if (e != WIRE_OK)
		wire_invalidation_clear(inv);
	if (m)
		sumcache__v1__invalidation__free_unpacked(m, NULL);
	if (sig)
		sumcache__v1__signed__free_unpacked(sig, NULL);
	return e;
}

void
wire_invalidation_clear(struct wire_invalidation *inv)
{
	for (size_t i = 0; i < inv->nurls; i++)
		free(inv->urls[i]);
	free(inv->urls);
	memset(inv, 0, sizeof(*inv));
}

struct sum_msg
wire_msg(const struct wire_summary *s)
{
	return (struct sum_msg){
		.timed = s->timed, .full = s->full, .scheme = s->scheme,
		.m = s->m, .k = s->k, .epoch = s->epoch, .seq = s->seq,
		.payload = s->payload, .len = s->payload_len,
		.checksum = s->checksum, .sent_ms = s->sent_ms,
	};
}

void
wire_summary_clear(struct wire_summary *s)
{
	free(s->payload);
	memset(s, 0, sizeof(*s));
}

const char *
wire_strerror(enum wire_err e)
{
	switch (e) {
	case WIRE_OK: return "ok";
	case WIRE_TOO_BIG: return "message too large";
	case WIRE_MALFORMED: return "malformed message";
	case WIRE_BAD_MAC: return "bad MAC";
	case WIRE_NOMEM: return "out of memory";
	case WIRE_VERSION_DIFFERS: return "another protocol version";
	}
	return "unknown error";
}
