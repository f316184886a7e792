/*
 * Peer summaries and their messages.
 *
 * The array is kept as 64-bit words on a little-endian host, which makes
 * its byte image exactly the wire and Squid-digest layout (bit b in byte
 * b/8 at 1 << (b % 8)), so checksums and raw transfers need no conversion.
 *
 * A delta lists bits to set and bits to clear (set/clear, never toggle: a
 * replayed delta changes nothing). It is applied in place with an undo
 * log of the bits it actually flipped; if the result's checksum is not the
 * sender's, the log puts every bit back. A full message is decoded into a
 * fresh array and swapped in only when complete and verified.
 */
#include "psum.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>


#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "summary arrays are little-endian words; port sum_checksum first"
#endif

static size_t
nwords(uint64_t m)
{
	return (size_t)((m + 63) / 64);
}

static size_t
nbytes(uint64_t m)
{
	return (size_t)((m + 7) / 8);
}

uint64_t
sum_checksum(const uint64_t *bits, uint64_t m)
{
	return XXH64(bits, nbytes(m), 0);
}

static bool
params_ok(enum sum_scheme scheme, uint64_t m, unsigned k)
{
	return m >= 64 && m <= SUM_MAX_BITS && k >= 1 && k <= CBF_MAX_K &&
	    (scheme == SUM_XXH3 ||
		(scheme == SUM_SQUID_MD5 && k == SUM_SQUID_K));
}

/* A timed summary is a cuckoo table's copy (cuckoo.h): m its slots,
 * whole buckets, k its fingerprint's bits, either scheme (the table reads
 * the key's 16 bytes, whichever hash made them). */
static bool
timed_params_ok(enum sum_scheme scheme, uint64_t m, unsigned k)
{
	return m >= CK_BUCKET && m % CK_BUCKET == 0 &&
	    m / CK_BUCKET <= CK_MAX_BUCKETS && k == CK_FP_BITS &&
	    (scheme == SUM_XXH3 || scheme == SUM_SQUID_MD5);
}

/* An empty summary of either kind. */
static struct psum *
psum_alloc(enum sum_scheme scheme, uint64_t m, unsigned k, bool timed)
{
	if (!(timed ? timed_params_ok(scheme, m, k) :
	    params_ok(scheme, m, k)))
		return NULL;
	struct psum *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	if (timed)
		p->ck = ck_copy_new(m / CK_BUCKET);
	else
		p->bits = calloc(nwords(m), sizeof(uint64_t));
	if (p->ck == NULL && p->bits == NULL) {
		free(p);
		return NULL;
	}
	p->scheme = scheme;
	p->m = m;
	p->k = k;
	p->checksum = timed ? 0 : sum_checksum(p->bits, m);
	return p;
}

struct psum *
psum_new(enum sum_scheme scheme, uint64_t m, unsigned k)
{
	return psum_alloc(scheme, m, k, false);
}

struct psum *
psum_new_timed(enum sum_scheme scheme, uint64_t m, unsigned k)
{
	return psum_alloc(scheme, m, k, true);
}

void
psum_free(struct psum **pp)
{
	struct psum *p = *pp;

	if (p == NULL)
		return;
	*pp = NULL;
	free(p->bits);
	ck_copy_free(&p->ck);
	free(p);
}

static bool
bit(const uint64_t *bits, uint64_t b)
{
	return (bits[b >> 6] >> (b & 63)) & 1;
}

/* The sender's clock at now_ms on ours: where its last message set it,
 * moved on by our own clock since (never back). */
static uint64_t
sender_now(const struct sum_clock *c, uint64_t now_ms)
{
	return c->sent_ms + (now_ms > c->local_ms ? now_ms - c->local_ms : 0);
}

bool
psum_contains(const struct psum *p, const struct sumkey *key,
    uint64_t now_ms)
{
	uint64_t pos[CBF_MAX_K];

	if (p->ck != NULL)
		return ck_copy_contains(p->ck, key,
		    sender_now(&p->clock, now_ms));
	sumkey_positions(p->scheme, key, p->k, p->m, pos);
	for (unsigned i = 0; i < p->k; i++)
		if (!bit(p->bits, pos[i]))
			return false;
	return true;
}

double
psum_fill(const struct psum *p)
{
	return (double)p->ones / (double)p->m;
}

