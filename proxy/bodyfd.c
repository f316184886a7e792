/*
 * memfd-backed bodies.
 *
 * A converted body keeps its store_body header (length, reference count)
 * and holds a libevent file segment in b->ext; its heap data is released.
 * libevent reference-counts the segment itself: every evbuffer chain that
 * is still sending it keeps the file open after the store has dropped the
 * body, so eviction never cuts a transfer short.
 *
 * The pages live in the kernel's shmem, outside our heap, but they are
 * charged to cache_mem exactly as heap bodies are (store_obj.charge), and
 * after eviction for as long as a chain still sends them: the store's pin
 * of such a body is kept beside the segment and released by libevent's
 * cleanup callback, when the last chain is done with it.
 */
#define _GNU_SOURCE /* memfd_create */
#include "bodyfd.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <event2/buffer.h>

static void
segment_free(void *seg)
{
	evbuffer_file_segment_free(seg);
}

/* Outlives the body: libevent frees the segment when its last chain is
 * sent, which may be after the store let go of the body. */
struct segment_watch {
	struct store_pin *pin;
};

static void
on_segment_done(struct evbuffer_file_segment const *seg, int flags,
    void *arg)
{
	struct segment_watch *w = arg;

	(void)seg;
	(void)flags;
	store_pin_release(&w->pin);
	free(w);
}

bool
bodyfd_attach(struct store_body **bp, int fd, int64_t off, size_t len,
    bool on_disk)
{
	struct store_ext *ext = malloc(sizeof(*ext));
	struct segment_watch *w = calloc(1, sizeof(*w));
	struct evbuffer_file_segment *seg = evbuffer_file_segment_new(fd,
	    (ev_off_t)off, (ev_off_t)len, EVBUF_FS_CLOSE_ON_FREE);

	if (seg == NULL || ext == NULL || w == NULL) {
		free(ext);
		free(w);
		if (seg != NULL)
			evbuffer_file_segment_free(seg); /* closes fd */
		else
			close(fd);
		return false;
	}
	evbuffer_file_segment_add_cleanup_cb(seg, on_segment_done, w);
	*ext = (struct store_ext){.handle = seg, .free = segment_free,
	    .pin = &w->pin, .fd = fd, .off = off, .on_disk = on_disk};
	store_body_drop_data(bp);
	(*bp)->ext = ext;
	(*bp)->len = len;
	return true;
}

bool
bodyfd_convert(struct store_body **bp, int fd_ceiling)
{
	struct store_body *b = *bp;
	int fd = memfd_create("sumcache-body", MFD_CLOEXEC);

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
	/* on ENOMEM the body stays on the heap, fd closed */
	return bodyfd_attach(bp, fd, 0, b->len, false);
}

void
bodyfd_send(struct store_body *b, struct evbuffer *out)
{
	if (b->len == 0)
		return;
	if (b->ext != NULL) {
		/* the segment's offsets are relative to its own start */
		evbuffer_add_file_segment(out, b->ext->handle, 0,
		    (ev_off_t)b->len);
		return;
	}
	store_body_ref(b);
	evbuffer_add_reference(out, b->data, b->len, store_body_release_cb, b);
}
