/*
 * A segment's key file, PATH/seg-NNNNNNNNNN.keys: the key, place and
 * length of every record the segment holds, written once the segment
 * takes no more writes, so that a start-up reads one small file instead
 * of every record's head.
 *
 * Why per segment, not one snapshot of the whole index at a clean stop:
 * the same files serve both restarts. A clean stop writes the head's key
 * file, after which every segment has one and start-up reads nothing
 * else; after a crash only the segments without one (the head, and one
 * sealed just before) are scanned, so a killed node is back about as fast
 * as a stopped one. A segment is written once and never changed, so its
 * key file never goes stale: it dies with its segment.
 *
 * Trust: a key file counts only when its checksum holds and its segment
 * is the length it names; otherwise the segment is scanned. It vouches
 * for nothing inside the records: a read checks a record listed here as
 * it checks a scanned one (record.h), so a segment torn by power loss
 * after its key file reached the disk costs misses, never a wrong answer.
 *
 * The bytes, little-endian: "SCK3", segment id (4), segment length (4),
 * entry count (4); per entry record offset (4), record length (4), key
 * length (4), variant hash (2), flags (1: a tombstone), 0 (1), the
 * object's expiry in wall-clock milliseconds (8, so that the summary
 * claims a restored copy only while it is fresh), the key; then XXH3-64
 * of everything before it (8). A key file of an older version is not
 * trusted: its segment is scanned, and a new one written.
 *
 * Ownership: a segment's list (seg.keys) is the loop's while the segment
 * takes writes; sealing hands it to a job that writes the file and frees
 * it. A segment the start-up scan read record by record gets its key file
 * the same way, from the scan's list.
 */
#define _GNU_SOURCE
#include "disk_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "bytes.h"

#define KEYS_MAGIC "SCK3"
#define KEYS_HEAD 16
#define KEYS_ENTRY 24
#define KEYS_SUM 8
/* A key file larger than this is not one of ours. */
#define KEYS_MAX (1u << 30)

void
disk_keys_path(const struct disk *d, uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/seg-%010u.keys", d->path, id);
}

void
disk_found_free(struct found *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(f[i].key);
	free(f);
}

int
disk_found_push(struct found **v, size_t *n, size_t *cap,
    const struct found *f, const char *key)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct found *m = realloc(*v, c * sizeof(*m));
		if (m == NULL)
			return -1;
		*v = m;
		*cap = c;
	}
	char *k = malloc(f->key_len ? f->key_len : 1);
	if (k == NULL)
		return -1;
	memcpy(k, key, f->key_len);
	(*v)[*n] = *f;
	(*v)[*n].key = k;
	(*n)++;
	return 0;
}

void
disk_keys_add(struct seg *g, const struct found *f, const char *key)
{
	if (g->keys_lost)
		return;
	if (disk_found_push(&g->keys, &g->nkeys, &g->cap_keys, f, key) < 0) {
		/* without the whole list the file would hide records:
		 * none is written, and a start-up scans this segment */
		g->keys_lost = true;
		disk_found_free(g->keys, g->nkeys);
		g->keys = NULL;
		g->nkeys = g->cap_keys = 0;
	}
}

void
disk_keys_drop(struct seg *g)
{
	disk_found_free(g->keys, g->nkeys);
	g->keys = NULL;
	g->nkeys = g->cap_keys = 0;
}

/* ---- writing ---- */

struct keys_job {
	struct job j;
	struct found *found;
	size_t n;
	char path[PATH_MAX];
};

static int
cmp_off(const void *a, const void *b)
{
	const struct found *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* In record order, so that a tombstone meets what it removes, as a scan
 * would: writes finish in any order. */
static int
write_keys(int seg_fd, uint32_t id, struct found *f, size_t n,
    const char *path)
{
	struct stat st;

	if (fstat(seg_fd, &st) < 0)
		return -1;
	if (n > 1)
		qsort(f, n, sizeof(*f), cmp_off);
	size_t len = KEYS_HEAD + KEYS_SUM;
	for (size_t i = 0; i < n; i++)
		len += KEYS_ENTRY + f[i].key_len;
	if (len > KEYS_MAX || st.st_size > UINT32_MAX) {
		errno = EFBIG;
		return -1;
	}
	uint8_t *buf = malloc(len), *p = buf;
	if (buf == NULL)
		return -1;
	memcpy(p, KEYS_MAGIC, 4);
	store_le32(p + 4, id);
	store_le32(p + 8, (uint32_t)st.st_size);
	store_le32(p + 12, (uint32_t)n);
	p += KEYS_HEAD;
	for (size_t i = 0; i < n; i++) {
		store_le32(p, f[i].off);
		store_le32(p + 4, f[i].len);
		store_le32(p + 8, f[i].key_len);
		store_le(p + 12, f[i].vhash, 2);
		p[14] = f[i].tomb;
		p[15] = 0;
		store_le64(p + 16, f[i].expires_ms);
		memcpy(p + KEYS_ENTRY, f[i].key, f[i].key_len);
		p += KEYS_ENTRY + f[i].key_len;
	}
	store_le64(p, XXH3_64bits(buf, (size_t)(p - buf)));
	/* whole or absent: written aside, then renamed over */
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc = fd >= 0 ? disk_pwrite(fd, buf, len, 0) : -1;
	int saved = errno;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -1;
		saved = errno;
	}
	if (rc < 0)
		unlink(tmp);
	free(buf);
	errno = saved;
	return rc;
}