double
psum_fpr(const struct psum *p)
{
	return p->ck != NULL ? ck_fpr(p->ones, p->m) :
	    pow(psum_fill(p), p->k);
}

size_t
psum_bytes(const struct psum *p)
{
	return sizeof(*p) + (p->ck != NULL ? ck_copy_bytes(p->ck) :
	    nwords(p->m) * sizeof(uint64_t));
}

uint64_t
sum_popcount(const uint64_t *bits, uint64_t m)
{
	uint64_t n = 0;

	for (size_t w = 0; w < nwords(m); w++)
		n += (uint64_t)__builtin_popcountll(bits[w]);
	return n;
}

/* ---- full summaries ---- */

/* A full summary's array is in place: the rest of what p holds follows. */
static void
loaded(struct psum *p, enum sum_scheme scheme, uint64_t m, unsigned k,
    uint64_t epoch, uint64_t seq, uint64_t ones, uint64_t checksum)
{
	p->scheme = scheme;
	p->m = m;
	p->k = k;
	p->epoch = epoch;
	p->seq = seq;
	p->ones = ones;
	p->checksum = checksum;
	p->loaded = true;
}

int
sum_encode_full(const uint64_t *bits, uint64_t m, struct sum_buf *out)
{
	uint64_t ones = sum_popcount(bits, m);
	uint64_t *pos = ones ? malloc((size_t)ones * sizeof(*pos)) : NULL;
	size_t n = 0;

	if (ones && pos == NULL)
		return -1;
	for (size_t w = 0; w < nwords(m); w++)
		for (uint64_t x = bits[w]; x; x &= x - 1)
			pos[n++] = (uint64_t)w * 64 +
			    (unsigned)__builtin_ctzll(x);
	size_t rice = rice_size(pos, n, rice_best_param(pos, n));
	int rc;
	if (rice < nbytes(m)) {
		uint8_t kind = SUM_FULL_RICE;
		rc = sum_buf_put(out, &kind, 1) < 0 ? -1 :
		    rice_encode(out, pos, n);
	} else {
		uint8_t kind = SUM_FULL_RAW;
		rc = sum_buf_put(out, &kind, 1) < 0 ||
		    sum_buf_put(out, bits, nbytes(m)) < 0 ? -1 : 0;
	}
	free(pos);
	return rc;
}

static int
decode_full(const uint8_t *in, size_t len, uint64_t m, uint64_t *bits)
{
	if (len < 1)
		return SUM_ERR_MALFORMED;
	if (in[0] == SUM_FULL_RAW) {
		if (len - 1 != nbytes(m))
			return SUM_ERR_MALFORMED;
		memcpy(bits, in + 1, nbytes(m));
		/* bits past m would make two arrays with one meaning */
		if (m % 8 && (in[len - 1] >> (m % 8)) != 0)
			return SUM_ERR_MALFORMED;
		return 0;
	}
	if (in[0] != SUM_FULL_RICE)
		return SUM_ERR_MALFORMED;
	uint64_t *pos;
	size_t n;
	long used = rice_decode(in + 1, len - 1, m, &pos, &n);
	if (used < 0)
		return (int)used;
	if ((size_t)used != len - 1) {
		free(pos);
		return SUM_ERR_MALFORMED;
	}
	for (size_t i = 0; i < n; i++)
		bits[pos[i] >> 6] |= 1ull << (pos[i] & 63);
	free(pos);
	return 0;
}

int
psum_load_full(struct psum *p, enum sum_scheme scheme, uint64_t m,
    unsigned k, uint64_t epoch, uint64_t seq, const uint8_t *in, size_t len,
    uint64_t checksum)
{
	if (!params_ok(scheme, m, k))
		return SUM_ERR_PARAMS;
	uint64_t *bits = calloc(nwords(m), sizeof(uint64_t));
	if (bits == NULL)
		return SUM_ERR_NOMEM;
	int rc = decode_full(in, len, m, bits);
	if (rc == 0 && sum_checksum(bits, m) != checksum)
		rc = SUM_ERR_CHECKSUM;
	if (rc < 0) {
		free(bits);
		return rc;
	}
	free(p->bits);
	p->bits = bits;
	loaded(p, scheme, m, k, epoch, seq, sum_popcount(bits, m), checksum);
	return 0;
}

