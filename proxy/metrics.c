/*
 * Prometheus text rendering of the counter table. One HELP/TYPE pair per
 * family, emitted at the first row of the family.
 */
#include "metrics.h"

#include <inttypes.h>
#include <string.h>

#include <event2/buffer.h>

struct metric_desc {
	const char *family;
	const char *type;
	const char *labels;
	const char *help;
	size_t off;
};

static const struct metric_desc descs[] = {
#define METRICS_DESC(field, type, family, labels, help)                      \
	{family, #type, labels, help, offsetof(struct metrics, field)},
	METRICS_TABLE(METRICS_DESC)
#undef METRICS_DESC
};

void
metrics_render(const struct metrics *m, struct evbuffer *out)
{
	const char *prev = "";

	for (size_t i = 0; i < sizeof(descs) / sizeof(descs[0]); i++) {
		const struct metric_desc *d = &descs[i];
		uint64_t v = *(const uint64_t *)((const char *)m + d->off);

		if (strcmp(prev, d->family) != 0) {
			evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n",
			    d->family, d->help, d->family, d->type);
			prev = d->family;
		}
		if (*d->labels)
			evbuffer_add_printf(out, "%s{%s} %" PRIu64 "\n",
			    d->family, d->labels, v);
		else
			evbuffer_add_printf(out, "%s %" PRIu64 "\n", d->family,
			    v);
	}
}
