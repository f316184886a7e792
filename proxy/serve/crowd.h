/*
 * Collapsed forwarding across workers: which worker leads the fetch of a
 * URL, and telling the others' waiters how it ended. See crowd.c.
 */
#ifndef CROWD_H
#define CROWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "busy.h"

struct crowd;
struct crowd_claim;
struct worker;

/* The node's table; NULL on ENOMEM. One per node of several workers. */
struct crowd *crowd_new(void);
/* Every claim must be over. Accepts NULL; clears *c. */
void crowd_free(struct crowd **c);

/* How a leader's fetch ended, for the waiters of the other workers. */
struct crowd_outcome {
	enum busy_end end;
	bool failed;          /* busy_fail's: the rest says how */
	int status;
	bool disconnected;
	char cause[160];
};

/* What a worker's busy.c does when a leader elsewhere is done: run on
 * that worker's loop, for every follower it has of key. */
typedef void crowd_ended_f(struct worker *w, const char *key, size_t klen,
    const struct crowd_outcome *out);

enum crowd_role {
	CROWD_LEAD,    /* nobody leads key: w does now (*claim is its own) */
	CROWD_FOLLOW,  /* another worker leads it: w is told when it ends */
	CROWD_ALONE,   /* no memory for either: w fetches by itself */
};

/*
 * w has no fetch of key. Claims the lead of it for w, or enrols w to be
 * told (ended, on w's loop) how the leader's ends; *started_ms is then
 * the leader's start (the waiters' bound counts from it).
 */
enum crowd_role crowd_claim(struct crowd *c, struct worker *w,
    const char *key, size_t klen, crowd_ended_f *ended,
    struct crowd_claim **claim, uint64_t *started_ms);

/* Whether some worker leads a fetch of key now. */
bool crowd_running(struct crowd *c, const char *key, size_t klen);

/* The claim's fetch has started at started_ms (its busy object's). */
void crowd_started(struct crowd_claim *claim, uint64_t started_ms);

/* The claim ends: it leaves the table (a newcomer leads the next fetch),
 * and every worker that follows it is told out. Accepts NULL; clears
 * *claim. */
void crowd_end(struct crowd_claim **claim, const struct crowd_outcome *out);

#endif