/* ---- deltas ---- */

int
sum_encode_delta(const struct cbf_delta *d, struct sum_buf *out)
{
	return rice_encode(out, d->set, d->nset) < 0 ||
	    rice_encode(out, d->cleared, d->ncleared) < 0 ? -1 : 0;
}

/* Sets (or clears) the listed bits, recording those that flipped. */
static void
apply_list(struct psum *p, const uint64_t *pos, size_t n, bool set,
    uint64_t *undo, size_t *nundo)
{
	for (size_t i = 0; i < n; i++) {
		if (bit(p->bits, pos[i]) == set)
			continue;
		p->bits[pos[i] >> 6] ^= 1ull << (pos[i] & 63);
		undo[(*nundo)++] = pos[i];
	}
}

/* Whether two ascending lists share a position. */
static bool
overlap(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	size_t i = 0, j = 0;

	while (i < na && j < nb) {
		if (a[i] == b[j])
			return true;
		if (a[i] < b[j])
			i++;
		else
			j++;
	}
	return false;
}

int
psum_apply_delta(struct psum *p, uint64_t epoch, uint64_t seq,
    const uint8_t *in, size_t len, uint64_t checksum)
{
	uint64_t *set = NULL, *clr = NULL, *undo = NULL;
	size_t nset = 0, nclr = 0, nundo = 0;
	int rc;

	if (!p->loaded || epoch != p->epoch || seq != p->seq + 1)
		return SUM_ERR_GAP;
	long a = rice_decode(in, len, p->m, &set, &nset);
	if (a < 0)
		return (int)a;
	long b = rice_decode(in + a, len - (size_t)a, p->m, &clr, &nclr);
	if (b < 0) {
		rc = (int)b;
		goto out;
	}
	rc = SUM_ERR_MALFORMED;
	if ((size_t)(a + b) != len || overlap(set, nset, clr, nclr))
		goto out;
	rc = SUM_ERR_NOMEM;
	if (nset + nclr > 0 &&
	    (undo = malloc((nset + nclr) * sizeof(*undo))) == NULL)
		goto out;
	apply_list(p, set, nset, true, undo, &nundo);
	size_t nflip_set = nundo;
	apply_list(p, clr, nclr, false, undo, &nundo);
	if (sum_checksum(p->bits, p->m) != checksum) {
		for (size_t i = 0; i < nundo; i++)
			p->bits[undo[i] >> 6] ^= 1ull << (undo[i] & 63);
		rc = SUM_ERR_CHECKSUM;
		goto out;
	}
	p->ones += nflip_set;
	p->ones -= nundo - nflip_set;
	p->seq = seq;
	p->checksum = checksum;
	rc = 0;
out:
	free(set);
	free(clr);
	free(undo);
	return rc;
}

/* ---- timed summaries ---- */


/*
 * The sender's clock after a message of the same base: the later of what
 * the message says and what the last one said, moved on by ours. A
 * message that waited in a queue says an earlier time than its sender's
 * clock read when it arrived, and read alone would make every claim look
 * longer by the wait; the least delayed reading of the two is the better.
 */
static struct sum_clock
later_clock(const struct psum *p, const struct sum_clock *clk)
{
	uint64_t was = sender_now(&p->clock, clk->local_ms);

	return (struct sum_clock){was > clk->sent_ms ? was : clk->sent_ms,
	    clk->local_ms};
}

/* A full timed message: a copy of its size (p's, or a new one) loads
 * it; the clock as the message sets it. */
static int
psum_load_timed(struct psum *p, const struct sum_msg *msg,
    const struct sum_clock *clk)
{
	if (!timed_params_ok(msg->scheme, msg->m, msg->k) || p->ck == NULL)
		return SUM_ERR_PARAMS;
	struct ck_copy *c = p->ck->nb == msg->m / CK_BUCKET ? p->ck :
	    ck_copy_new(msg->m / CK_BUCKET);
	if (c == NULL)
		return SUM_ERR_NOMEM;
	int rc = ck_copy_load(c, msg->sent_ms, msg->payload, msg->len,
	    msg->checksum);
	if (rc < 0) {
		if (c != p->ck)
			ck_copy_free(&c);
		return rc;
	}
	if (c != p->ck) {
		ck_copy_free(&p->ck);
		p->ck = c;
	}
	/* a new epoch counts from a new origin: its clock starts afresh */
	p->clock = p->loaded && msg->epoch == p->epoch ?
	    later_clock(p, clk) : *clk;
	loaded(p, msg->scheme, msg->m, msg->k, msg->epoch, msg->seq,
	    c->keys, msg->checksum);
	return 0;
}

