/*
 * The status page (/sumcache/status): a ring of samples of the counters
 * /metrics shows, taken every status_interval, and the JSON the page
 * draws its charts and tables from (/sumcache/v1/status). The page itself
 * is proxy/stats/status.html, compiled in as status_html.
 */
#ifndef STATUS_H
#define STATUS_H

#include <stddef.h>

struct server;
struct evbuffer;
struct status;

/* Starts sampling s's counters; NULL on ENOMEM. */
struct status *status_new(struct server *s);
void status_free(struct status **st);

/* The JSON document: this node, its samples (the last one taken now),
 * its peers' summary state. */
void status_render_json(struct status *st, struct evbuffer *out);

extern const char status_html[];
extern const size_t status_html_len;

#endif
