/*
 * Claims: which keys a filter should count now, for a filter that must
 * hold only copies that can still be served.
 *
 * For each key the table keeps how many stored objects have it and until
 * when it is claimed: the latest deadline among them (variants of one URL
 * share a key). A heap of deadlines, soonest first, lets keys lapse in
 * O(log n) each, with no walk of the store. A key comes back when an
 * object of it is stored again with a later deadline (a revalidation
 * stores a new copy).
 *
 * The table touches no filter: each call that claims a key or lets one go
 * hands it back, and the owner counts it in its filter or takes it out.
 * Two owners: the publisher (a deadline of expiry less the publication
 * delay) and the Squid digest (expiry less the digest's period).
 *
 * The cost accepted: a key whose latest variant leaves stays claimed
 * until that variant's deadline, since the table keeps one deadline a key
 * rather than one per object. About 48 bytes a key with its buckets and
 * heap (claims_bytes tells).
 *
 * Ownership: the table owns its slots. A struct claim * it returns is
 * valid until the next call that adds to the table.
 */
#ifndef CLAIMS_H
#define CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sumkey.h"

/* A deadline that never passes: claimed while an object has the key. */
#define CLAIMS_FOREVER UINT64_MAX

struct claim {
	struct sumkey key;
	uint64_t until_ms;   /* claimed while now is before it */
	uint32_t objects;    /* stored objects with this key; 0: a free slot */
	bool claimed;        /* counted in the owner's filter */
	uint8_t tag;         /* the owner's (the publisher: which filter) */
	/* the table's own */
	uint32_t next;       /* hash chain, or the free list */
	uint32_t heap;       /* place in the deadline heap, or none */
};

struct claims;

/* The deadline of a copy fresh until expires_ms (CLAIMS_FOREVER: never
 * stale) that must stay fresh margin_ms beyond its claim: the publisher's
 * publication delay, the Squid digest's period. */
static inline uint64_t
claims_until(uint64_t expires_ms, uint64_t margin_ms)
{
	if (expires_ms == CLAIMS_FOREVER)
		return CLAIMS_FOREVER;
	return expires_ms > margin_ms ? expires_ms - margin_ms : 0;
}

/* An empty table; NULL on ENOMEM. */
struct claims *claims_new(void);
void claims_free(struct claims **t);

/*
 * A stored object has key k and may be claimed until until_ms; now is
 * now_ms on the same clock. Returns 1 when the key has just become
 * claimed (*c: the owner counts it), 2 when a claimed key's deadline
 * moved later (*c: a revalidated copy, or a later variant; a filter
 * whose slots carry deadlines moves them, and finds the key's slot by
 * the deadline it had, *was_ms when was_ms is not NULL), 0 when nothing
 * changed for
 * the filter, -1 on ENOMEM (the object has no claim; its removal is then
 * refused).
 */
int claims_add(struct claims *t, const struct sumkey *k, uint64_t until_ms,
    uint64_t now_ms, struct claim **c, uint64_t *was_ms);
/*
 * A stored object with key k left. Returns 1 when the key was claimed
 * and no longer is (*gone: its last state, for the owner to uncount), 0
 * when nothing changed for the filter, -1 when no stored object has key k
 * (a caller's mistake).
 */
int claims_remove(struct claims *t, const struct sumkey *k,
    struct claim *gone);
/* The next claimed key whose deadline is at or before now_ms, now no
 * longer claimed (the owner uncounts it); NULL when there is none. */
struct claim *claims_lapse(struct claims *t, uint64_t now_ms);

/* For a walk over every key: slots 0 .. claims_slots(t) - 1, of which
 * those with objects == 0 are free. */
size_t claims_slots(const struct claims *t);
struct claim *claims_slot(struct claims *t, size_t i);
/* Keys in the table, claimed or not, and the table's memory. */
size_t claims_keys(const struct claims *t);
size_t claims_bytes(const struct claims *t);

#endif
