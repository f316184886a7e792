/*
 * The proxy's counters rendered through the family table (metric.h):
 * HELP and TYPE at the first row of each family.
 */
#include "metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "sc_assert.h"

struct metric_row {
	enum metric_family family;
	const char *label;    /* the family's one label value, or NULL */
	const char *status;   /* the status page's name, or NULL */
	size_t off;
};

static const struct metric_row rows[] = {
#define METRICS_ROW(field, family, label, status)                            \
	{MF_##family, label, status, offsetof(struct metrics, field)},
	METRICS_TABLE(METRICS_ROW)
#undef METRICS_ROW
};

static uint64_t
value(const struct metrics *m, const struct metric_row *r)
{
	return *(const uint64_t *)((const char *)m + r->off);
}

/* A family named in seconds has rows kept in microseconds. */
static bool
in_seconds(enum metric_family f)
{
	const char *name = metric_family(f)->name;
	size_t n = strlen(name);

	return (n > 8 && strcmp(name + n - 8, "_seconds") == 0) ||
	    (n > 14 && strcmp(name + n - 14, "_seconds_total") == 0);
}

void
metrics_render(const struct metrics *m, struct evbuffer *out)
{
	int prev = -1;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct metric_row *r = &rows[i];
		if ((int)r->family != prev) {
			metric_head(out, r->family);
			prev = (int)r->family;
		}
		const char *const *label = r->label ? &r->label : NULL;
		if (in_seconds(r->family))
			metric_f64(out, r->family, label, (double)value(m, r) /
			    1e6);
		else
			metric_u64(out, r->family, label, value(m, r));
	}
}

size_t
metrics_status_fields(const struct metrics *m, const char **names,
    uint64_t *values, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].status != NULL) {
			/* a status row past the caller's room would vanish
			 * from the page unseen: the room is ours to grow */
			SC_ASSERT(n < max);
			names[n] = rows[i].status;
			values[n++] = value(m, &rows[i]);
		}
	return n;
}
