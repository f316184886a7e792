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
 * Makes b (the caller's only reference, with no data of its own) the
 * len bytes of file fd at off, which it then owns (closed with the last
 * sender): a disk tier's body. Returns false, closing fd, on ENOMEM.
 */
bool bodyfd_attach(struct store_body **b, int fd, int64_t off, size_t len,
    bool on_disk);

/* Appends the whole body to out without copying it: a file segment for a
 * converted body, a heap reference otherwise. Takes its own references. */
void bodyfd_send(struct store_body *b, struct evbuffer *out);

#endif
