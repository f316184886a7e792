/*
 * What the disk tier holds, read back in bulk: opening a cache_dir (its
 * check for -t, its segments listed), the start-up scan that rebuilds the
 * index (disk.c gives the model).
 */
#define _GNU_SOURCE
#include "disk_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <xxhash.h>

#include "clock.h"
#include "record.h"
#include "sc_assert.h"

/* Reads the keys of the records at offs[0..n) of fd; one that cannot be
 * read is left NULL. */
void
disk_read_keys(int fd, const uint32_t *offs, size_t n, char **keys,
    uint32_t *key_lens)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t fixed[RECORD_HEAD];
		struct record_info r;
		if (disk_pread(fd, fixed, sizeof(fixed), offs[i]) < 0 ||
		    !record_read_fixed(fixed, &r))
			continue;
		char *key = malloc(r.key_len);
		if (key == NULL || disk_pread(fd, key, r.key_len,
		    (uint64_t)offs[i] + RECORD_HEAD) < 0) {
			free(key);
			continue;
		}
		keys[i] = key;
		key_lens[i] = r.key_len;
	}
}

/* ---- the start-up scan ---- */

struct scan_job {
	struct job j;
	char keys_path[PATH_MAX];
	struct found *found;
	size_t n, cap;
	bool from_keys;     /* found came from the segment's key file */
	bool bad_keys;      /* it has one, not to be trusted */
	uint64_t torn;      /* records without a valid mark, skipped */
	bool cut;           /* a head that is not one ended the scan early */
	bool nomem;
};

static void
scan_keep(struct scan_job *sj, const uint8_t *head, const struct record_info *r,
    uint64_t off)
{
	const char *key = record_key(head);
	struct found f = {
		.hash = XXH3_64bits(key, r->key_len),
		.off = (uint32_t)off,
		.len = (uint32_t)record_len(r),
		.vhash = disk_vary_hash(key + r->key_len + r->head_len,
		    r->vary_len),
		.tomb = (r->flags & RECORD_TOMBSTONE) != 0,
		.key_len = r->key_len,
		.expires_ms = store_meta_expires_ms(&r->meta),
	};
	if (disk_found_push(&sj->found, &sj->n, &sj->cap, &f, key) < 0)
		sj->nomem = true;
}

/*
 * Walks a segment's records in order through a window of the file:
 * small records come with the window, a large one's mark is read on its
 * own and the window moves past its body. A head that fails its checks
 * ends the walk: nothing after it can be found.
 */
static void
run_scan(struct iopool_job *pj)
{
	struct scan_job *sj = (struct scan_job *)pj;
	struct job *j = &sj->j;
	int fd = j->g->fd;
	uint64_t t0 = mono_us();
	struct stat st;
	uint8_t *win = malloc(SCAN_WINDOW);
	uint64_t wstart = 0, wlen = 0, off = 0;

	if (win == NULL || fstat(fd, &st) < 0) {
		j->err = win == NULL ? ENOMEM : errno;
		free(win);
		return;
	}
	uint64_t size = (uint64_t)st.st_size;
	if (disk_keys_load(sj->keys_path, j->g->id, size, &sj->found,
	    &sj->n) == 0) {
		sj->from_keys = true;
		free(win);
		j->us = mono_us() - t0;
		return;
	}
	sj->bad_keys = errno != ENOENT;
	while (off + RECORD_HEAD + RECORD_TRAILER <= size && !sj->nomem) {
		if (off < wstart || off + RECORD_HEAD > wstart + wlen) {
			wstart = off;
			wlen = size - off < SCAN_WINDOW ? size - off :
			    SCAN_WINDOW;
			if (disk_pread(fd, win, wlen, wstart) < 0) {
				j->err = errno ? errno : EIO;
				break;
			}
		}
		struct record_info r;
		uint8_t *p = win + (off - wstart);
		if (!record_read_fixed(p, &r) || record_len(&r) > UINT32_MAX) {
			sj->cut = true;
			break;
		}
		if (off + record_len(&r) > size) {
			sj->torn++; /* the last write, cut short */
			break;
		}
		uint64_t hlen = record_head_len(&r);
		uint8_t *head = p, *own = NULL;
		if (off + hlen > wstart + wlen) {
			own = malloc(hlen);
			if (own == NULL || disk_pread(fd, own, hlen, off) < 0) {
				free(own);
				sj->cut = true;
				break;
			}
			head = own;
		}
		uint8_t tr[RECORD_TRAILER];
		uint64_t toff = off + record_trailer_off(&r);
		const uint8_t *t = tr;
		if (toff + RECORD_TRAILER <= wstart + wlen)
			t = win + (toff - wstart);
		else if (disk_pread(fd, tr, sizeof(tr), toff) < 0)
			memset(tr, 0, sizeof(tr));
		if (!record_head_ok(head, &r)) {
			free(own);
			sj->cut = true;
			break;
		}
		if (record_read_trailer(t, &r))
			scan_keep(sj, head, &r, off);
		else
			sj->torn++;
		free(own);
		off += record_len(&r);
	}
	free(win);
	j->us = mono_us() - t0;
}

