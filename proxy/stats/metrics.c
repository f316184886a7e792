/*
 * The proxy's counters rendered through the family table (metric.h):
 * HELP and TYPE at the first row of each family.
 */
#include "metrics.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "budget.h"
#include "disk.h"
#include "sc_assert.h"
#include "client.h"
#include "proxy.h"
#include "sqdigest.h"
#include "store.h"
#include "tiers.h"

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

void
metrics_refresh(struct server *s)
{
	const struct store_stats *st = store_stats(s->store);
	const struct budget_stats *bs = budget_stats(s->budget);

	s->m.cache_objects = st->objects;
	s->m.cache_bytes = st->bytes;
	s->m.cache_pinned = st->pinned;
	s->m.evictions = st->evictions;
	s->m.inflight_bytes = bs->inflight;
	s->m.inflight_refused = bs->inflight_refused;
	s->m.heap_trims = bs->trims;
	s->m.conn_mem_bound = client_mem_bound(s);
	if (s->digest != NULL)
		sqdigest_stats(s->digest, &s->m.digest_entries,
		    &s->m.digest_table_bytes);
	const struct disk_stats *ds = tiers_disk_stats(s);
	if (ds == NULL)
		return;
	s->m.disk_objects = ds->objects;
	s->m.disk_bytes = ds->bytes;
	s->m.disk_file_bytes = ds->file_bytes;
	s->m.disk_index_bytes = ds->index_bytes;
	s->m.disk_reads = ds->reads;
	s->m.disk_writes = ds->writes;
	s->m.disk_read_errors = ds->read_errors;
	s->m.disk_write_errors = ds->write_errors;
	s->m.disk_write_refused = ds->write_refused;
	s->m.disk_read_us = ds->read_us;
	s->m.disk_write_us = ds->write_us;
	s->m.disk_dropped_torn = ds->dropped[DISK_DROP_TORN];
	s->m.disk_dropped_checksum = ds->dropped[DISK_DROP_CHECKSUM];
	s->m.disk_dropped_io = ds->dropped[DISK_DROP_IO];
	s->m.disk_dropped_replaced = ds->dropped[DISK_DROP_REPLACED];
	s->m.disk_dropped_aborted = ds->dropped[DISK_DROP_ABORTED];
	s->m.disk_dropped_short = ds->dropped[DISK_DROP_SHORT];
	s->m.disk_segments_changed = ds->segments_changed;
	s->m.disk_reads_cached = ds->reads_cached;
	s->m.disk_streamed = ds->streams;
	s->m.disk_segments_evicted = ds->segments_evicted;
	s->m.disk_readmitted = ds->readmitted;
	s->m.disk_scan_found = ds->scan_segments;
	s->m.disk_scan_done = ds->scan_segments_done;
	s->m.disk_scan_from_keys = ds->scan_from_keys;
	s->m.disk_keys_written = ds->keys_written;
	s->m.disk_keys_errors = ds->keys_errors;
	s->m.disk_scan_us = ds->scan_ms * 1000;
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
