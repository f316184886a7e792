/*
 * A node's life: start every module from the configuration, drain on
 * SIGTERM or SIGINT, reload the configuration on SIGHUP (reload.c), and
 * free it all. main.c reads the command line, then calls these.
 */
#ifndef SERVER_H
#define SERVER_H

#include "proxy.h"
#include "publisher.h"

/* Starts n from n->conf (read and checked), with nworkers workers. 0,
 * or -1 with the cause logged; server_fini frees what was started
 * either way. */
int server_init(struct node *n, unsigned nworkers);
/* Runs the node until its drain is over: every worker's loop, the home
 * one on the calling thread. -1 when a worker's thread would not
 * start (the node then stops). */
int server_run(struct node *n);
void server_fini(struct node *n);
/* Sets s->limits and the connection memory bound from c. */
void server_apply_limits(struct node *n, const struct conf *c);

/* The publisher's part of a configuration (summary/publisher.h). */
struct pub_conf server_publish_conf(const struct conf *c);
/* The peer table's part of c, for s's node (peers/peers.h). */
struct peers_conf server_peers_conf(const struct node *n,
    const struct conf *c);

#endif
