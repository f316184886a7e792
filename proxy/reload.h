/*
 * SIGHUP: the configuration read again and applied to a running node.
 */
#ifndef RELOAD_H
#define RELOAD_H

#include "proxy.h"

/* Reads s's configuration again and applies what can change live, or
 * refuses the whole of it (counted, logged; the running one stays). */
void reload_conf(struct server *s);

#endif
