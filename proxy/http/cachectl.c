/*
 * Shared-cache rules of RFC 9111, kept apart from I/O so that each rule has
 * a unit test. Time is passed in, never read here.
 *
 * Choices where the RFC leaves room, with the reason:
 * - Responses that set cookies are stored only when the origin says public
 *   or s-maxage, as Varnish does: a cookie-setting response shared between
 *   users is the classic cache data leak.
 * - A response with neither freshness nor validators is not stored: it could
 *   never be served without a full fetch, so it only costs memory. An
 *   operator's rule with a minimum freshness for its URL (refresh_pattern:
 *   package files, immutable by name, from mirrors that send no
 *   validators) gives it one.
 * - Any final status with explicit freshness is stored: the origin said how
 *   long it holds. Only must-understand narrows that, to the statuses whose
 *   rules are implemented here (understood_status).
 * - Heuristic freshness is 10 % of the Last-Modified age capped at a day
 *   (Squid's default refresh_pattern uses 20 % and 3 days; 10 % is what the
 *   RFC suggests), unless an operator's rule says otherwise.
 */
#include "cachectl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int64_t
delta_seconds(const char *s, size_t n)
{
	int64_t v = 0;

	if (n == 0)
		return CC_ABSENT;
	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s++;
		n -= 2;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return CC_ABSENT;
		/* RFC 9111 1.2.2: clamp at 2^31 rather than overflow */
		if (v < 2147483648LL)
			v = v * 10 + (s[i] - '0');
	}
	return v > 2147483648LL ? 2147483648LL : v;
}

static void
cc_directive(struct cc *cc, const char *e, size_t el, bool is_request)
{
	const char *eq = memchr(e, '=', el);
	size_t nl = eq ? (size_t)(eq - e) : el;
	const char *arg = eq ? eq + 1 : NULL;
	size_t al = eq ? el - nl - 1 : 0;

#define IS(lit) http_token_eq(e, nl, lit)
	if (IS("no-store"))
		cc->no_store = true;
	else if (IS("no-cache"))
		cc->no_cache = !is_request ? (arg == NULL || cc->no_cache) : true;
	else if (IS("private"))
		cc->private_ = cc->private_ || arg == NULL;
	else if (IS("public"))
		cc->public_ = true;
	else if (IS("must-revalidate") || IS("proxy-revalidate"))
		cc->must_revalidate = true;
	else if (IS("only-if-cached"))
		cc->only_if_cached = true;
	else if (IS("must-understand") && !is_request)
		cc->must_understand = true;
	else if (IS("max-age") && arg)
		cc->max_age = delta_seconds(arg, al);
	else if (IS("s-maxage") && arg)
		cc->s_maxage = delta_seconds(arg, al);
	else if (IS("min-fresh") && arg)
		cc->min_fresh = delta_seconds(arg, al);
	else if (IS("max-stale"))
		cc->max_stale = arg ? delta_seconds(arg, al) : INT64_MAX;
	else if (IS("stale-while-revalidate") && arg && !is_request)
		cc->stale_while_revalidate = delta_seconds(arg, al);
	else if (IS("stale-if-error") && arg)
		cc->stale_if_error = delta_seconds(arg, al);
#undef IS
}

void
cc_init(struct cc *cc)
{
	memset(cc, 0, sizeof(*cc));
	cc->max_age = cc->s_maxage = cc->max_stale = cc->min_fresh = CC_ABSENT;
	cc->stale_while_revalidate = cc->stale_if_error = CC_ABSENT;
}

void
cc_parse_value(struct cc *cc, const char *v, size_t vlen, bool is_request)
{
	const char *e;
	size_t el, pos = 0;

	while (http_list_next(v, vlen, &pos, &e, &el))
		cc_directive(cc, e, el, is_request);
}

