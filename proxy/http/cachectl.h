/*
 * RFC 9111 rules for a shared cache: what may be stored, for how long it is
 * fresh, how old a stored response is, and what a request will accept.
 * Pure functions over parsed heads; the store and the proxy call them.
 */
#ifndef CACHECTL_H
#define CACHECTL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "http_parse.h"

#define CC_ABSENT (-1)

/* Cache-Control directives of one message (all its Cache-Control fields). */
struct cc {
	bool no_store;
	bool no_cache;       /* unqualified, or Pragma: no-cache in a request */
	bool private_;       /* unqualified private */
	bool public_;
	bool must_revalidate; /* must-revalidate or proxy-revalidate */
	bool only_if_cached;
	bool must_understand; /* store only a status we understand */
	int64_t max_age;   /* seconds, or CC_ABSENT */
	int64_t s_maxage;
	int64_t max_stale; /* INT64_MAX for a bare max-stale */
	int64_t min_fresh;
	int64_t stale_while_revalidate; /* RFC 5861, responses */
	int64_t stale_if_error;         /* RFC 5861, either */
};

void cc_parse(const struct http_head *h, bool is_request, struct cc *cc);
/* The same one field value at a time: cc_init, then cc_parse_value for
 * each Cache-Control value (a stored head's, say). */
void cc_init(struct cc *cc);
void cc_parse_value(struct cc *cc, const char *v, size_t vlen,
    bool is_request);

/* HTTP-date in any of the three RFC 9110 forms; -1 when invalid. */
time_t http_date_parse(const char *s, size_t n);
/* IMF-fixdate into buf (at least 30 bytes). */
void http_date_format(time_t t, char *buf);

/*
 * Heuristic freshness, for a response the origin gave no explicit
 * freshness (RFC 9111 4.2.2): percent of the time since Last-Modified,
 * never less than min nor more than max seconds; without Last-Modified,
 * min. Squid's refresh_pattern rule (refresh.c picks one by URL).
 */
struct cachectl_heuristic {
	int64_t min;
	int64_t max;
	unsigned percent;
};

/* Where no rule applies: 10 % of the Last-Modified age, at most a day. */
extern const struct cachectl_heuristic cachectl_heuristic_default;

/*
 * Whether a response to a GET may be stored by a shared cache, heur being
 * the heuristic its URL gets. Returns true, or false with *why naming the
 * rule that forbids it (for the log).
 */
bool cachectl_storable(const struct http_head *req, const struct cc *reqcc,
    const struct http_head *resp, const struct cc *respcc,
    const struct cachectl_heuristic *heur, const char **why);

/* Freshness lifetime in seconds (RFC 9111 4.2.1), heur's where the
 * response has no explicit freshness; response_time stands in for a
 * missing Date. */
int64_t cachectl_lifetime(const struct http_head *resp,
    const struct cc *respcc, const struct cachectl_heuristic *heur,
    time_t response_time);

/* corrected_initial_age (RFC 9111 4.2.3). Of an Age list, the first
 * member counts; one that is not a non-negative integer is ignored, as
 * if the field were absent (RFC 9111 5.1: "a cache SHOULD ignore the
 * field"). */
int64_t cachectl_initial_age(const struct http_head *resp,
    time_t request_time, time_t response_time);

/* What a request will accept from a stored response. */
enum cachectl_verdict {
	CACHECTL_FRESH = 1,      /* serve it */
	CACHECTL_STALE_OK = 2,   /* stale, but max-stale allows it */
	CACHECTL_REVALIDATE = 3, /* ask the origin first */
	CACHECTL_STALE_REVALIDATE = 4, /* serve it, revalidate meanwhile */
};

struct cachectl_entry {
	int64_t lifetime;
	int64_t age;          /* current age now */
	bool must_revalidate; /* response must-revalidate/proxy-revalidate,
	                       * or s-maxage (which implies it, 5.2.2.10) */
	bool no_cache;        /* response no-cache: always revalidate */
	/* the response's stale-while-revalidate and stale-if-error, in
	 * seconds; 0 or CC_ABSENT: none (read only for a stale entry) */
	int64_t swr;
	int64_t sie;
};

/* The stale windows and the s-maxage of a stored response's Cache-Control
 * values, parsed into e (whose other fields the caller set). */
void cachectl_entry_stale_rules(struct cachectl_entry *e, const struct cc *cc);

enum cachectl_verdict cachectl_judge(const struct cachectl_entry *e,
    const struct cc *reqcc);

/*
 * Whether a stale entry may answer in place of an error (RFC 9111 4.2.4,
 * RFC 5861 4): never past must-revalidate, proxy-revalidate, s-maxage or
 * no-cache; then always when the origin could not be reached at all
 * (disconnected), else within the response's or the request's
 * stale-if-error.
 */
bool cachectl_stale_on_error(const struct cachectl_entry *e,
    const struct cc *reqcc, bool disconnected);

/* Statuses a cache may store without explicit freshness (RFC 9110 15.1). */
bool cachectl_heuristic_status(int status);

/*
 * Secondary cache key (RFC 9111 4.1): for each field name in the Vary value
 * v, appends "name:values\n" of req to out[*len..cap), the values in the
 * normal form two requests are compared in (cachectl.c). Returns false when
 * it does not fit.
 */
bool cachectl_varykey(const struct http_head *req, const char *v,
    size_t vlen, char *out, size_t cap, size_t *len);

/*
 * Whether req's If-None-Match (or, without it, If-Modified-Since) is
 * satisfied by a response with this ETag (may be NULL) and Last-Modified
 * (-1 if none): the client gets 304.
 */
bool cachectl_not_modified(const struct http_head *req, const char *etag,
    size_t elen, time_t last_modified);

#endif
