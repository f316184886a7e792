/*
 * The memory tier over the disk tier.
 *
 * Data model: store.c holds objects in memory; disk.c holds records on
 * disk, found through its own index. An object stored with a cache_dir
 * goes to both (write-through): memory keeps it while it is hot, the disk
 * keeps it after, and across restarts. Memory takes new bodies up to
 * max_memory_object_size on its heap or in a memfd; a body read back
 * from disk of more than DISK_COPY_MAX bytes enters memory as a head
 * whose body is the segment file's bytes, sent with sendfile from the
 * page cache (when the disk evicts that segment, memory lets the head go
 * too: it would keep the evicted file's space taken). A response too large for memory, of
 * known length, goes to the disk as it arrives (tiers_stream), never
 * whole in memory. A memory miss looks in the disk's index and
 * reads the candidates into memory (a promotion): on the loop when the
 * page cache holds them, off it otherwise. The request then looks in
 * memory again.
 *
 * One account for the summary: an object is in the cache while either
 * tier holds it, and observers hear of it once. The link is o->disk (the
 * entry of memory's object on disk) and the entry's in-memory flag:
 *
 *   a new object enters memory          added; then written to disk
 *   one too large for memory            added when its write commits
 *   memory evicts one the disk holds    nothing (a demotion)
 *   a promotion                         nothing
 *   the disk evicts one memory holds    nothing; the link is cleared,
 *                                       or moves with a re-admission
 *   a tier drops one the other lacks    removed
 *   replaced or invalidated             removed; both tiers drop it
 *   a newer copy commits on disk        the older copies leave, in
 *                                       memory and on disk
 *
 * An object's expiry goes to the observers with it: from its meta when
 * memory takes it in, from the record (or the segment's key file) when
 * the disk finds it by itself (the start-up scan, a large object's
 * commit).
 *
 * The cost accepted: every object stored is written once, even one that
 * memory alone would have kept until it went stale, and a 304 that
 * refreshes an object writes its body again.
 *
 * Threads. Without a disk the tiers hold nothing that changes: each
 * call goes to the store, which guards itself. With one, every entry
 * point takes the disk lock (disk.c) for the length of the call, before
 * any of the store's locks, so a change to both tiers is one step to
 * every worker; the disk's reports (struct disk_events) and the store's
 * to us (mem_inserted, mem_removed, under the store's queue lock) come
 * with it held, since every store change is made here. o->disk is the
 * disk lock's: read only under it (a body in memory is told from a disk
 * one by its body, which never changes, without it).
 */
#include "tiers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "conf.h"
#include "disk.h"
#include "sc_assert.h"

/* Variants of one key read from disk on a miss, at most. */
#define READ_MAX 4
/*
 * Bodies read back from disk longer than this stay in their segment file
 * and go to clients with sendfile from the page cache: memory holds the
 * head only. A copy into memory cost more than the page cache's own
 * bytes save: 16 KB disk hits ran at 0.73x memory's with it (the read,
 * the checksum, the allocation, and the eviction of another body to make
 * room, all for each hit of a set larger than memory). Below it the
 * copy is kept: a file's bytes take a second system call to send, which
 * a body of a page or two does not repay (the 8 KB line is a judgement;
 * only 16 KB and 256 KB were measured, disk-bench.sh).
 */
#define DISK_COPY_MAX (8u * 1024)
#define DISK_THREADS 4

#define TIERS_MAGIC 0x66660879u
struct tiers {
	unsigned magic;         /* TIERS_MAGIC (SC_CAST) */
	struct store *store;
	const struct conf *conf;
	struct disk *disk;       /* NULL: memory only */
	struct tiers_observer obs[TIERS_MAX_OBSERVERS];
	unsigned nobs;
};

#define TIERS_WAIT_MAGIC 0x3a818b9fu
struct tiers_wait {
	unsigned magic;         /* TIERS_WAIT_MAGIC (SC_CAST) */
	struct tiers *tr;
	void (*done)(void *arg);
	void *arg;               /* NULL once cancelled */
	unsigned pending;        /* reads not yet back */
};

/* The disk lock, when there is a disk. */
static void
enter(struct tiers *tr)
{
	if (tr->disk != NULL)
		disk_lock(tr->disk);
}

static void
leave(struct tiers *tr)
{
	if (tr->disk != NULL)
		disk_unlock(tr->disk);
}

/* ---- the account ---- */

