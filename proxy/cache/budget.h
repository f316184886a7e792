/*
 * The memory that is not the cache: bodies being copied for the store
 * while their fetch runs, and the heap's high-water mark given back after
 * large frees. See budget.c.
 */
#ifndef BUDGET_H
#define BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

struct budget_stats {
	uint64_t inflight;        /* bytes reserved by fetches being stored */
	uint64_t inflight_max;    /* inflight_mem */
	uint64_t inflight_refused; /* copies not made: the pool was full */
	uint64_t trims;           /* malloc_trim calls */
};

struct budget;

/* A budget of inflight_max bytes for in-flight copies, its timers on base,
 * whose loop reads home (NULL: no other thread calls it). NULL on
 * ENOMEM. */
struct inbox;
struct budget *budget_new(struct event_base *base, struct inbox *home,
    size_t inflight_max);
/* Accepts NULL; clears the caller's pointer. */
void budget_free(struct budget **b);

/*
 * Reserves n more bytes for a body being copied for the store. false,
 * reserving nothing and counting the refusal, when the pool cannot hold
 * them: the caller streams the response without keeping a copy.
 */
bool budget_take(struct budget *b, size_t n);
/* Gives back n reserved bytes (the copy was stored, or freed: then
 * budget_freed says so). */
void budget_give(struct budget *b, size_t n);

/*
 * n bytes of a large buffer were just freed. The allocator keeps freed
 * heap memory for reuse; after enough of it, the heap's free pages are
 * returned to the kernel (malloc_trim), so RSS follows what is in use
 * rather than its peak.
 */
void budget_freed(struct budget *b, size_t n);

/* open connections now (after one opened or closed): when a burst of
 * them is over, the heap is trimmed the same way. */
void budget_conns(struct budget *b, uint64_t open);

/* A copy, taken under the budget's lock. */
struct budget_stats budget_stats(struct budget *b);

/* Sets the allocator up for the above: blocks from this size on are
 * mapped on their own and unmapped when freed. Once, at start-up. */
#define BUDGET_MMAP_MIN (128 * 1024)
void budget_tune_allocator(void);

#endif