static void scan_next(struct disk *d);

/* A scanned record older than what the index has for its variant, or
 * than a tombstone since, is not the object any more. */
static void
scan_index(struct disk *d, struct seg *g, const struct found *f)
{
	for (uint32_t e = *disk_bucket(d, f->hash), next; e != 0; e = next) {
		struct ent *x = &d->ents[e];
		next = x->next;
		if (x->hash != f->hash || (!f->tomb && x->vhash != f->vhash))
			continue;
		if (x->seg > g->id || (x->seg == g->id && x->off > f->off))
			return; /* the index has a newer one */
		disk_ent_forget(d, e, DISK_DROP_REPLACED, f->key, f->key_len);
	}
	if (f->tomb)
		return;
	disk_ent e = disk_ent_new(d, g, f->hash, f->vhash, f->off, f->len);
	if (e == 0)
		return;
	struct ent *x = &d->ents[e];
	x->flags |= E_COMMITTED | E_KNOWN;
	d->stats.objects++;
	d->stats.bytes += x->len;
	d->stats.scan_records++;
	d->ev.found(d->ev.arg, f->key, f->key_len, f->expires_ms);
}

static void
done_scan(struct iopool_job *pj)
{
	struct scan_job *sj = (struct scan_job *)pj;
	struct job *j = &sj->j;
	struct disk *d = j->d;

	if (!j->g->gone)
		for (size_t i = 0; i < sj->n; i++)
			scan_index(d, j->g, &sj->found[i]);
	d->stats.dropped[DISK_DROP_TORN] += sj->torn;
	d->stats.keys_errors += sj->bad_keys;
	if (sj->bad_keys)
		fprintf(stderr, "sumcache: %s: not a valid key file for its "
		    "segment; scanned the segment instead\n", sj->keys_path);
	bool whole = j->err == 0 && !sj->cut && !sj->nomem;
	if (!whole)
		fprintf(stderr, "sumcache: cache_dir %s: seg-%010u: %s after "
		    "%zu records; the rest of it is not used\n", d->path,
		    j->g->id, j->err ? strerror(j->err) : sj->nomem ?
		    "out of memory" : "a record that is not one", sj->n);
	d->stats.scan_from_keys += sj->from_keys;
	if (whole && !sj->from_keys && !j->g->gone) {
		/* the next start reads this segment's key file instead */
		disk_keys_write(d, j->g, sj->found, sj->n);
	} else {
		disk_found_free(sj->found, sj->n);
	}
	d->stats.scan_segments_done++;
	disk_job_end(j);
	scan_next(d);
}

/* Scans the next segment found at start-up, oldest first, one at a time
 * so that newer records meet the older ones already indexed. */
static void
scan_next(struct disk *d)
{
	if (d->closing)
		return;
	for (size_t i = 0; i < d->nsegs; i++) {
		struct seg *g = d->segs[i];
		if (g->id < d->scan_id)
			continue;
		if (g->id >= d->scan_end)
			break;
		d->scan_id = g->id + 1;
		struct scan_job *sj = calloc(1, sizeof(*sj));
		if (sj == NULL)
			continue;
		disk_keys_path(d, g->id, sj->keys_path, sizeof(sj->keys_path));
		disk_job_submit(d, &sj->j, g, run_scan, done_scan);
		return;
	}
	if (!d->stats.scanning)
		return;
	d->stats.scanning = false;
	d->stats.scan_us = (mono_ms() - d->scan_start_ms) * 1000;
	d->ev.scanned(d->ev.arg);
}

/* ---- opening and closing ---- */