static void
joined(struct tiers *tr, const char *key, size_t klen, uint64_t expires_ms)
{
	for (unsigned i = 0; i < tr->nobs; i++)
		tr->obs[i].added(tr->obs[i].arg, key, klen, expires_ms);
}

static void
left(struct tiers *tr, const char *key, size_t klen)
{
	for (unsigned i = 0; i < tr->nobs; i++)
		tr->obs[i].removed(tr->obs[i].arg, key, klen);
}

/* ---- what memory tells ---- */

static void
mem_inserted(void *arg, struct store_obj *o)
{
	struct tiers *tr = SC_CAST(struct tiers, arg, TIERS_MAGIC);

	if (o->disk != 0) {
		/* promoted: the cache had it all along */
		disk_set_in_mem(tr->disk, o->disk, true);
		return;
	}
	joined(tr, o->key, o->key_len, store_meta_expires_ms(&o->meta));
}

static void
mem_removed(void *arg, struct store_obj *o, enum store_exit why)
{
	struct tiers *tr = SC_CAST(struct tiers, arg, TIERS_MAGIC);

	switch (why) {
	case STORE_CLOSED:
		return;
	case STORE_EVICTED:
		if (o->disk != 0) {
			disk_set_in_mem(tr->disk, o->disk, false);
			o->disk = 0;
			return;
		}
		break;
	case STORE_REPLACED:
	case STORE_INVALIDATED:
		if (o->disk != 0) {
			disk_drop(tr->disk, o->disk);
			o->disk = 0;
		}
		break;
	}
	left(tr, o->key, o->key_len);
}

/* ---- what the disk tells ---- */

static void
disk_found(void *arg, const char *key, size_t klen, uint64_t expires_ms)
{
	joined(arg, key, klen, expires_ms);
}

static void
disk_lost(void *arg, const char *key, size_t klen)
{
	left(arg, key, klen);
}

static bool
linked_to(const struct store_obj *o, void *arg)
{
	return o->disk == *(const disk_ent *)arg;
}

static bool from_disk(const struct store_obj *o);

/* e's segment is evicted: to is the record's copy at the head, or 0 */
static void
disk_relinked(void *arg, uint64_t hash, disk_ent e, disk_ent to)
{
	struct tiers *tr = SC_CAST(struct tiers, arg, TIERS_MAGIC);
	struct store_obj *o = store_find_hash(tr->store, hash, linked_to,
	    &e);

	if (o == NULL)
		return;
	bool in_evicted_file = from_disk(o);
	o->disk = to;
	/* a head whose body is the evicted segment's bytes would keep the
	 * unlinked file's space taken while memory holds it: it goes, a
	 * demotion to the copy, or out of the cache with the record */
	if (in_evicted_file)
		store_remove(tr->store, o, STORE_EVICTED);
}

static void
disk_stale(void *arg, uint64_t hash, disk_ent e)
{
	struct tiers *tr = SC_CAST(struct tiers, arg, TIERS_MAGIC);
	struct store_obj *o = store_find_hash(tr->store, hash, linked_to,
	    &e);

	if (o != NULL)
		store_remove(tr->store, o, STORE_REPLACED);
}

static void
disk_scanned(void *arg)
{
	struct tiers *tr = SC_CAST(struct tiers, arg, TIERS_MAGIC);
	const struct disk_stats *st = disk_stats(tr->disk);

	fprintf(stderr, "sumcache: cache_dir %s: %llu objects (%llu MB) "
	    "restored in %llu ms\n", tr->conf->cache_dir,
	    (unsigned long long)st->objects,
	    (unsigned long long)(st->bytes >> 20),
	    (unsigned long long)(st->scan_us / 1000));
	/* peers drop what they held of us and take the whole of it */
	if (st->scan_segments == 0)
		return;
	for (unsigned i = 0; i < tr->nobs; i++)
		if (tr->obs[i].restored != NULL)
			tr->obs[i].restored(tr->obs[i].arg);
}

/* ---- the interface ---- */