static int
psum_apply_timed(struct psum *p, const struct sum_msg *msg,
    const struct sum_clock *clk)
{
	if (p->ck == NULL)
		return SUM_ERR_PARAMS;
	if (!p->loaded || msg->epoch != p->epoch || msg->seq != p->seq + 1)
		return SUM_ERR_GAP;
	int rc = ck_copy_apply(p->ck, msg->sent_ms, msg->payload, msg->len,
	    msg->checksum);
	if (rc < 0)
		return rc;
	p->seq = msg->seq;
	p->clock = later_clock(p, clk);
	p->ones = p->ck->keys;
	p->checksum = msg->checksum;
	return 0;
}

/*
 * Bytes below the size of a full summary of f: encoding a full one is
 * O(m), so it is only built when the delta is not already smaller. The
 * set bits are n positions that hashing spreads over m; their Rice
 * list costs at least n (log2((m - n) / n) + 0.9) bits at its best
 * parameter (the sum of n (r + 1) and the gaps' quotients, over r), and
 * more; a full may be the raw array instead, m / 8 bytes. (A floor of
 * one bit a position, a first version, had the daemon build a full for most
 * of its deltas under placement hash: 6 % of its own CPU.)
 */
static size_t
full_floor(const struct cbf *f)
{
	double n = (double)f->ones, m = (double)f->m, raw = (m + 7) / 8 + 1;

	if (n == 0 || m <= n)
		return 0;
	double floor = n * (log2((m - n) / n) + 0.9) / 8;
	if (floor <= 0)
		return 0;  /* a filter more than half full */
	return (size_t)(floor < raw ? floor : raw);
}

int
psum_take(struct psum **pp, const struct sum_msg *msg, uint64_t local_ms)
{
	struct sum_clock clk = {msg->sent_ms, local_ms};
	struct psum *p = *pp;

	if (!msg->full) {
		if (p == NULL || (p->ck != NULL) != msg->timed)
			return SUM_ERR_GAP;
		return msg->timed ? psum_apply_timed(p, msg, &clk) :
		    psum_apply_delta(p, msg->epoch, msg->seq, msg->payload,
		    msg->len, msg->checksum);
	}
	bool fresh = p == NULL || (p->ck != NULL) != msg->timed;
	if (fresh && (p = psum_alloc(msg->scheme, msg->m, msg->k,
	    msg->timed)) == NULL)
		return (msg->timed ? timed_params_ok(msg->scheme, msg->m,
		    msg->k) : params_ok(msg->scheme, msg->m, msg->k)) ?
		    SUM_ERR_NOMEM : SUM_ERR_PARAMS;
	int rc = msg->timed ? psum_load_timed(p, msg, &clk) : psum_load_full(p, msg->scheme, msg->m, msg->k, msg->epoch,
	    msg->seq, msg->payload, msg->len, msg->checksum);
	if (fresh) {
		if (rc == 0) {
			psum_free(pp);
			*pp = p;
		} else {
			psum_free(&p);
		}
	}
	return rc;
}

/* ---- publishing ---- */

int
sum_publish(struct cbf *f, struct sum_buf *out, bool *full,
    uint64_t *checksum)
{
	struct cbf_delta d;
	struct sum_buf delta = {0}, whole = {0};
	int rc = -1;

	if (cbf_delta(f, &d) < 0)
		return -1;
	if (sum_encode_delta(&d, &delta) < 0)
		goto out;
	*full = false;
	if (delta.len > full_floor(f)) {
		if (sum_encode_full(f->bits, f->m, &whole) < 0)
			goto out;
		*full = whole.len <= delta.len;
	}
	struct sum_buf *pick = *full ? &whole : &delta;
	if (sum_buf_put(out, pick->p, pick->len) < 0)
		goto out;
	*checksum = sum_checksum(f->bits, f->m);
	cbf_mark_published(f);
	rc = 0;
out:
	cbf_delta_clear(&d);
	free(delta.p);
	free(whole.p);
	return rc;
}
