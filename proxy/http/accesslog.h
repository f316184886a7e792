/* Access log in Squid's native format, so existing log tools read it. */
#ifndef ACCESSLOG_H
#define ACCESSLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

struct accesslog;

/* Squid's result codes (the CODE of CODE/status), one name each. A
 * response that did not reach its end is logged with a suffix after its
 * code, as Squid logs it: accesslog_entry.cut. */
/* X(code, its Cache-Status parameters, RFC 9211) */
#define SQUID_CODES(X)                                                         \
	/* from the origin or a peer */                                       \
	X(TCP_MISS, "fwd=uri-miss")                                           \
	/* fresh, from the memory cache */                                    \
	X(TCP_MEM_HIT, "hit")                                                 \
	/* fresh, read from the disk cache */                                 \
	X(TCP_HIT, "hit")                                                     \
	/* the client's conditional matched: 304 */                           \
	X(TCP_IMS_HIT, "hit")                                                 \
	/* collapsed onto a fetch in progress */                              \
	X(TCP_CF_HIT, "fwd=uri-miss; collapsed")                              \
	/* stale but allowed (max-stale, stale-while-revalidate) */           \
	X(TCP_STALE_HIT, "hit; detail=stale")                                 \
	/* revalidated: 304 from upstream */                                  \
	X(TCP_REFRESH_UNMODIFIED, "fwd=stale; fwd-status=304")                \
	/* revalidated: a new copy */                                         \
	X(TCP_REFRESH_MODIFIED, "fwd=stale")                                  \
	/* revalidation failed, stale served */                               \
	X(TCP_REFRESH_FAIL_OLD, "fwd=stale; detail=stale-on-error")           \
	/* the client's no-cache: to the origin */                            \
	X(TCP_CLIENT_REFRESH_MISS, "fwd=request")                             \
	/* CONNECT */                                                         \
	X(TCP_TUNNEL, "fwd=method")                                           \
	/* the allow lists refused it */                                      \
	X(TCP_DENIED, "detail=denied")                                        \
	/* no request to speak of: parse errors */                            \
	X(NONE_NONE, "detail=error")

enum squid_code {
#define SQUID_CODE_ENUM(name, status) SQ_##name,
	SQUID_CODES(SQUID_CODE_ENUM)
#undef SQUID_CODE_ENUM
	SQ_NCODES
};

/* Squid's hierarchy codes: who answered. */
#define SQUID_HIERS(X)                                                         \
	X(HIER_NONE)       /* nobody: a hit, or an error */                   \
	X(HIER_DIRECT)     /* the origin */                                   \
	X(SIBLING_HIT)     /* a peer found by ICP */                          \
	X(CD_SIBLING_HIT)  /* a peer found by its summary (Cache Digest) */ \
	X(CARP)            /* the key's owner (placement hash) */

enum squid_hier {
#define SQUID_HIER_ENUM(name) SQ_##name,
	SQUID_HIERS(SQUID_HIER_ENUM)
#undef SQUID_HIER_ENUM
	SQ_NHIERS
};

/* How a response that did not reach its end was cut, in Squid's words:
 * "_ABORTED" (the client left, or the source broke off: a reset, a close,
 * a disk error) or "_TIMEDOUT" (the source fell silent for its timeout:
 * origin_timeout or peer_timeout). */
enum log_cut {
	CUT_NONE = 0,
	CUT_ABORTED = 1,
	CUT_TIMEDOUT = 2,
};

const char *squid_code_name(enum squid_code c);
/* The Cache-Status parameters (RFC 9211) of a response so answered. */
const char *squid_code_cache_status(enum squid_code c);
const char *squid_hier_name(enum squid_hier h);

struct accesslog_entry {
	struct timeval start;
	struct timeval end;
	const char *client;  /* address text */
	enum squid_code code;
	enum log_cut cut;    /* cut short: CODE_ABORTED, CODE_TIMEDOUT */
	int status;
	uint64_t bytes;      /* sent to the client, head included */
	const char *method;
	int method_len;
	const char *url;
	enum squid_hier hier;
	const char *hier_host; /* "-" when none */
	const char *content_type;
	int content_type_len;
};

/* Opens path ("stdout", "none", or a file appended to). NULL on error with
 * errno set. One per node: workers write it through buffers of their own. */
struct accesslog *accesslog_open(const char *path);

/* A worker's lines not yet written (accesslog.c says why). */
struct accesslog_buf;
struct accesslog_buf *accesslog_buf_new(void);
/* Flush it first. Accepts NULL; clears *b. */
void accesslog_buf_free(struct accesslog_buf **b);

/* Formats e's line into b, writing b's lines to l first when it lacks
 * room. Any worker, each with its own b. */
void accesslog_write(struct accesslog *l, struct accesslog_buf *b,
    const struct accesslog_entry *e);
/* Writes b's lines, whole, in one write; from a timer and at exit. */
void accesslog_flush(struct accesslog *l, struct accesslog_buf *b);
/* Reopens the file (SIGHUP, after rotation); -1 keeps the old one. Only
 * while no worker writes (a reload stops them all). */
int accesslog_reopen(struct accesslog *l);
void accesslog_close(struct accesslog **l);

#endif
