/*
 * See timed.h.
 */
#include "timed.h"

#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "rice.h"

struct cell {
	uint16_t until;
	uint64_t pos;
};

static int
by_until(const void *a, const void *b)
{
	const struct cell *x = a, *y = b;

	if (x->until != y->until)
		return x->until < y->until ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

int
timed_encode(struct sum_buf *out, const uint64_t *pos, const uint16_t *until,
    size_t n)
{
	struct cell *c = n ? malloc(n * sizeof(*c)) : NULL;
	uint64_t *list = n ? malloc(n * sizeof(*list)) : NULL;
	size_t groups = 0;
	int rc = -1;

	if (n && (c == NULL || list == NULL))
		goto out;
	for (size_t i = 0; i < n; i++)
		c[i] = (struct cell){until[i], pos[i]};
	if (n > 0)
		qsort(c, n, sizeof(*c), by_until);
	for (size_t i = 0; i < n; i++)
		groups += i == 0 || c[i].until != c[i - 1].until;
	if (sum_buf_varint(out, groups) < 0)
		goto out;
	for (size_t i = 0, prev = 0; i < n;) {
		size_t j = i, k = 0;
		for (; j < n && c[j].until == c[i].until; j++)
			list[k++] = c[j].pos;
		if (sum_buf_varint(out, c[i].until - prev) < 0 ||
		    rice_encode(out, list, k) < 0)
			goto out;
		prev = c[i].until;
		i = j;
	}
	rc = 0;
out:
	free(c);
	free(list);
	return rc;
}

static int
ascending(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends list[0..n) at deadline u to c. */
static bool
take(struct timed_cells *c, const uint64_t *list, size_t n, uint16_t u)
{
	uint64_t *np = realloc(c->pos, (c->n + n) * sizeof(*np));

	if (np == NULL)
		return false;
	c->pos = np;
	uint16_t *nu = realloc(c->until, (c->n + n) * sizeof(*nu));
	if (nu == NULL)
		return false;
	c->until = nu;
	memcpy(c->pos + c->n, list, n * sizeof(*list));
	for (size_t i = 0; i < n; i++)
		c->until[c->n + i] = u;
	c->n += n;
	return true;
}

int
timed_decode(const uint8_t *in, size_t len, uint64_t m, bool clears,
    struct timed_cells *c)
{
	uint64_t groups, u = 0;
	size_t at = sum_varint_read(in, len, &groups);
	int rc = SUM_ERR_MALFORMED;

	memset(c, 0, sizeof(*c));
	/* a group holds a cell at least, and takes 3 bytes at least */
	if (at == 0 || groups > m || groups > (len - at) / 3)
		return SUM_ERR_MALFORMED;
	for (uint64_t g = 0; g < groups; g++) {
		uint64_t gap, *list;
		size_t n, used = sum_varint_read(in + at, len - at, &gap);
		if (used == 0 || gap > CBF_UNTIL_MAX - u ||
		    (g > 0 && gap == 0) || (gap == 0 && !clears))
			goto bad;
		u += gap;
		at += used;
		long r = rice_decode(in + at, len - at, m, &list, &n);
		if (r < 0) {
			rc = (int)r;
			goto bad;
		}
		at += (size_t)r;
		bool ok = n > 0 && c->n + n <= m && take(c, list, n, (uint16_t)u);
		free(list);
		if (!ok) {
			rc = n > 0 && c->n + n <= m ? SUM_ERR_NOMEM :
			    SUM_ERR_MALFORMED;
			goto bad;
		}
	}
	if (at != len)
		goto bad;
	/* one deadline a cell: no position in two groups */
	if (c->n > 1) {
		uint64_t *sorted = malloc(c->n * sizeof(*sorted));
		if (sorted == NULL) {
			rc = SUM_ERR_NOMEM;
			goto bad;
		}
		memcpy(sorted, c->pos, c->n * sizeof(*sorted));
		qsort(sorted, c->n, sizeof(*sorted), ascending);
		bool dup = false;
		for (size_t i = 1; i < c->n && !dup; i++)
			dup = sorted[i] == sorted[i - 1];
		free(sorted);
		if (dup)
			goto bad;
	}
	return 0;
bad:
	timed_cells_clear(c);
	return rc;
}

void
timed_cells_clear(struct timed_cells *c)
{
	free(c->pos);
	free(c->until);
	memset(c, 0, sizeof(*c));
}