static int
mkdirs(const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static bool
seg_id_of(const char *name, uint32_t *id)
{
	char *end;

	if (strncmp(name, "seg-", 4) != 0 || strlen(name) != 14)
		return false;
	unsigned long v = strtoul(name + 4, &end, 10);
	if (*end != '\0' || v > UINT32_MAX - 2)
		return false;
	*id = (uint32_t)v;
	return true;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The ids of the segments in dir, sorted; their bytes in *bytes. prune,
 * for the node holding the directory's lock only: empty segments are
 * removed (a stop before any write leaves one; they would pile up). A
 * check (-t) must not: the empty one may be a running node's head. */
static uint32_t *
list_segments(const char *dir, bool prune, size_t *n, uint64_t *bytes)
{
	DIR *dp = opendir(dir);
	uint32_t *ids = NULL;
	size_t cap = 0;
	struct dirent *de;

	*n = 0;
	*bytes = 0;
	if (dp == NULL)
		return NULL;
	while ((de = readdir(dp)) != NULL) {
		uint32_t id;
		struct stat st;
		if (!seg_id_of(de->d_name, &id) ||
		    fstatat(dirfd(dp), de->d_name, &st, 0) < 0)
			continue;
		if (prune && st.st_size == 0 &&
		    unlinkat(dirfd(dp), de->d_name, 0) == 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			uint32_t *m = realloc(ids, cap * sizeof(*m));
			if (m == NULL)
				break;
			ids = m;
		}
		ids[(*n)++] = id;
		*bytes += (uint64_t)st.st_size;
	}
	closedir(dp);
	if (*n > 0)
		qsort(ids, *n, sizeof(*ids), cmp_u32);
	return ids;
}

/* Removes what a key file left that no segment needs: one whose segment
 * is gone (its eviction raced its writing), one half written. */
static void
prune_key_files(const char *dir, const uint32_t *ids, size_t n)
{
	DIR *dp = opendir(dir);
	struct dirent *de;

	if (dp == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		char seg[16];
		size_t len = strlen(de->d_name);
		uint32_t id;
		bool keys = len == 19 && strcmp(de->d_name + 14, ".keys") == 0;
		bool tmp = len == 23 && strcmp(de->d_name + 14, ".keys.tmp") == 0;
		if (!keys && !tmp)
			continue;
		memcpy(seg, de->d_name, 14);
		seg[14] = '\0';
		if (!seg_id_of(seg, &id))
			continue;
		if (tmp || bsearch(&id, ids, n, sizeof(*ids), cmp_u32) == NULL)
			unlinkat(dirfd(dp), de->d_name, 0);
	}
	closedir(dp);
}

int
disk_check(const char *path, uint64_t size, char *err, size_t errlen)
{
	struct stat st;
	struct statvfs vfs;
	char probe[PATH_MAX];
	const char *at = path;

	if (size < 4 * SEG_MIN) {
		snprintf(err, errlen, "cache_dir %s: size %llu is under the "
		    "least, 4 MB", path, (unsigned long long)size);
		return -1;
	}
	if (stat(path, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || access(path, W_OK | X_OK) < 0) {
			snprintf(err, errlen, "cache_dir %s: not a writable "
			    "directory", path);
			return -1;
		}
	} else {
		/* the nearest ancestor that exists must let us create it */
		snprintf(probe, sizeof(probe), "%s", path);
		for (char *slash; (slash = strrchr(probe, '/')) != NULL;) {
			*slash = '\0';
			at = probe[0] ? probe : "/";
			if (stat(at, &st) == 0)
				break;
		}
		if (at == path)
			at = ".";
		if (stat(at, &st) == 0 && !S_ISDIR(st.st_mode))
			errno = ENOTDIR;
		else if (access(at, W_OK | X_OK) == 0)
			errno = 0;
		if (errno != 0) {
			snprintf(err, errlen, "cache_dir %s: cannot be created "
			    "(%s: %s)", path, at, strerror(errno));
			return -1;
		}
	}
	if (statvfs(at, &vfs) < 0) {
		snprintf(err, errlen, "cache_dir %s: %s", path,
		    strerror(errno));
		return -1;
	}
	size_t n;
	uint64_t kept;
	free(list_segments(path, false, &n, &kept));
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize + kept;
	if (size > avail) {
		snprintf(err, errlen, "cache_dir %s: size %llu MB is more than "
		    "the %llu MB its file system has free", path,
		    (unsigned long long)(size >> 20),
		    (unsigned long long)(avail >> 20));
		return -1;
	}
	return 0;
}

struct disk *
disk_open(struct event_base *base, const struct disk_conf *c,
    const struct disk_events *ev, char *err, size_t errlen)
{
	struct disk *d = calloc(1, sizeof(*d));
	char lock[PATH_MAX];

	if (d == NULL || (d->path = strdup(c->path)) == NULL) {
		free(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&d->mutex, &ma);
	pthread_mutexattr_destroy(&ma);
	d->conf = *c;
	d->conf.path = d->path;
	d->ev = *ev;
	d->lock_fd = -1;
	uint64_t target = c->size / SEG_COUNT;
	d->seg_target = target < SEG_MIN ? SEG_MIN : target > SEG_MAX ?
	    SEG_MAX : target;
	snprintf(lock, sizeof(lock), "%s/lock", d->path);
	if (mkdirs(d->path) < 0 || (d->lock_fd = open(lock, O_RDWR | O_CREAT |
	    O_CLOEXEC, 0644)) < 0) {
		snprintf(err, errlen, "cache_dir %s: %s", d->path,
		    strerror(errno));
		disk_close(&d);
		return NULL;
	}
	if (flock(d->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		snprintf(err, errlen, "cache_dir %s: in use by another "
		    "process (%s)", d->path, strerror(errno));
		disk_close(&d);
		return NULL;
	}
	size_t n;
	uint64_t bytes;
	uint32_t *ids = list_segments(d->path, true, &n, &bytes);
	for (size_t i = 0; i < n; i++) {
		char name[PATH_MAX];
		disk_seg_name(d, ids[i], name, sizeof(name));
		d->scan_end = d->next_id = ids[i] + 1;
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_size > UINT32_MAX) {
			/* not one of ours: named as one, left as it is */
			fprintf(stderr, "sumcache: %s: %s; not used\n", name,
			    fd < 0 ? strerror(errno) : "not a segment file");
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct seg *g = disk_seg_new(ids[i], fd);
		if (g == NULL || disk_seg_append(d, g) < 0) {
			snprintf(err, errlen, "cache_dir %s: out of memory",
			    d->path);
			close(fd);
			free(g);
			free(ids);
			disk_close(&d);
			return NULL;
		}
		g->bytes = (uint32_t)st.st_size;
		g->sealed = g->keys_written = true;
		d->stats.file_bytes += g->bytes;
	}
	prune_key_files(d->path, ids, n);
	free(ids);
	d->stats.scan_segments = d->nsegs;
	d->stats.scanning = true;
	d->scan_start_ms = mono_ms();
	char name[PATH_MAX];
	disk_seg_name(d, d->next_id, name, sizeof(name));
	int fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	struct seg *h = fd >= 0 ? disk_seg_new(d->next_id++, fd) : NULL;
	if (h == NULL || disk_seg_append(d, h) < 0) {
		snprintf(err, errlen, "cache_dir %s: %s", name, fd < 0 ?
		    strerror(errno) : "out of memory");
		if (fd >= 0)
			close(fd);
		free(h);
		disk_close(&d);
		return NULL;
	}
	d->pool = iopool_new(base, c->threads, &d->mutex);
	if (d->pool == NULL || disk_index_grow(d) < 0) {
		snprintf(err, errlen, "cache_dir %s: cannot start its I/O "
		    "threads", d->path);
		disk_close(&d);
		return NULL;
	}
	/* a size made smaller since: the oldest go first */
	while (d->stats.file_bytes > d->conf.size && disk_evict_oldest(d))
		continue;
	disk_index_bytes(d);
	return d;
}

void
disk_scan(struct disk *d)
{
	disk_lock(d);
	scan_next(d);
	disk_unlock(d);
}

void
disk_home_only(struct disk *d)
{
	iopool_home_only(d->pool);
}

void
disk_close(struct disk **dp)
{
	struct disk *d = *dp;

	if (d == NULL)
		return;
	*dp = NULL;
	d->closing = true;
	iopool_free(&d->pool);
	/* the head's key file, and any a job had not written yet: the
	 * next start reads them instead of scanning */
	for (size_t i = 0; i < d->nsegs; i++)
		disk_keys_seal(d, d->segs[i]);
	for (size_t i = 0; i < d->nsegs; i++) {
		SC_ASSERT(d->segs[i]->refs == 0);
		disk_seg_free(d->segs[i]);
	}
	if (d->spare != NULL) {
		close(d->spare->fd);
		free(d->spare);
	}
	if (d->lock_fd >= 0)
		close(d->lock_fd);
	free(d->segs);
	free(d->ents);
	free(d->buckets);
	free(d->path);
	pthread_mutex_destroy(&d->mutex);
	free(d);
}
