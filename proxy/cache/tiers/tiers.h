/*
 * The cache as the rest of the node sees it: the memory store over the
 * disk tier (cache_dir), and one account of what the two hold for the
 * summary and the digest. tiers.c's opening comment gives the rules,
 * and the threads': any worker calls any of these; a callback given
 * here runs on the loop of the worker that gave it.
 */
#ifndef TIERS_H
#define TIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct conf;
struct disk_stats;
struct event_base;
struct tiers;

/* Sees each object join and leave the cache, whichever tier holds it.
 * expires_ms is when the copy stops being fresh (wall clock). restored,
 * which may be NULL, runs when the start-up scan of the disk is done
 * (what it found was told through added): a summary is then announced
 * anew to the peers. */
struct tiers_observer {
	void (*added)(void *arg, const char *key, size_t klen,
	    uint64_t expires_ms);
	void (*removed)(void *arg, const char *key, size_t klen);
	void (*restored)(void *arg);
	void *arg;
};

#define TIERS_MAX_OBSERVERS 4

/*
 * The tiers over store (borrowed), with the disk when conf's cache_dir
 * is set; conf is borrowed for the tiers' life (a reload changes its
 * values in place: the object size bounds follow). NULL, with the reason
 * printed, on failure.
 */
struct tiers *tiers_open(struct event_base *base, struct store *store,
    const struct conf *conf);
/* Observers first, then the scan of what the disk kept: what it finds
 * is reported to them, and at its end restored runs. */
int tiers_observe(struct tiers *tr, const struct tiers_observer *ob);
void tiers_start(struct tiers *tr);
/* The node is stopping: the disk's jobs report to home's loop alone
 * from now on (disk_home_only). Accepts NULL. */
void tiers_home_only(struct tiers *tr);
/* Waits for the disk's I/O in flight, frees the tiers. Accepts NULL;
 * clears *tr. */
void tiers_close(struct tiers **tr);

/* A new response to keep (one reference, the caller's): in memory when
 * it is small enough, on disk when there is one. */
void tiers_store(struct tiers *tr, struct store_obj *o);

/*
 * A response too large for memory whose body, body_len bytes, is still
 * arriving: a stream to the disk for it (disk.h's disk_stream_*), o
 * giving its key, head and meta. NULL without a disk, or when the disk
 * cannot take it now.
 */
struct disk_stream *tiers_stream(struct tiers *tr, const struct store_obj *o,
    uint64_t body_len);

/* Every variant of key leaves both tiers; returns how many. */
unsigned tiers_invalidate(struct tiers *tr, const char *key, size_t klen);

/*
 * Memory has no copy of key: whether the disk may. When it may, its
 * copies are read and put in memory, and the caller looks in memory
 * again: at once on TIERS_READ (the page cache held them all), or when
 * done(arg) runs on TIERS_WAIT (some were read off the loop); *wait is
 * then the caller's handle for tiers_wait_cancel. With arg NULL, done is
 * never called. TIERS_NONE, with nothing started, when the disk has none.
 */
struct tiers_wait;
enum tiers_read { TIERS_NONE, TIERS_READ, TIERS_WAIT };
enum tiers_read tiers_read(struct tiers *tr, const char *key, size_t klen,
    void (*done)(void *arg), void *arg, struct tiers_wait **wait);
/* Memory has no copy of key: whether the disk has one, without waiting
 * for it (disk_peek's answer). */
int tiers_peek(struct tiers *tr, const char *key, size_t klen,
    struct store_meta *m);
/* The caller is gone: done will not be called. Accepts NULL. */
void tiers_wait_cancel(struct tiers_wait **wait);

/*
 * A claim on a body sent from a disk segment: the record it came from,
 * and whom to tell when its send fails. It travels with the body to
 * whoever sends it (the writer, a disk sender), who calls failed through
 * it, naming nothing of the cache, when the send failed (an I/O error,
 * or its file ended first): the record is checked again now, off the
 * request's path; when it fails it leaves the cache and the summary at
 * once (counted by why), and when it holds it is promoted again; nothing
 * when it has gone. failed NULL: the body is not the disk's.
 */
struct disk_sent {
	void (*failed)(const struct disk_sent *s);
	struct tiers *tr;
	uint64_t hash;    /* the key's (store.c's) */
	uint64_t where;   /* disk_ent_where */
	uint32_t e;       /* its disk_ent */
};

/*
 * o was just found in memory: whether its body may be sent as it is.
 * True unless it is left in a disk segment whose bytes are not known
 * good any more (disk_trusted: the file changed, or a send from it
 * failed). Then memory lets go of o (the disk keeps the record) and the
 * caller reads the disk's copy again (tiers_read), which checks it and
 * drops it when it fails.
 */
bool tiers_sendable(struct tiers *tr, struct store_obj *o);

/* o's body goes out: *out is its claim (failed NULL when the body is
 * not the disk's), to go with it to whoever sends it. */
void tiers_sending(struct tiers *tr, const struct store_obj *o,
    struct disk_sent *out);
/*
 * Whether a body being sent from the disk may still be taken for its
 * record: the record is still the one sent and its segment file is as
 * this process left it (disk_trusted), or the record has gone from the
 * index (evicted or replaced: the sender's descriptor still has its
 * bytes). One fstat. True for a body that is not the disk's.
 */
bool tiers_send_intact(struct tiers *tr, const struct disk_sent *from);

/* The disk tier's counters, copied to out; false without a disk. */
bool tiers_disk_stats(struct tiers *tr, struct disk_stats *out);

/* disk_warm, when there is a disk (false when there is none). */
bool tiers_warm(struct tiers *tr, int fd, uint64_t off, size_t len,
    void (*done)(void *arg, uint64_t off, int err), void *arg);

#endif
