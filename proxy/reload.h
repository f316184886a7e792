/*
 * The configuration read, at start and again on SIGHUP, and applied to a
 * running node.
 */
#ifndef RELOAD_H
#define RELOAD_H

#include "proxy.h"

/*
 * Reads the configuration src names into c (zeroed): defaults, file,
 * overrides, then the checks of -t and the cluster key. With running
 * (a reload), directives that cannot change live keep running's values
 * (conf.h). Returns how many were kept so, or -1 with the reason in err.
 */
int reload_read_conf(struct conf *c, const struct server_conf_src *src,
    const struct conf *running, char *err, size_t elen);

/* Reads s's configuration again and applies what can change live, or
 * refuses the whole of it (counted, logged; the running one stays). */
void reload_conf(struct worker *s);

#endif
