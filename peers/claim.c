/*
 * The rule for following a peer's claims (peers.h: claim_before,
 * struct claim_record): which claimant is asked first, and when one whose
 * claims keep proving false is skipped. Pure arithmetic on a record and a
 * clock the caller gives, so the daemon (table.c, per peer) and the
 * simulator (deploy/sim/sim.c, on the trace's clock) run the same code.
 */
#include "peers.h"

bool
claim_note(struct claim_record *r, enum claim_outcome o, uint64_t now_ms)
{
	if (o == CLAIM_HIT) {
		r->false_rate -= r->false_rate / CLAIM_WINDOW;
		r->false_run = 0;
		r->skip_ms = 0;
		return false;
	}
	if (o == CLAIM_FALSE) {
		r->false_rate += (1.0 - r->false_rate) / CLAIM_WINDOW;
		if (++r->false_run < CLAIM_SKIP_RUN)
			return false;
	}
	r->skip_ms = r->skip_ms == 0 ? CLAIM_SKIP_MIN_MS :
	    r->skip_ms * 2 > CLAIM_SKIP_MAX_MS ? CLAIM_SKIP_MAX_MS :
	    r->skip_ms * 2;
	r->skip_until_ms = now_ms + r->skip_ms;
	return true;
}

bool
claim_skipped(const struct claim_record *r, uint64_t now_ms)
{
	return now_ms < r->skip_until_ms;
}

void
claim_renew(struct claim_record *r)
{
	*r = (struct claim_record){0};
}

bool
claim_before(double false_rate_a, double rtt_a, double false_rate_b,
    double rtt_b)
{
	/* the rounding slack keeps 1 / CLAIM_WINDOW a whole step */
	long a = (long)(false_rate_a * CLAIM_STEPS + 1e-9);
	long b = (long)(false_rate_b * CLAIM_STEPS + 1e-9);

	return a != b ? a < b : rtt_a < rtt_b;
}