struct tiers *
tiers_open(struct event_base *base, struct store *store,
    const struct conf *conf)
{
	struct tiers *tr = calloc(1, sizeof(*tr));
	struct store_observer ob = {mem_inserted, mem_removed, tr};
	char err[512];

	if (tr == NULL || store_observe(store, &ob) < 0) {
		free(tr);
		return NULL;
	}
	tr->magic = TIERS_MAGIC;
	tr->store = store;
	tr->conf = conf;
	if (conf->cache_dir == NULL)
		return tr;
	struct disk_conf dc = {.path = conf->cache_dir,
	    .size = conf->cache_dir_size, .threads = DISK_THREADS};
	struct disk_events ev = {disk_found, disk_lost, disk_relinked,
	    disk_stale, disk_scanned, tr};
	tr->disk = disk_open(base, &dc, &ev, err, sizeof(err));
	if (tr->disk == NULL) {
		fprintf(stderr, "sumcache: %s\n", err);
		free(tr);
		return NULL;
	}
	return tr;
}

int
tiers_observe(struct tiers *tr, const struct tiers_observer *ob)
{
	if (tr->nobs == TIERS_MAX_OBSERVERS)
		return -1;
	tr->obs[tr->nobs++] = *ob;
	return 0;
}

void
tiers_start(struct tiers *tr)
{
	if (tr->disk != NULL)
		disk_scan(tr->disk);
}

void
tiers_home_only(struct tiers *tr)
{
	if (tr != NULL && tr->disk != NULL)
		disk_home_only(tr->disk);
}

void
tiers_close(struct tiers **trp)
{
	struct tiers *tr = *trp;

	if (tr == NULL)
		return;
	*trp = NULL;
	/* the last reads and writes report to observers that still exist */
	disk_close(&tr->disk);
	store_unobserve(tr->store, tr);
	tr->magic = 0;
	free(tr);
}

void
tiers_store(struct tiers *tr, struct store_obj *o)
{
	enter(tr);
	bool in_mem = o->body->len <= tr->conf->max_memory_object_size &&
	    store_insert(tr->store, o);

	if (tr->disk != NULL && o->body->len <= tr->conf->max_object_size) {
		disk_ent e = disk_store(tr->disk, o, in_mem);
		if (in_mem)
			o->disk = e;
	}
	leave(tr);
}

struct disk_stream *
tiers_stream(struct tiers *tr, const struct store_obj *o, uint64_t body_len)
{
	if (tr->disk == NULL || body_len > tr->conf->max_object_size)
		return NULL;
	enter(tr);
	struct disk_stream *ds = disk_stream_begin(tr->disk, o, body_len);
	leave(tr);
	return ds;
}

unsigned
tiers_invalidate(struct tiers *tr, const char *key, size_t klen)
{
	unsigned disk_only = 0;

	/* the disk first: it writes the tombstone, and memory's copies
	 * are then plain memory objects leaving */
	enter(tr);
	if (tr->disk != NULL)
		disk_only = disk_forget(tr->disk, key, klen);
	unsigned n = disk_only + store_invalidate(tr->store, key, klen);
	leave(tr);
	return n;
}

/* ---- reading from disk ---- */

static void
wait_release(struct tiers_wait *w)
{
	if (--w->pending > 0)
		return;
	if (w->arg != NULL)
		w->done(w->arg);
	w->magic = 0;
	free(w);
}

static void
on_read(void *arg, struct store_obj *o)
{
	struct tiers_wait *w = SC_CAST(struct tiers_wait, arg, TIERS_WAIT_MAGIC);
	struct store *store = w->tr->store;

	/* another request may have promoted it meanwhile; an object memory
	 * has no room for is simply not promoted (the lookup then misses) */
	if (o != NULL && store_find_hash(store, o->hash, linked_to,
	    &o->disk) == NULL)
		store_insert(store, o);
	store_obj_unref(&o);
	wait_release(w);
}

static enum tiers_read read_disk(struct tiers *tr, const char *key,
    size_t klen, void (*done)(void *arg), void *arg,
    struct tiers_wait **wait);

enum tiers_read
tiers_read(struct tiers *tr, const char *key, size_t klen,
    void (*done)(void *arg), void *arg, struct tiers_wait **wait)
{
	if (tr->disk == NULL)
		return TIERS_NONE;
	enter(tr);
	enum tiers_read r = read_disk(tr, key, klen, done, arg, wait);
	leave(tr);
	return r;
}

