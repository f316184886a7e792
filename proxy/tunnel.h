/* CONNECT tunnels: bytes relayed both ways, no HTTP inside. */
#ifndef TUNNEL_H
#define TUNNEL_H

#include <stdbool.h>

#include "proxy.h"

/*
 * Handles a CONNECT transaction. Returns true when the connection now
 * belongs to a tunnel (the client and t are freed); false when the request
 * was refused with an error response on the client connection.
 */
bool tunnel_start(struct txn *t);

/* Closes every tunnel at once (exit after the shutdown bound). */
void tunnel_free_all(struct server *s);

#endif
