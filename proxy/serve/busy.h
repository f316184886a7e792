/* Collapsed forwarding: one fetch of an object answers every client
 * asking for it while it runs; see busy.c. */
#ifndef BUSY_H
#define BUSY_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy.h"

struct busy;
struct busy_table;

/* New empty table; NULL on ENOMEM. */
struct busy_table *busy_table_new(void);
/* Frees the table; the busy objects themselves belong to their fetches,
 * which are freed first. Accepts NULL, clears *tp. */
void busy_table_free(struct busy_table **tp);

/*
 * A GET fetch for t's URL (a miss or a revalidation) is starting. Returns
 * its busy object (owned by the fetch, freed with busy_close), entered in
 * the table when the URL has no fetch yet, so that requests for the same
 * URL wait for it (when collapsed forwarding is on). NULL when t may not
 * share its answer, or on ENOMEM.
 */
struct busy *busy_open(struct worker *s, struct txn *t);

/* t, which claimed the lead of its URL's fetch (busy_join), will not
 * fetch it after all: the other workers' waiters look again. Accepts a
 * t with no claim. */
void busy_unclaim(struct txn *t);

/* At a worker's stop, after its clients: its waits for other workers'
 * fetches go. */
void busy_followers_free(struct worker *w);

/* What a waiter let go does next: looks in the store again, then goes
 * on (request.c's lookup). t may be finished before it returns. */
typedef void busy_again_f(struct txn *t);

/*
 * t (GET or HEAD, nothing usable of its URL stored) waits for the fetch
 * of its URL, or reads it when its head is in. true: t is taken care of
 * (it may even be finished); false: t goes on by itself. A waiter let go
 * (the fetch's answer is not for it, failed, or is too slow) is handed
 * to again, with t->no_collapse and, on failure, t->failed set.
 */
bool busy_join(struct txn *t, busy_again_f *again);

/*
 * What the readers of a shared fetch read: body bytes [0, have), taken
 * from the fetch's copy in memory (copy holds bytes [base, base +
 * copy->len): a tee drops what every reader has taken) or, for a body
 * going to the disk as it arrives, from the segment file (file: a body
 * on_disk). length is the body's, or -1 until the end. The fetch keeps
 * it; busy borrows it from busy_share to busy_close.
 */
struct busy_source {
	struct store_body *copy;
	uint64_t base;
	struct store_body *file;
	uint64_t have;
	int64_t length;
};

/*
 * The fetch's head arrived and its body will be kept (in memory, or on
 * the disk as it arrives): shape (a new reference is taken) is the
 * object's head and metadata, src what its readers read. The leader (the
 * txn that started the fetch, NULL when gone) and every waiter whose
 * request the answer fits get their head and become readers; the others
 * go on by themselves. A body of unknown length goes to each HTTP/1.1
 * reader chunked (to HTTP/1.0 until the close); a waiter asking for a
 * range of a body not in memory whole goes by itself.
 */
void busy_share(struct busy *b, struct store_obj *shape,
    const struct busy_source *src, struct txn *leader);

/* The fetch asks a peer now (or the origin): a peer's own question
 * must not wait for it, or two nodes each asking the other would wait
 * for each other until the peer timeout. */
void busy_asking_peer(struct busy *b, bool asking);

/* The fetch is about to move or free its copy (it freezes it for the
 * store, or gives it up): readers on other workers stop reading it.
 * Accepts NULL. */
void busy_unshare(struct busy *b);

/* The fetch moves bytes of its copy (it grows past what it has, or a
 * window slides) between these: readers on other workers stay off it.
 * The end says where it is now (the source's copy and base). */
void busy_moving(struct busy *b);
void busy_moved(struct busy *b);

/* The source has more (its copy may have moved): readers take what
 * their output has room for. */
void busy_body(struct busy *b);

/* The fewest body bytes a reader has taken (a tee keeps what is past
 * it), the source's have when none reads. */
uint64_t busy_slowest(const struct busy *b);
/* Whether a reader has taken all the source has (a disk stream then
 * hands its partial piece to the disk). */
bool busy_waiting(const struct busy *b);
/* taken(arg) runs when readers have taken more, or one has left (a
 * tee's fetch, paused on a full window, reads on; with nobody reading it
 * ends). It runs wherever a reader drains or is freed, inside another
 * fetch's callbacks too: it should note the news, and act on the loop. */
void busy_on_taken(struct busy *b, void (*taken)(void *arg), void *arg);
/* Whether anyone reads b's body; on another worker than b's. */
bool busy_read(const struct busy *b);
bool busy_read_elsewhere(const struct busy *b);
/* No later request joins b: a tee has let its first bytes go, which a
 * newcomer would read. The next one leads a fetch of its own, and its
 * crowd joins that. */
void busy_unlist(struct busy *b);

/* How a fetch ends for those waiting on it or reading it. */
enum busy_end {
	BUSY_DONE = 1,        /* complete: obj, the stored object, has the
	                       * rest of every reader's body, or without it
	                       * the source does */
	BUSY_UNSHARED = 2,    /* an answer that cannot be shared, or an
	                       * error: waiters fetch by themselves */
	BUSY_LEADER_GONE = 3, /* the leader left before the head: waiters
	                       * look again (one of them leads the next) */
	BUSY_FAILED = 4,      /* the body broke off: readers fail */
	BUSY_TIMED_OUT = 5,   /* the source fell silent mid-body: readers
	                       * fail, logged as timed out */
};

/*
 * The fetch is over for its busy object: it leaves the table, waiters
 * and readers go as end says, and *bp is freed and cleared. obj is
 * borrowed (BUSY_DONE only). Accepts NULL.
 */
void busy_close(struct busy **bp, enum busy_end end, struct store_obj *obj);

/*
 * The fetch failed before its head (the origin could not be reached, timed
 * out, closed or reset, or answered a server error: status and cause as
 * its leader is told; disconnected when no answer came at all). Its
 * waiters do not fetch again, each for itself: each looks in the store
 * once more and takes a fresh copy if one is there, its stale copy where
 * stale-if-error allows (or, disconnected, RFC 9111 4.2.4), else the same
 * error. *bp is freed and cleared. Accepts NULL.
 */
void busy_fail(struct busy **bp, int status, bool disconnected,
    const char *cause);

/* What a waiter of a failed fetch is told (t->failed, freed with t). */
struct collapse_failure {
	int status;
	bool disconnected;
	char cause[];
};

/* Whether a fetch of the URL key is running, on this worker (it may be
 * joined) or another. */
bool busy_running(struct worker *s, const char *key, size_t klen);

/* t's output drained: it reads on. */
void busy_drained(struct txn *t);

/* t leaves its busy object (it is being freed): its seat is freed. */
void busy_leave(struct txn *t);

#endif
