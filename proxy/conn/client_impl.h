/*
 * What client.c and clientout.c share of a connection's insides; nothing
 * outside conn/client*.c includes it.
 */
#ifndef CLIENT_IMPL_H
#define CLIENT_IMPL_H

#include "proxy.h"

/* Frees c and its transaction now (or, inside its parse loop, on the
 * loop's way out). */
void client_free(struct client *c);
/* c's output is all through its bufferevent: it closes (under TLS once
 * the layer's records are written, close_notify last). */
void client_close_now(struct client *c);
/* Flush what is queued, then close. */
void client_close_after_output(struct client *c);
/* Frees c once out, its socket's output under its TLS layer, is written
 * (the layer's last records: a reply and close_notify, or a failed
 * handshake's alert), or at the write timeout. */
void client_free_when_written(struct client *c, struct evbuffer *out);
/* Whether c's socket is bulk work for the loop (loop.h): a long reply
 * is, until the next request starts. */
void client_set_bulk(struct client *c, bool bulk);

#endif
