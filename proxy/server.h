/*
 * A node's life: start every module from the configuration, drain on
 * SIGTERM or SIGINT, reopen the access log on SIGHUP, and free it all.
 * main.c reads the command line and the configuration, then calls these.
 */
#ifndef SERVER_H
#define SERVER_H

#include "proxy.h"
#include "publisher.h"

/* Starts s from s->conf (read and checked). 0, or -1 with the cause
 * logged; server_fini frees what was started either way. */
int server_init(struct server *s);
void server_fini(struct server *s);

/* A client connection or tunnel closed: the listener may take more, and
 * a drain ends with the last of them. */
void server_conn_closed(struct server *s);

/* The publisher's part of a configuration (summary/publisher.h). */
struct pub_conf server_publish_conf(const struct conf *c);

#endif
