/*
 * Bodies kept in files: a large body moved into a memfd when stored, and
 * a disk tier's body, left in its segment file.
 *
 * Such a body keeps its store_body header (length, reference count) and
 * holds, in b->ext, a reference of its file (struct bodyfd_file: the
 * descriptor and a libevent file segment over it) and its offset there;
 * a converted body's heap data is released. libevent reference-counts
 * the segment itself: every evbuffer chain that is still sending it
 * keeps the file open after the store has dropped the body, so eviction
 * never cuts a transfer short.
 *
 * A memfd is sealed once written (no write, no change of size, by anyone):
 * what is sent from it by reference is the body, whoever holds the file.
 * A disk segment cannot be sealed; serve/disksend.c says how a send from
 * one is kept honest.
 *
 * A memfd's pages live in the kernel's shmem, outside our heap, but they
 * are charged to cache_mem exactly as heap bodies are (store_obj.charge),
 * and after eviction for as long as a chain still sends them: the store's
 * pin of such a body is kept beside the segment and released by
 * libevent's cleanup callback, when the last chain is done with it. A
 * segment file's pages are the page cache's, which the kernel takes back
 * under pressure: not charged, and no pin.
 */
#define _GNU_SOURCE /* memfd_create */
#include "bodyfd.h"
#include "sc_assert.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/buffer.h>

/*
 * A file that bodies are ranges of: one descriptor and one libevent file
 * segment, whatever the number of bodies. A memfd is one body's own; a
 * disk segment's file is shared by every body read back from it, so that
 * a cache of many disk objects holds one descriptor per segment file,
 * not one per object.
 */
struct bodyfd_file {
	_Atomic unsigned refs;   /* bodies are let go on any worker */
	int fd;
	struct evbuffer_file_segment *seg; /* owns fd */
};

struct bodyfd_file *
bodyfd_file_open(int fd, int64_t len)
{
	struct bodyfd_file *f = malloc(sizeof(*f));
	struct evbuffer_file_segment *seg = f != NULL ?
	    evbuffer_file_segment_new(fd, 0, (ev_off_t)len,
	    EVBUF_FS_CLOSE_ON_FREE) : NULL;

	if (seg == NULL) {
		free(f);
		close(fd);
		return NULL;
	}
	f->fd = fd;
	f->seg = seg;
	atomic_init(&f->refs, 1);
	return f;
}

static struct bodyfd_file *
file_ref(struct bodyfd_file *f)
{
	atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	return f;
}

void
bodyfd_file_unref(struct bodyfd_file **fp)
{
	struct bodyfd_file *f = *fp;

	if (f == NULL)
		return;
	*fp = NULL;
	if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) > 1)
		return;
	/* a chain still sending keeps libevent's segment, and the fd */
	evbuffer_file_segment_free(f->seg);
	free(f);
}

static void
file_free(void *f)
{
	bodyfd_file_unref((struct bodyfd_file **)&f);
}

/* Outlives the body: libevent frees the segment when its last chain is
 * sent, which may be after the store let go of the body. */
#define SEGMENT_WATCH_MAGIC 0x30845703u
struct segment_watch {
	unsigned magic;         /* SEGMENT_WATCH_MAGIC (SC_CAST) */
	struct store_pin *pin;
};

static void
on_segment_done(struct evbuffer_file_segment const *seg, int flags,
    void *arg)
{
	struct segment_watch *w = SC_CAST(struct segment_watch, arg, SEGMENT_WATCH_MAGIC);

	(void)seg;
	(void)flags;
	store_pin_release(&w->pin);
	w->magic = 0;
	free(w);
}

/* b's bytes become [off, off + len) of f, with a reference of f. */
static bool
attach(struct store_body **bp, struct bodyfd_file *f, int64_t off,
    size_t len, struct store_pin **pin, bool on_disk)
{
	struct store_ext *ext = malloc(sizeof(*ext));

	if (ext == NULL)
		return false;
	*ext = (struct store_ext){.handle = file_ref(f), .free = file_free,
	    .pin = pin, .fd = f->fd, .off = off, .on_disk = on_disk};
	store_body_drop_data(bp);
	(*bp)->ext = ext;
	(*bp)->len = len;
	return true;
}

bool
bodyfd_share(struct store_body **bp, struct bodyfd_file *f, int64_t off,
    size_t len)
{
	/* the page cache holds a disk file's bytes: no pin to keep */
	return attach(bp, f, off, len, NULL, true);
}

bool
bodyfd_convert(struct store_body **bp, int fd_ceiling)
{
	struct store_body *b = *bp;
	int fd = memfd_create("sumcache-body", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING);

	if (fd < 0)
		return false;
	if (fd >= fd_ceiling) {
		close(fd);
		return false;
	}
	for (size_t off = 0; off < b->len;) {
		ssize_t n = write(fd, b->data + off, b->len - off);
		if (n <= 0) {
			close(fd);
			return false;
		}
		off += (size_t)n;
	}
	/* sealed: no hand (another process through /proc included) can
	 * change or cut it under a send; the kernel's pages in flight and a
	 * TLS layer's map of them stay the body's */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		close(fd);
		return false;
	}
	/* on ENOMEM the body stays on the heap, fd closed */
	struct bodyfd_file *f = bodyfd_file_open(fd, (int64_t)b->len);
	struct segment_watch *w = f != NULL ? calloc(1, sizeof(*w)) : NULL;
	if (w == NULL || !attach(bp, f, 0, b->len, &w->pin, false)) {
		free(w);
		bodyfd_file_unref(&f);
		return false;
	}
	w->magic = SEGMENT_WATCH_MAGIC;
	evbuffer_file_segment_add_cleanup_cb(f->seg, on_segment_done, w);
	bodyfd_file_unref(&f); /* the body's reference is the one left */
	return true;
}

/* len bytes of a body kept in a file, from body offset from. */
static void
bodyfd_send_range(struct store_body *b, struct evbuffer *out, uint64_t from,
    uint64_t len)
{
	struct bodyfd_file *f = b->ext->handle;

	evbuffer_add_file_segment(out, f->seg, (ev_off_t)b->ext->off +
	    (ev_off_t)from, (ev_off_t)len);
}

void
bodyfd_send_part(struct store_body *b, struct evbuffer *out, uint64_t from,
    uint64_t len)
{
	if (len == 0)
		return;
	if (b->ext != NULL) {
		bodyfd_send_range(b, out, from, len);
		return;
	}
	store_body_ref(b);
	evbuffer_add_reference(out, b->data + from, (size_t)len,
	    store_body_release_cb, b);
}

bool
bodyfd_copy_part(const struct store_body *b, struct evbuffer *out,
    uint64_t from, uint64_t len)
{
	struct evbuffer_iovec v;

	if (b->ext == NULL)
		return evbuffer_add(out, b->data + from, (size_t)len) == 0;
	if (len == 0)
		return true;
	if (evbuffer_reserve_space(out, (ev_ssize_t)len, &v, 1) < 1)
		return false;
	ssize_t got = pread(b->ext->fd, v.iov_base, (size_t)len,
	    (off_t)((uint64_t)b->ext->off + from));
	if (got != (ssize_t)len)
		return false;
	v.iov_len = (size_t)len;
	return evbuffer_commit_space(out, &v, 1) == 0;
}

