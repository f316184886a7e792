/*
 * What busy.c and follow.c share: a busy object and a txn's seat at one,
 * and the table's and the objects' private operations. Nothing else
 * includes it.
 */
#ifndef BUSY_IMPL_H
#define BUSY_IMPL_H

#include "busy.h"

struct crowd_claim;
struct crowd_share;

#define BUSY_MAGIC 0x956f5c71u
struct busy {
	unsigned magic;         /* BUSY_MAGIC (SC_CAST) */
	struct busy *hnext;
	struct busy_table *table;
	struct worker *s;
	uint64_t hash;
	bool in_table;
	bool asking_peer;
	bool follower;              /* no fetch: another worker's waits */
	struct busy *fnext;         /* a follower: its worker's list */
	struct crowd_claim *claim;  /* a leader's, with several workers */
	struct crowd_share *share;  /* a follower's: the leader's body */
	struct busy_source own;     /* a follower's source: the share's */
	uint64_t started_ms;        /* the waiters' bound counts from here */
	struct event *deadline;     /* armed by the first waiter */
	struct busy_seat *waiting;  /* for the head */
	struct busy_seat *readers;  /* being sent the body */
	struct store_obj *shape;    /* once shared: head and metadata */
	const struct busy_source *src; /* once shared: the fetch's */
	void (*taken)(void *arg);   /* busy_on_taken's */
	void *taken_arg;
	size_t klen;
	char key[];
};

/*
 * A txn's place at a busy object (t->seat): waiting for the head, or
 * reading the body. Made when the txn joins, freed when it leaves; the
 * txn knows nothing of what is in it.
 */
struct busy_seat {
	struct busy *b;
	struct txn *t;
	struct busy_seat *prev, *next;
	busy_again_f *again;  /* a waiter let go goes on here */
	uint64_t sent;        /* body bytes given to the client */
	bool reading;         /* its head is out: it reads the body */
	bool by_ref;          /* file pages were sent it by reference */
};

/* The table's entry for key (where it would go). */
struct busy **busy_slot(struct busy_table *tb, uint64_t hash,
    const char *key, size_t klen);
/* b leaves its table, if it is in one: no newcomer joins it. */
void busy_leave_table(struct busy *b);
/* A busy object of w for t's URL, in no table yet; NULL on ENOMEM. */
struct busy *busy_new(struct worker *w, const struct txn *t);

/* follow.c: a new fetch's busy object b leads its URL for every worker,
 * with the claim t took (busy_follow), or one taken now. */
void busy_lead(struct busy *b, struct txn *t);
/* t's worker has no fetch of t's URL: another worker may lead one, which
 * t then waits for at a follower here (returned, in the table); or t
 * leads the next (the claim is t's until its fetch opens its busy
 * object); NULL. */
struct busy *busy_follow(struct txn *t);
/* Whether a newcomer may read b, a follower sharing the leader's body,
 * from the first byte (the leader's window has not let it go). */
bool busy_follower_from_start(const struct busy *b);
/* b, a follower, is closing: it leaves its worker's list and holds back
 * the leader's window no more. */
void busy_unfollow(struct busy *b);

#endif
