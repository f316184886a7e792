/* CONNECT tunnels: bytes relayed both ways, no HTTP inside. */
#ifndef TUNNEL_H
#define TUNNEL_H

#include <stdbool.h>

#include "proxy.h"

/*
 * Handles a CONNECT transaction. Returns 0 when the connection now
 * belongs to a tunnel (the client and t are freed), or the status the
 * caller refuses it with, *code and *why saying how and why; t is
 * untouched then.
 */
int tunnel_start(struct txn *t, enum squid_code *code, const char **why);

/* Whether c's connect_ports let a CONNECT reach port. */
bool tunnel_port_allowed(const struct conf *c, uint16_t port);

/* Closes every tunnel at once (exit after the shutdown bound). */
void tunnel_free_all(struct worker *s);

#endif
