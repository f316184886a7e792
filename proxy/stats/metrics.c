/*
 * The proxy's counters rendered through the family table (metric.h):
 * HELP and TYPE at the first row of each family, each value read in
 * place from the struct its row names.
 */
#include "metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "budget.h"
#include "curlev.h"
#include "disk.h"
#include "leaves.h"
#include "peerstats.h"
#include "sc_assert.h"
#include "sqdigest.h"
#include "store.h"

enum metrics_src {
	SRC_OWN, SRC_NODE, SRC_STORE, SRC_BUDGET, SRC_DIGEST, SRC_DISK, SRC_LEAVES,
	SRC_CURL
};

#define METRICS_TYPE_OWN struct metrics
#define METRICS_TYPE_NODE struct metrics_node
#define METRICS_TYPE_STORE struct store_stats
#define METRICS_TYPE_BUDGET struct budget_stats
#define METRICS_TYPE_DIGEST struct sqdigest_stats
#define METRICS_TYPE_DISK struct disk_stats
#define METRICS_TYPE_LEAVES struct leaves_stats
#define METRICS_TYPE_CURL struct curlev_stats

/* value() reads every row as a uint64_t: a row naming a field of
 * another type fails the build here, not the scrape. */
#define METRICS_IS_U64(src, field, family, label, status)                    \
	_Static_assert(_Generic(((METRICS_TYPE_##src *)0)->field,            \
	    uint64_t: 1, default: 0), #src " " #field " is not a uint64_t");
METRICS_TABLE(METRICS_IS_U64)
#undef METRICS_IS_U64

const struct metric_family_info proxy_families[MF_COUNT] = {
	PROXY_FAMILIES(METRIC_FAMILY_INFO)
};

struct metric_row {
	const struct metric_family_info *family;
	const char *label;    /* the family's one label value, or NULL */
	const char *status;   /* the status page's name, or NULL */
	enum metrics_src src;
	size_t off;           /* in the source's struct */
};

static const struct metric_row rows[] = {
#define METRICS_ROW(src, field, family, label, status)                       \
	{MF(family), label, status, SRC_##src,                              \
	    offsetof(METRICS_TYPE_##src, field)},
	METRICS_TABLE(METRICS_ROW)
#undef METRICS_ROW
};

static const void *
source(const struct metrics_view *v, enum metrics_src src)
{
	switch (src) {
	case SRC_OWN:
		return v->own;
	case SRC_NODE:
		return v->node;
	case SRC_STORE:
		return v->store;
	case SRC_BUDGET:
		return v->budget;
	case SRC_DIGEST:
		return v->digest;
	case SRC_DISK:
		return v->disk;
	case SRC_LEAVES:
		return v->leaves;
	case SRC_CURL:
		return v->curl;
	}
	return NULL;
}

/* An OWN row of m, read atomically: m may be a worker's own counters,
 * which its thread is writing. */
static uint64_t
own_value(const struct metrics *m, const struct metric_row *r)
{
	return atomic_load_explicit((const _Atomic uint64_t *)((const char *)m +
	    r->off), memory_order_relaxed);
}

/* A source the node does not have (no disk tier, no digest) reads 0. */
static uint64_t
value(const struct metrics_view *v, const struct metric_row *r)
{
	const char *base = source(v, r->src);

	if (base == NULL)
		return 0;
	if (r->src == SRC_OWN)
		return own_value(v->own, r);
	return *(const uint64_t *)(base + r->off);
}

void
metrics_sum(struct metrics *into, const struct metrics *from)
{
#define METRICS_SUM_OWN(field)                                                \
	METRIC_ADD(into->field, atomic_load_explicit(&from->field,           \
	    memory_order_relaxed));
#define METRICS_SUM_NODE(field)
#define METRICS_SUM_STORE(field)
#define METRICS_SUM_BUDGET(field)
#define METRICS_SUM_DIGEST(field)
#define METRICS_SUM_DISK(field)
#define METRICS_SUM_LEAVES(field)
#define METRICS_SUM_CURL(field)
#define METRICS_SUM(src, field, family, label, status)                        \
	METRICS_SUM_##src(field)
	METRICS_TABLE(METRICS_SUM)
#undef METRICS_SUM
}

uint64_t
metrics_requests(const struct metrics *m)
{
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].family == MF(REQUESTS) &&
		    rows[i].src == SRC_OWN)
			n += own_value(m, &rows[i]);
	return n;
}

/* A family named in seconds has rows kept in microseconds. */
static bool
in_seconds(const struct metric_family_info *f)
{
	const char *name = f->name;
	size_t n = strlen(name);

	return (n > 8 && strcmp(name + n - 8, "_seconds") == 0) ||
	    (n > 14 && strcmp(name + n - 14, "_seconds_total") == 0);
}

void
metrics_render(const struct metrics_view *v, struct evbuffer *out)
{
	const struct metric_family_info *prev = NULL;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct metric_row *r = &rows[i];
		if (r->family != prev) {
			metric_head(out, r->family);
			prev = r->family;
		}
		const char *const *label = r->label ? &r->label : NULL;
		if (in_seconds(r->family))
			metric_f64(out, r->family, label, (double)value(v, r) /
			    1e6);
		else
			metric_u64(out, r->family, label, value(v, r));
	}
}

size_t
metrics_status_fields(const struct metrics_view *v,
    const char **names, uint64_t *values, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (rows[i].status == NULL)
			continue;
		if (n > 0 && strcmp(names[n - 1], rows[i].status) == 0) {
			values[n - 1] += value(v, &rows[i]);
			continue;
		}
		/* a status row past the caller's room would vanish from the
		 * page unseen: the room is ours to grow */
		SC_ASSERT(n < max);
		names[n] = rows[i].status;
		values[n++] = value(v, &rows[i]);
	}
	return n;
}

void
metrics_reference(struct evbuffer *out)
{
	metric_reference_head(out);
	metric_reference(out, proxy_families, MF_COUNT);
	metric_reference(out, peer_families, PF_COUNT);
}
