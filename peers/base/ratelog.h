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

#endif
