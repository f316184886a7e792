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

/* A follower worker with no reader of a share: it holds back nothing. */
#define CROWD_NONE UINT64_MAX

/*
 * The leader's head is in and its body comes into copy, or into file, a
 * record on its way to the disk whose bytes never move (a reference
 * taken) (length: -1 until known): readers on the other workers read it
 * as it arrives (shape: the object's head and metadata, a reference
 * taken). The leader moves the copy only between crowd_move_begin and
 * crowd_move_end. taken(arg) runs on the leader's loop when another
 * worker's readers took more or left and the leader asked for it
 * (crowd_windowed).
 */
void crowd_share(struct crowd_claim *claim, struct store_obj *shape,
    struct store_body *copy, struct store_body *file, int64_t length,
    void (*taken)(void *arg), void *arg);
/* The leader: bytes [0, have) of the shared body are in (the copy holds
 * [base, have)), and its length is length (-1: not known yet). Accepts a
 * claim that shares nothing. */
void crowd_have(struct crowd_claim *claim, uint64_t have, int64_t length);
/* The leader is about to move bytes of its copy (it grows, or a window
 * slides): returns when no other worker reads it; until crowd_move_end,
 * none does. The end says where the copy is now (copy holds [base,
 * ...)), and tells every follower worker to read again. */
void crowd_move_begin(struct crowd_claim *claim);
void crowd_move_end(struct crowd_claim *claim, struct store_body *copy,
    uint64_t base);
/* The leader's copy is a window that keeps only what every reader has
 * not taken: other workers' readers say what they take (crowd_taken),
 * and the leader hears it (taken). */
void crowd_windowed(struct crowd_claim *claim);
/* The fewest bytes a reader on another worker has taken, CROWD_NONE when
 * none reads there. */
uint64_t crowd_slowest(const struct crowd_claim *claim);
/* No newcomer follows claim any more (a window let its first bytes go):
 * the next one leads a fetch of its own. Its followers are still told. */
void crowd_unlist(struct crowd_claim *claim);
/* The leader is about to freeze or free its copy: returns when no other
 * worker reads it, and none will again (they get the rest from the
 * stored object when told the end). Accepts NULL and a claim that
 * shares nothing. */
void crowd_unshare(struct crowd_claim *claim);

/* A follower reads the shared body: *src is what it may read now (copy,
 * base, have, length); false when it may not (the copy moves, or is
 * unshared: the next news says more). Between a true and crowd_read_end
 * the bytes of src stay where they are. Nests. */
bool crowd_read_begin(struct crowd_share *sh, struct busy_source *src);
void crowd_read_end(struct crowd_share *sh);
/* Follower worker w's slowest reader has taken least bytes of the body
 * (CROWD_NONE: none reads there any more). */
void crowd_taken(struct crowd_share *sh, const struct worker *w,
    uint64_t least);
/* The shared object's head and metadata. */
struct store_obj *crowd_share_shape(const struct crowd_share *sh);
/* Another reference to sh; crowd_share_unref drops one (accepts NULL,
 * clears *sh). */
struct crowd_share *crowd_share_ref(struct crowd_share *sh);
void crowd_share_unref(struct crowd_share **sh);

/* The claim ends: it leaves the table (a newcomer leads the next fetch),
 * its copy is unshared, and every worker that follows it is told out.
 * Accepts NULL; clears *claim. */
void crowd_end(struct crowd_claim **claim, const struct crowd_outcome *out);

#endif
