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

struct store_obj;
struct store_body;
struct crowd_share;

/* How a leader's fetch ended, for the waiters of the other workers. */
struct crowd_outcome {
	enum busy_end end;
	struct store_obj *obj; /* BUSY_DONE: the object stored, or NULL
	                        * (borrowed: each note takes a reference) */
	bool failed;           /* busy_fail's: the rest says how */
	int status;
	bool disconnected;
	char cause[160];
};

/* What a worker's busy.c is told of a leader elsewhere, on its own loop,
 * for its follower of key: the leader's body is shared (sh, a reference
 * that is the callee's), more of it is in (sh borrowed), its fetch
 * ended. */
struct crowd_follower_ops {
	void (*shared)(struct worker *w, const char *key, size_t klen,
	    struct crowd_share *sh);
	void (*more)(struct worker *w, const char *key, size_t klen,
	    struct crowd_share *sh);
	void (*ended)(struct worker *w, const char *key, size_t klen,
	    const struct crowd_outcome *out);
};

enum crowd_role {
	CROWD_LEAD,    /* nobody leads key: w does now (*claim is its own) */
	CROWD_FOLLOW,  /* another worker leads it: w is told when it ends */
	CROWD_ALONE,   /* no memory for either: w fetches by itself */
};

/*
 * w has no fetch of key. Claims the lead of it for w, or enrols w to be
 * told (through ops, on w's loop) how the leader's goes; *started_ms is
 * then the leader's start (the waiters' bound counts from it), and *sh
 * the leader's shared body if it is already (a reference, the caller's),
 * else NULL.
 */
enum crowd_role crowd_claim(struct crowd *c, struct worker *w,
    const char *key, size_t klen, const struct crowd_follower_ops *ops,
    struct crowd_claim **claim, uint64_t *started_ms,
    struct crowd_share **sh);

/* Whether some worker leads a fetch of key now. */
bool crowd_running(struct crowd *c, const char *key, size_t klen);

/* The claim's fetch has started at started_ms (its busy object's). */
void crowd_started(struct crowd_claim *claim, uint64_t started_ms);

/*
 * The leader's head is in and its body comes into copy, reserved whole
 * for length bytes: its bytes never move while it is shared. Readers on
 * the other workers read it as it arrives (shape: the object's head and
 * metadata, a reference taken).
 */
void crowd_share(struct crowd_claim *claim, struct store_obj *shape,
    struct store_body *copy, uint64_t length);
/* The leader: bytes [0, have) of the shared copy are in. Accepts a claim
 * that shares nothing. */
void crowd_have(struct crowd_claim *claim, uint64_t have);
/* The leader is about to move or free its copy: returns when no other
 * worker reads it, and none will again (they get the rest from the
 * stored object when told the end). Accepts NULL and a claim that
 * shares nothing. */
void crowd_unshare(struct crowd_claim *claim);

/* A follower reads the shared copy: what the leader has of it (*have);
 * false when it may not (unshared). Between a true and crowd_read_end
 * its bytes [0, *have) stay where they are. Nests. */
bool crowd_read_begin(struct crowd_share *sh, uint64_t *have);
void crowd_read_end(struct crowd_share *sh);
/* The shared object's head and metadata, the copy and its length. */
struct store_obj *crowd_share_shape(const struct crowd_share *sh);
struct store_body *crowd_share_copy(const struct crowd_share *sh);
uint64_t crowd_share_length(const struct crowd_share *sh);
/* Accepts NULL; clears *sh. */
void crowd_share_unref(struct crowd_share **sh);

/* The claim ends: it leaves the table (a newcomer leads the next fetch),
 * its copy is unshared, and every worker that follows it is told out.
 * Accepts NULL; clears *claim. */
void crowd_end(struct crowd_claim **claim, const struct crowd_outcome *out);

#endif
