/*
 * A limit of one log line per second for one kind of event: a flood of
 * bad messages must not become a flood of log lines (the event's counter
 * still has every one).
 */
#ifndef RATELOG_H
#define RATELOG_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"

struct ratelog {
	uint64_t last_ms;   /* of the last line written */
	uint64_t skipped;   /* events since then without a line */
};

/*
 * Whether this event may have a log line; when it may, *skipped is how
 * many went without one since the last line.
 */
static inline bool
ratelog_due(struct ratelog *r, uint64_t *skipped)
{
	uint64_t now = mono_ms();

	if (r->last_ms != 0 && now - r->last_ms < 1000) {
		r->skipped++;
		return false;
	}
	r->last_ms = now;
	*skipped = r->skipped;
	r->skipped = 0;
	return true;
}

/*
 * The same limit kept apart for each kind of a family of events (a
 * cause, a reason code), so that a fault of another kind in the same
 * second gets its line too: one limit for all hid the second different
 * fault in a row. RATELOG_KINDS kinds are told apart; beyond them, the
 * kind whose last line is oldest gives up its place.
 */
#define RATELOG_KINDS 8

struct ratelog_by {
	uint64_t kind[RATELOG_KINDS];
	struct ratelog r[RATELOG_KINDS];
};

static inline bool
ratelog_due_for(struct ratelog_by *rb, uint64_t kind, uint64_t *skipped)
{
	unsigned at = 0;

	for (unsigned i = 0; i < RATELOG_KINDS; i++) {
		if (rb->kind[i] == kind && rb->r[i].last_ms != 0)
			return ratelog_due(&rb->r[i], skipped);
		if (rb->r[i].last_ms < rb->r[at].last_ms)
			at = i;
	}
	rb->kind[at] = kind;
	rb->r[at] = (struct ratelog){0};
	return ratelog_due(&rb->r[at], skipped);
}

#endif