/* The reads come back on this thread's loop (iopool.h), so done does. */
static enum tiers_read
read_disk(struct tiers *tr, const char *key, size_t klen,
    void (*done)(void *arg), void *arg, struct tiers_wait **wait)
{
	disk_ent e[READ_MAX];
	unsigned n = disk_lookup(tr->disk, XXH3_64bits(key, klen), e,
	    READ_MAX);
	if (n == 0)
		return TIERS_NONE;
	struct tiers_wait *w = calloc(1, sizeof(*w));
	if (w == NULL)
		return TIERS_NONE;
	/* one more than the reads: reads done at once do not call done */
	*w = (struct tiers_wait){TIERS_WAIT_MAGIC, tr, done, arg, n + 1};
	size_t mem_max = tr->conf->max_memory_object_size < DISK_COPY_MAX ?
	    tr->conf->max_memory_object_size : DISK_COPY_MAX;
	for (unsigned i = 0; i < n; i++)
		disk_read(tr->disk, e[i], mem_max, key, klen, on_read, w);
	if (--w->pending == 0) {
		free(w);
		return TIERS_READ;
	}
	*wait = w;
	return TIERS_WAIT;
}

int
tiers_peek(struct tiers *tr, const char *key, size_t klen,
    struct store_meta *m)
{
	if (tr->disk == NULL)
		return -1;
	enter(tr);
	int rc = disk_peek(tr->disk, key, klen, m);
	leave(tr);
	return rc;
}

void
tiers_wait_cancel(struct tiers_wait **wp)
{
	struct tiers_wait *w = *wp;

	*wp = NULL;
	if (w == NULL)
		return;
	struct tiers *tr = w->tr;
	enter(tr);
	w->arg = NULL;
	leave(tr);
}

/* ---- bodies sent from the disk ---- */

/* A body left in a segment file, which no lock guards (it never
 * changes): what a hit checks first. */
static bool
disk_body(const struct store_obj *o)
{
	return o->body->ext != NULL && o->body->ext->on_disk;
}

/* A disk body in memory (read back, left in its segment file); under
 * the disk lock. */
static bool
from_disk(const struct store_obj *o)
{
	return disk_body(o) && o->disk != 0;
}

bool
tiers_sendable(struct tiers *tr, struct store_obj *o)
{
	if (!disk_body(o) || tr->disk == NULL)
		return true;
	enter(tr);
	bool ok = !from_disk(o) || disk_trusted(tr->disk, o->disk);
	/* a demotion: the disk keeps the record, and its next read checks
	 * it */
	if (!ok)
		store_remove(tr->store, o, STORE_EVICTED);
	leave(tr);
	return ok;
}

/* The claim s's body failed to send (tiers.h, struct disk_sent). */
static void
claim_failed(const struct disk_sent *s)
{
	struct tiers *tr = s->tr;
	disk_ent e = s->e;
	struct tiers_wait *w = NULL;

	if (tr->disk == NULL)
		return;
	enter(tr);
	struct store_obj *o = !disk_distrust(tr->disk, e, s->where) ? NULL :
	    store_find_hash(tr->store, s->hash, linked_to, &e);
	/* else gone, or read and checked when next asked for */
	if (o != NULL) {
		o = store_obj_ref(o);
		store_remove(tr->store, o, STORE_EVICTED);
		/* nobody waits for it: with no arg, done is never called */
		read_disk(tr, o->key, o->key_len, NULL, NULL, &w);
		store_obj_unref(&o);
	}
	leave(tr);
}

void
tiers_sending(struct tiers *tr, const struct store_obj *o,
    struct disk_sent *out)
{
	*out = (struct disk_sent){0};
	if (!disk_body(o) || tr->disk == NULL)
		return;
	enter(tr);
	if (from_disk(o))
		*out = (struct disk_sent){.failed = claim_failed, .tr = tr,
		    .hash = o->hash, .e = o->disk,
		    .where = disk_ent_where(tr->disk, o->disk)};
	leave(tr);
}

bool
tiers_send_intact(struct tiers *tr, const struct disk_sent *from)
{
	if (from->e == 0 || tr->disk == NULL)
		return true;
	enter(tr);
	bool ok = disk_trusted_at(tr->disk, from->e, from->where);
	leave(tr);
	return ok;
}

bool
tiers_disk_stats(struct tiers *tr, struct disk_stats *out)
{
	if (tr == NULL || tr->disk == NULL)
		return false;
	enter(tr);
	*out = *disk_stats(tr->disk);
	leave(tr);
	return true;
}

bool
tiers_warm(struct tiers *tr, int fd, uint64_t off, size_t len,
    void (*done)(void *arg, uint64_t off, int err), void *arg)
{
	if (tr == NULL || tr->disk == NULL)
		return false;
	enter(tr);
	bool ok = disk_warm(tr->disk, fd, off, len, done, arg);
	leave(tr);
	return ok;
}
