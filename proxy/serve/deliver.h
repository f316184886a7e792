/* Writing answers to the client (deliver.c). */
#ifndef DELIVER_H
#define DELIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "accesslog.h"
#include "proxy.h"
#include "store.h"

/* Writes a short text error response; close forces Connection: close. */
void deliver_error(struct txn *t, int status, enum squid_code code,
    const char *cause, bool close);
/* The same for any short text answer, text as given, counted as result;
 * finishes t. */
void deliver_text(struct txn *t, int status, enum squid_code code,
    enum txn_result result, const char *text, bool close);
/* A 405 error for cause, with the Allow field RFC 9110 15.5.6 asks
 * (allow: the methods, comma-separated). */
void deliver_not_allowed(struct txn *t, const char *allow,
    const char *cause);

/* Answers from a stored object (304 when the client's conditionals
 * match); code is the access-log code. Finishes the transaction. */
void deliver_object(struct txn *t, struct store_obj *o,
    enum squid_code code);

/*
 * Writes the head of o's answer to t (304 when t's conditionals match),
 * x_cache saying what it was, length the body's length (o's body may
 * still be filling; -1: not known yet, framed as the writer sees fit);
 * sets t's status and code (result is the caller's). Returns whether the
 * body follows: not for HEAD, 304 or 204.
 */
bool deliver_head(struct txn *t, const struct store_obj *o,
    enum squid_code code, const char *x_cache, int64_t length);

/* Writes t's 416 for a representation of length bytes: none of the
 * object's fields, so that a cache downstream cannot take it for the
 * object. */
void deliver_unsatisfiable(struct txn *t, uint64_t length,
    const char *x_cache);

/* Notes the answer's Content-Type, len bytes at v, for the access log
 * (cut to t->ctype's size). */
void deliver_note_ctype(struct txn *t, const char *v, size_t len);

#endif
