/*
 * The writer of /metrics: a family (name, type, label keys, HELP) and its
 * samples. Each room declares its own families once, as a table of
 * X(id, type, name, labels, help) rows made into an array of struct
 * metric_family_info (METRIC_FAMILY_INFO): the proxy's in
 * proxy/stats/families.h, the peers' in peers/peerstats.h. /metrics is
 * written through metric_head and the sample writers below, so no family
 * goes out without its HELP and TYPE; proxy/README.md's metric reference
 * is the tables printed (sumcache --metrics-list), and a unit test holds
 * the two together. Label values come from the enums' own name tables
 * (reject reasons, traffic types, ICP drop reasons...).
 */
#ifndef METRIC_H
#define METRIC_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

struct metric_family_info {
	const char *name;
	const char *type;     /* "counter" or "gauge" */
	const char *labels;   /* keys, comma-separated; "" for none */
	const char *help;
};

/* A row of a family table, as an initializer of its info. */
#define METRIC_FAMILY_INFO(id, type, name, labels, help)                       \
	{name, #type, labels, help},

/* The family's HELP and TYPE lines: once, before its samples. */
void metric_head(struct evbuffer *out, const struct metric_family_info *f);
/* One sample. values holds one value per label key of the family, in
 * its order (NULL for a family without labels); values are escaped. */
void metric_u64(struct evbuffer *out, const struct metric_family_info *f,
    const char *const *values, uint64_t v);
void metric_f64(struct evbuffer *out, const struct metric_family_info *f,
    const char *const *values, double v);
/* A family without labels: head and its one sample. */
void metric_single_u64(struct evbuffer *out,
    const struct metric_family_info *f, uint64_t v);

/* proxy/README.md's metric reference: the Markdown table's head, then
 * a row for each of the n families of a table. */
void metric_reference_head(struct evbuffer *out);
void metric_reference(struct evbuffer *out,
    const struct metric_family_info *fams, size_t n);

#endif