void
cc_parse(const struct http_head *h, bool is_request, struct cc *cc)
{
	bool seen = false, pragma_no_cache = false;

	cc_init(cc);
	for (unsigned i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];
		const char *e;
		size_t el, pos = 0;

		if (http_field_is(f, "cache-control")) {
			seen = true;
			cc_parse_value(cc, f->value, f->vlen, is_request);
		} else if (is_request && http_field_is(f, "pragma")) {
			while (http_list_next(f->value, f->vlen, &pos, &e, &el))
				if (http_token_eq(e, el, "no-cache"))
					pragma_no_cache = true;
		}
	}
	/* RFC 9111 5.4: Pragma counts only without Cache-Control */
	if (!seen && pragma_no_cache)
		cc->no_cache = true;
}

/* ---- dates ---- */

static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char wdays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri",
    "Sat"};

static int
num(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Names in any case: RFC 9110 5.6.7 asks recipients to be robust, and
 * "nov" or "GMT" spelt "gmt" leave no doubt about the time. */
static int
month(const char *s)
{
	for (int i = 0; i < 12; i++)
		if (strncasecmp(s, months[i], 3) == 0)
			return i;
	return -1;
}

static int64_t
days_from_civil(int64_t y, int m, int d)
{
	/* proleptic Gregorian day count, 1970-01-01 = 0 */
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static time_t
mk(int y, int mon, int d, int hh, int mm, int ss)
{
	if (y < 1970 || mon < 0 || d < 1 || d > 31 || hh > 23 || mm > 59 ||
	    ss > 60 || hh < 0 || mm < 0 || ss < 0)
		return -1;
	return (time_t)(days_from_civil(y, mon + 1, d) * 86400 + hh * 3600 +
	    mm * 60 + ss);
}

time_t
http_date_parse(const char *s, size_t n)
{
	char b[64];

	if (n >= sizeof(b))
		return -1;
	memcpy(b, s, n);
	b[n] = '\0';
	/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
	if (n == 29 && b[3] == ',' && b[4] == ' ' && b[7] == ' ' &&
	    b[11] == ' ' && b[16] == ' ' && b[19] == ':' && b[22] == ':' &&
	    strcasecmp(b + 25, " GMT") == 0)
		return mk(num(b + 12, 4), month(b + 8), num(b + 5, 2),
		    num(b + 17, 2), num(b + 20, 2), num(b + 23, 2));
	/* asctime: "Sun Nov  6 08:49:37 1994" */
	if (n == 24 && b[3] == ' ' && b[7] == ' ' && b[10] == ' ' &&
	    b[13] == ':' && b[16] == ':' && b[19] == ' ') {
		int d = b[8] == ' ' ? num(b + 9, 1) : num(b + 8, 2);
		return mk(num(b + 20, 4), month(b + 4), d, num(b + 11, 2),
		    num(b + 14, 2), num(b + 17, 2));
	}
	/* rfc850: "Sunday, 06-Nov-94 08:49:37 GMT" */
	const char *c = strchr(b, ',');
	if (c != NULL && strlen(c) == 24 && c[1] == ' ' && c[4] == '-' &&
	    c[8] == '-' && c[11] == ' ' && c[14] == ':' && c[17] == ':' &&
	    strcasecmp(c + 20, " GMT") == 0) {
		int yy = num(c + 9, 2);
		if (yy < 0)
			return -1;
		/* RFC 9110 5.6.7: a two-digit year more than 50 years in
		 * the future is in the past century; 1970-2069 covers it */
		return mk(yy < 70 ? 2000 + yy : 1900 + yy, month(c + 5),
		    num(c + 2, 2), num(c + 12, 2), num(c + 15, 2),
		    num(c + 18, 2));
	}
	return -1;
}

void
http_date_format(time_t t, char *buf)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	/* strftime's %a and %b follow the locale; HTTP dates must not */
	memcpy(buf, wdays[tm.tm_wday % 7], 3);
	memcpy(buf + 3, ", ", 2);
	buf[5] = (char)('0' + tm.tm_mday / 10);
	buf[6] = (char)('0' + tm.tm_mday % 10);
	buf[7] = ' ';
	memcpy(buf + 8, months[tm.tm_mon % 12], 3);
	strftime(buf + 11, 19, " %Y %H:%M:%S GMT", &tm);
}

static time_t
date_field(const struct http_head *h, const char *name)
{
	const struct http_field *f = http_field_find(h, name);

	return f ? http_date_parse(f->value, f->vlen) : -1;
}

/* ---- storing ---- */

const struct cachectl_heuristic cachectl_heuristic_default = {
	.min = 0, .max = 86400, .percent = 10,
};

bool
cachectl_heuristic_status(int status)
{
	switch (status) {
	case 200: case 203: case 204: case 300: case 301: case 308:
	case 404: case 405: case 410: case 414: case 501:
		return true;
	default:
		return false;
	}
}

/*
 * Statuses whose caching requirements we implement, for must-understand
 * (RFC 9111 5.2.2.3): the heuristically cacheable ones, the redirects and
 * the errors that carry nothing but their freshness. 206 and 304 are
 * never stored as they are: a part, and an answer about another response.
 */
static bool
understood_status(int status)
{
	switch (status) {
	case 302: case 303: case 307:
	case 400: case 403: case 500: case 502: case 503: case 504:
		return true;
	default:
		return cachectl_heuristic_status(status);
	}
}

bool
cachectl_storable(const struct http_head *req, const struct cc *reqcc,
    const struct http_head *resp, const struct cc *respcc,
    const struct cachectl_heuristic *heur, const char **why)
{
	bool explicit_fresh = respcc->s_maxage != CC_ABSENT ||
	    respcc->max_age != CC_ABSENT ||
	    http_field_find(resp, "expires") != NULL;
	bool validators = http_field_find(resp, "etag") != NULL ||
	    http_field_find(resp, "last-modified") != NULL;

	/* any final status may be stored (RFC 9111 3), unless the origin
	 * asks that only a cache that understands it does */
	if (resp->status < 200 || resp->status == 206 || resp->status == 304) {
		*why = "status not cacheable";
		return false;
	}
	if (respcc->must_understand && !understood_status(resp->status)) {
		*why = "must-understand: status not understood";
		return false;
	}
	/* must-understand comes with no-store for caches that do not
	 * implement it; one that understands the status ignores it */
	if (reqcc->no_store || (respcc->no_store && !respcc->must_understand)) {
		*why = "no-store";
		return false;
	}
	if (respcc->private_) {
		*why = "private";
		return false;
	}
	if (http_field_find(req, "authorization") != NULL &&
	    !respcc->public_ && respcc->s_maxage == CC_ABSENT &&
	    !respcc->must_revalidate) {
		*why = "authorized request";
		return false;
	}
	for (unsigned i = 0; i < resp->nfields; i++) {
		const struct http_field *f = &resp->fields[i];
		if (http_field_is(f, "vary")) {
			const char *e;
			size_t el, pos = 0;
			while (http_list_next(f->value, f->vlen, &pos, &e, &el))
				if (el == 1 && e[0] == '*') {
					*why = "Vary: *";
					return false;
				}
		}
	}
	if (http_field_find(resp, "set-cookie") != NULL &&
	    !respcc->public_ && respcc->s_maxage == CC_ABSENT) {
		*why = "Set-Cookie";
		return false;
	}
	if (!explicit_fresh && !cachectl_heuristic_status(resp->status)) {
		*why = "status needs explicit freshness";
		return false;
	}
	if (!explicit_fresh && !validators && !respcc->public_ &&
	    heur->min == 0) {
		*why = "no freshness and no validator";
		return false;
	}
	return true;
}

int64_t
cachectl_lifetime(const struct http_head *resp, const struct cc *respcc,
    const struct cachectl_heuristic *heur, time_t response_time)
{
	if (respcc->no_cache)
		return 0;
	if (respcc->s_maxage != CC_ABSENT)
		return respcc->s_maxage;
	if (respcc->max_age != CC_ABSENT)
		return respcc->max_age;
	time_t date = date_field(resp, "date");
	if (date < 0)
		date = response_time;
	if (http_field_find(resp, "expires") != NULL) {
		/* an invalid Expires, such as "0", means already expired */
		time_t exp = date_field(resp, "expires");
		return exp > date ? (int64_t)(exp - date) : 0;
	}
	if (!cachectl_heuristic_status(resp->status))
		return 0;
	/* Squid's order: the percentage of the Last-Modified age, raised to
	 * min, then cut to max */
	time_t lm = date_field(resp, "last-modified");
	int64_t h = 0;
	if (lm >= 0 && lm < date)
		h = (int64_t)(date - lm) / 100 * heur->percent +
		    (int64_t)(date - lm) % 100 * heur->percent / 100;
	if (h < heur->min)
		h = heur->min;
	return h > heur->max ? heur->max : h;
}

int64_t
cachectl_initial_age(const struct http_head *resp, time_t request_time,
    time_t response_time)
{
	const struct http_field *af = http_field_find(resp, "age");
	int64_t age_value = 0;
	time_t date = date_field(resp, "date");
	int64_t apparent = 0;

	if (af != NULL) {
		/* a list: its first member counts, and one that is not a
		 * non-negative integer (a decimal, a sign, text, quotes) is
		 * ignored, as if the field were absent (RFC 9111 5.1) */
		const char *e = NULL;
		size_t el = 0, pos = 0;
		http_list_next(af->value, af->vlen, &pos, &e, &el);
		age_value = e != NULL && el > 0 && e[0] != '"' ?
		    delta_seconds(e, el) : CC_ABSENT;
		if (age_value == CC_ABSENT)
			age_value = 0;
	}
	if (date >= 0 && response_time > date)
		apparent = (int64_t)(response_time - date);
	int64_t corrected = age_value + (int64_t)(response_time - request_time);
	return apparent > corrected ? apparent : corrected;
}

enum cachectl_verdict
cachectl_judge(const struct cachectl_entry *e, const struct cc *reqcc)
{
	if (reqcc->no_cache || e->no_cache)
		return CACHECTL_REVALIDATE;
	if (reqcc->max_age != CC_ABSENT && e->age > reqcc->max_age)
		return CACHECTL_REVALIDATE;
	int64_t left = e->lifetime - e->age;
	int64_t need = reqcc->min_fresh != CC_ABSENT ? reqcc->min_fresh : 0;
	if (left > 0 && left >= need)
		return CACHECTL_FRESH;
	/* stale: only max-stale lets us serve it, never past must-revalidate */
	if (left <= 0 && !e->must_revalidate &&
	    reqcc->max_stale != CC_ABSENT && -left <= reqcc->max_stale)
		return CACHECTL_STALE_OK;
	/* RFC 5861 3: within the window, the stale copy now and a
	 * revalidation behind it; a request min-fresh wants fresh */
	if (left <= 0 && !e->must_revalidate && e->swr > 0 &&
	    -left <= e->swr && reqcc->min_fresh == CC_ABSENT)
		return CACHECTL_STALE_REVALIDATE;
	return CACHECTL_REVALIDATE;
}

void
cachectl_entry_stale_rules(struct cachectl_entry *e, const struct cc *cc)
{
	e->swr = cc->stale_while_revalidate;
	e->sie = cc->stale_if_error;
	e->must_revalidate = e->must_revalidate || cc->must_revalidate ||
	    cc->s_maxage != CC_ABSENT;
	e->no_cache = e->no_cache || cc->no_cache;
}

bool
cachectl_stale_on_error(const struct cachectl_entry *e,
    const struct cc *reqcc, bool disconnected)
{
	if (e->must_revalidate || e->no_cache)
		return false;
	if (disconnected)
		return true;
	int64_t stale_for = e->age - e->lifetime;
	int64_t window = e->sie;
	if (reqcc->stale_if_error != CC_ABSENT &&
	    reqcc->stale_if_error > window)
		window = reqcc->stale_if_error;
	return window > 0 && stale_for <= window;
}

/* ---- secondary keys ---- */

/*
 * RFC 9111 4.1 lets a cache compare selecting fields after removing what
 * their syntax makes meaningless. Every field's value is read as a list
 * (elements trimmed, lines and elements joined by one comma): fields a
 * cache varies on are lists in practice, and two values that differ only
 * in spaces after commas select alike. Accept-Encoding, Accept-Charset and
 * Accept-Language go further: their elements are case-insensitive and the
 * preference is their weight (RFC 9110 12.4.2), so case, inner spaces and
 * a "q=1" spelt or implied fall away and the elements are sorted by weight,
 * then by name, as http-tests' cache-tests read it.
 */
#define VARY_ELEMS_MAX 32

static bool
vary_weighted(const char *name, size_t nl)
{
	return http_token_eq(name, nl, "accept-language") ||
	    http_token_eq(name, nl, "accept-encoding") ||
	    http_token_eq(name, nl, "accept-charset");
}

struct vary_elem {
	char text[64];  /* lower case, no spaces, q left out */
	unsigned len;
	int q;          /* thousandths */
};

/* A weight "0", "0.5", "1.000" in thousandths; -1 if malformed. */
static int
qvalue(const char *s, size_t n)
{
	int q, scale = 1000;

	if (n == 0 || (s[0] != '0' && s[0] != '1'))
		return -1;
	q = (s[0] - '0') * 1000;
	if (n == 1)
		return q;
	if (s[1] != '.' || n > 5)
		return -1;
	for (size_t i = 2; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		scale /= 10;
		q += (s[i] - '0') * scale;
	}
	return q > 1000 ? -1 : q;
}

/* e's normal form into v; false for what it cannot read (a quoted string,
 * a malformed weight, an element too long), which then keeps its list
 * form. */
static bool
vary_elem_read(const char *e, size_t el, struct vary_elem *v)
{
	v->len = 0;
	v->q = 1000;
	for (size_t i = 0; i < el; i++) {
		char ch = e[i];
		if (ch == '"' || v->len + 1 >= sizeof(v->text))
			return false;
		if (ch == ' ' || ch == '\t')
			continue;
		v->text[v->len++] = ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
	}
	v->text[v->len] = '\0';
	/* the weight, the last parameter by the grammar of all three */
	char *semi = strrchr(v->text, ';');
	if (semi != NULL && semi[1] == 'q' && semi[2] == '=') {
		v->q = qvalue(semi + 3, strlen(semi + 3));
		if (v->q < 0)
			return false;
		*semi = '\0';
		v->len = (unsigned)(semi - v->text);
	}
	return true;
}

static int
vary_elem_cmp(const void *a, const void *b)
{
	const struct vary_elem *x = a, *y = b;

	return x->q != y->q ? y->q - x->q : strcmp(x->text, y->text);
}

/* Appends n bytes of p to out[*len..cap); false when they do not fit. */
static bool
put(char *out, size_t cap, size_t *len, const char *p, size_t n)
{
	if (*len + n > cap)
		return false;
	memcpy(out + *len, p, n);
	*len += n;
	return true;
}

/* The next element of the field called name in req, across its lines:
 * *line and *pos start at 0. */
static bool
field_elem_next(const struct http_head *req, const char *name, size_t nl,
    unsigned *line, size_t *pos, const char **e, size_t *el)
{
	for (; *line < req->nfields; (*line)++, *pos = 0) {
		const struct http_field *f = &req->fields[*line];
		if (f->nlen == nl && strncasecmp(f->name, name, nl) == 0 &&
		    http_list_next(f->value, f->vlen, pos, e, el))
			return true;
	}
	return false;
}

/* The weighted field called name in req, from all its lines, in normal
 * form, appended to out; false when it cannot be had. */
static bool
vary_weighted_form(const struct http_head *req, const char *name, size_t nl,
    char *out, size_t cap, size_t *len)
{
	struct vary_elem v[VARY_ELEMS_MAX];
	unsigned n = 0, line = 0;
	size_t el, pos = 0;
	const char *e;

	while (field_elem_next(req, name, nl, &line, &pos, &e, &el)) {
		if (n == VARY_ELEMS_MAX || !vary_elem_read(e, el, &v[n]))
			return false;
		n++;
	}
	qsort(v, n, sizeof(v[0]), vary_elem_cmp);
	for (unsigned i = 0; i < n; i++) {
		char q[16] = "";
		if (v[i].q != 1000) {
			/* shortest form: 0.5, 0.05, 0 */
			int w = snprintf(q, sizeof(q), ";q=0.%03d", v[i].q);
			while (q[w - 1] == '0' && q[w - 2] != '=')
				q[--w] = '\0';
			if (q[w - 1] == '.')
				q[--w] = '\0';
		}
		if ((i > 0 && !put(out, cap, len, ",", 1)) ||
		    !put(out, cap, len, v[i].text, v[i].len) ||
		    !put(out, cap, len, q, strlen(q)))
			return false;
	}
	return true;
}

/* Any field called name in req as a list: its elements, trimmed, joined
 * by one comma across its lines. */
static bool
vary_list_form(const struct http_head *req, const char *name, size_t nl,
    char *out, size_t cap, size_t *len)
{
	unsigned line = 0;
	size_t el, pos = 0;
	const char *e;

	for (bool first = true; field_elem_next(req, name, nl, &line, &pos, &e,
	    &el); first = false)
		if ((!first && !put(out, cap, len, ",", 1)) ||
		    !put(out, cap, len, e, el))
			return false;
	return true;
}

bool
cachectl_varykey(const struct http_head *req, const char *v, size_t vlen,
    char *out, size_t cap, size_t *len)
{
	const char *name;
	size_t nl, pos = 0;

	while (http_list_next(v, vlen, &pos, &name, &nl)) {
		if (*len + nl + 1 > cap)
			return false;
		for (size_t i = 0; i < nl; i++) {
			char ch = name[i];
			out[(*len)++] = ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
		}
		out[(*len)++] = ':';
		size_t at = *len;
		if (!vary_weighted(name, nl) ||
		    !vary_weighted_form(req, name, nl, out, cap, len)) {
			*len = at;
			if (!vary_list_form(req, name, nl, out, cap, len))
				return false;
		}
		if (!put(out, cap, len, "\n", 1))
			return false;
	}
	return true;
}

/* Weak comparison (RFC 9110 8.8.3.2): W/ prefixes do not matter. */
static bool
etag_weak_eq(const char *a, size_t al, const char *b, size_t bl)
{
	if (al >= 2 && a[0] == 'W' && a[1] == '/') {
		a += 2;
		al -= 2;
	}
	if (bl >= 2 && b[0] == 'W' && b[1] == '/') {
		b += 2;
		bl -= 2;
	}
	return al == bl && al >= 2 && memcmp(a, b, al) == 0;
}

bool
cachectl_not_modified(const struct http_head *req, const char *etag,
    size_t elen, time_t last_modified)
{
	bool has_inm = false;

	for (unsigned i = 0; i < req->nfields; i++) {
		const struct http_field *f = &req->fields[i];
		const char *e;
		size_t el, pos = 0;

		if (!http_field_is(f, "if-none-match"))
			continue;
		has_inm = true;
		while (http_list_next(f->value, f->vlen, &pos, &e, &el)) {
			if (el == 1 && e[0] == '*')
				return true;
			if (etag != NULL && etag_weak_eq(e, el, etag, elen))
				return true;
		}
	}
	if (has_inm)
		return false;
	const struct http_field *ims = http_field_find(req, "if-modified-since");
	if (ims == NULL || last_modified < 0)
		return false;
	time_t t = http_date_parse(ims->value, ims->vlen);
	return t >= 0 && last_modified <= t;
}
