/*
 * Large stored bodies kept in anonymous memory files (memfd) so that hits
 * are sent with sendfile(2), as nginx sends files from the page cache,
 * instead of being copied from our heap into the socket.
 */
#ifndef BODYFD_H
#define BODYFD_H

#include <stdbool.h>

#include "store.h"

struct evbuffer;

/* Bodies at least this large are moved into a memfd when stored. */
#define BODYFD_MIN (64 * 1024)

/*
 * Moves a frozen body (the caller's only reference) into a memfd and gives
 * the heap copy back. Returns false, leaving the body as it was, when no
 * memfd can be had (EMFILE, ENOMEM) or the one had is numbered fd_ceiling
 * or more: the body is then sent from the heap. Descriptors are handed out
 * lowest first, so a memfd numbered n means n others are open; the ceiling
 * keeps the descriptors above it for connections (accept.c).
 */
bool bodyfd_convert(struct store_body **b, int fd_ceiling);

/*
 * A file whose ranges are bodies: fd, of len bytes at most (a bound: the
 * file may still grow to it), which the file then owns. Each body made
 * of it takes a reference; the last one (or the last send in flight)
 * closes fd. NULL, fd closed, on ENOMEM.
 */
struct bodyfd_file;
struct bodyfd_file *bodyfd_file_open(int fd, int64_t len);
void bodyfd_file_unref(struct bodyfd_file **f);

/*
 * Makes b (the caller's only reference, with no data of its own) the len
 * bytes of f at off: a disk tier's body, in a segment file the page cache
 * keeps (cache_mem does not count its bytes). False on ENOMEM.
 */
bool bodyfd_share(struct store_body **b, struct bodyfd_file *f, int64_t off,
    size_t len);

/* Appends len bytes of the body from offset from to out without copying
 * them: a file segment for a body kept in a file, a heap reference
 * otherwise. Takes its own references. */
void bodyfd_send_part(struct store_body *b, struct evbuffer *out,
    uint64_t from, uint64_t len);
/* len bytes of the body from offset from, copied into out (read from its
 * file when it is kept in one): false when the file ended first or the
 * read failed, out then holding a part of them or none. */
bool bodyfd_copy_part(const struct store_body *b, struct evbuffer *out,
    uint64_t from, uint64_t len);

#endif
