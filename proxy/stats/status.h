/*
 * The status page (/sumcache/status): a ring of samples of the counters
 * /metrics shows, taken every status_interval, and the JSON the page
 * draws its charts and tables from (/sumcache/v1/status). The page itself
 * is proxy/stats/status.html, compiled in as status_html.
 */
#ifndef STATUS_H
#define STATUS_H

#include <stddef.h>

struct conf;
struct evbuffer;
struct event_base;
struct metrics_view;
struct peers;
struct status;

/* What the status page samples and shows; every pointer is borrowed for
 * the status's life. */
struct status_src {
	struct event_base *base;
	const struct conf *conf;    /* the node's name, address, interval */
	struct peers *peers;        /* their traffic and summaries, or NULL */
	/* where the counters sampled are read, at each sample */
	void (*view)(void *arg, struct metrics_view *v);
	void *arg;
};

/* Starts sampling; NULL on ENOMEM. */
struct status *status_new(const struct status_src *src);
void status_free(struct status **st);

/* The JSON document: this node, its samples (the last one taken now),
 * its peers' summary state. */
void status_render_json(struct status *st, struct evbuffer *out);

extern const char status_html[];
extern const size_t status_html_len;

#endif
