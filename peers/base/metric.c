/*
 * See metric.h.
 */
#include "metric.h"

#include <inttypes.h>
#include <string.h>

#include <event2/buffer.h>

#include "sc_assert.h"

void
metric_head(struct evbuffer *out, const struct metric_family_info *m)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name,
	    m->help, m->name, m->type);
}

/* A label value as the exposition format quotes it. */
static void
label_value(struct evbuffer *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			evbuffer_add_printf(out, "\\%c", *v);
		else if (*v == '\n')
			evbuffer_add(out, "\\n", 2);
		else
			evbuffer_add(out, v, 1);
	}
}

/* "name{k1="v1",k2="v2"} " for family f. */
static void
series(struct evbuffer *out, const struct metric_family_info *m,
    const char *const *values)
{	const char *k = m->labels;

	evbuffer_add(out, m->name, strlen(m->name));
	if (*k != '\0') {
		SC_ASSERT(values != NULL);
		evbuffer_add(out, "{", 1);
		for (size_t i = 0; *k != '\0'; i++) {
			size_t n = strcspn(k, ",");
			SC_ASSERT(values[i] != NULL);
			evbuffer_add_printf(out, "%s%.*s=\"", i ? "," : "",
			    (int)n, k);
			label_value(out, values[i]);
			evbuffer_add(out, "\"", 1);
			k += n + (k[n] == ',');
		}
		evbuffer_add(out, "}", 1);
	}
	evbuffer_add(out, " ", 1);
}

void
metric_u64(struct evbuffer *out, const struct metric_family_info *f,
    const char *const *values, uint64_t v)
{
	series(out, f, values);
	evbuffer_add_printf(out, "%" PRIu64 "\n", v);
}

void
metric_f64(struct evbuffer *out, const struct metric_family_info *f,
    const char *const *values, double v)
{
	series(out, f, values);
	evbuffer_add_printf(out, "%.17g\n", v);
}

void
metric_single_u64(struct evbuffer *out, const struct metric_family_info *f,
    uint64_t v)
{
	metric_head(out, f);
	metric_u64(out, f, NULL, v);
}

void
metric_reference_head(struct evbuffer *out)
{
	evbuffer_add_printf(out, "| family | type | labels | what it counts |\n"
	    "|---|---|---|---|\n");
}

void
metric_reference(struct evbuffer *out, const struct metric_family_info *fams,
    size_t n)
{
	for (size_t f = 0; f < n; f++) {
		const struct metric_family_info *m = &fams[f];
		evbuffer_add_printf(out, "| `%s` | %s | %s | %s |\n", m->name,
		    m->type, *m->labels ? m->labels : "", m->help);
	}
}