static void
run_keys(struct iopool_job *pj)
{
	struct keys_job *kj = (struct keys_job *)pj;

	if (write_keys(kj->j.g->fd, kj->j.g->id, kj->found, kj->n,
	    kj->path) < 0)
		kj->j.err = errno ? errno : EIO;
}

static void
done_keys(struct iopool_job *pj)
{
	struct keys_job *kj = (struct keys_job *)pj;
	struct disk *d = kj->j.d;
	uint64_t skipped;

	if (kj->j.err != 0) {
		d->stats.keys_errors++;
		/* a full disk fails every one: a line a second */
		if (ratelog_due(&d->keys_log, &skipped))
			fprintf(stderr, "sumcache: %s: %s; a start-up will "
			    "scan its segment (%llu more since the last "
			    "line)\n", kj->path, strerror(kj->j.err),
			    (unsigned long long)skipped);
	} else {
		d->stats.keys_written++;
	}
	disk_found_free(kj->found, kj->n);
	disk_job_end(&kj->j);
}

void
disk_keys_write(struct disk *d, struct seg *g, struct found *f, size_t n)
{
	struct keys_job *kj = calloc(1, sizeof(*kj));

	if (kj == NULL) {
		disk_found_free(f, n);
		return;
	}
	kj->found = f;
	kj->n = n;
	disk_keys_path(d, g->id, kj->path, sizeof(kj->path));
	if (d->closing) {
		/* the pool is gone: written here, at the stop */
		g->refs++;
		kj->j.d = d;
		kj->j.g = g;
		run_keys(&kj->j.pj);
		done_keys(&kj->j.pj);
		return;
	}
	disk_job_submit(d, &kj->j, g, run_keys, done_keys);
}

void
disk_keys_seal(struct disk *d, struct seg *g)
{
	g->sealed = true;
	if (g->writes > 0 || g->keys_written)
		return; /* the last write's end calls again */
	g->keys_written = true;
	if (g->keys_lost || g->bytes == 0) {
		disk_keys_drop(g);
		return;
	}
	struct found *f = g->keys;
	size_t n = g->nkeys;
	g->keys = NULL;
	g->nkeys = g->cap_keys = 0;
	disk_keys_write(d, g, f, n);
}

/* ---- reading ---- */

int
disk_keys_load(const char *path, uint32_t id, uint64_t seg_len,
    struct found **out, size_t *nout)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf = NULL;
	struct found *v = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*nout = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_size < KEYS_HEAD + KEYS_SUM ||
	    st.st_size > KEYS_MAX || (buf = malloc((size_t)st.st_size)) ==
	    NULL || disk_pread(fd, buf, (size_t)st.st_size, 0) < 0)
		goto bad;
	size_t len = (size_t)st.st_size - KEYS_SUM;
	if (memcmp(buf, KEYS_MAGIC, 4) != 0 || load_le32(buf + 4) != id ||
	    load_le32(buf + 8) != seg_len ||
	    load_le64(buf + len) != XXH3_64bits(buf, len))
		goto bad;
	uint32_t count = load_le32(buf + 12);
	const uint8_t *p = buf + KEYS_HEAD, *end = buf + len;
	for (uint32_t i = 0; i < count; i++) {
		if ((size_t)(end - p) < KEYS_ENTRY)
			goto bad;
		struct found f = {
			.off = load_le32(p),
			.len = load_le32(p + 4),
			.key_len = load_le32(p + 8),
			.vhash = (uint16_t)load_le(p + 12, 2),
			.tomb = p[14] != 0,
			.expires_ms = load_le64(p + 16),
		};
		p += KEYS_ENTRY;
		if ((size_t)(end - p) < f.key_len ||
		    (uint64_t)f.off + f.len > seg_len)
			goto bad;
		f.hash = XXH3_64bits(p, f.key_len);
		if (disk_found_push(&v, &n, &cap, &f, (const char *)p) < 0)
			goto bad;
		p += f.key_len;
	}
	if (p != end)
		goto bad;
	free(buf);
	close(fd);
	*out = v;
	*nout = n;
	return 0;
bad:
	disk_found_free(v, n);
	free(buf);
	close(fd);
	errno = EINVAL;
	return -1;
}
