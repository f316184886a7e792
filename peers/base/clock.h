/*
 * Time, as every layer that runs on the event loop reads it: the
 * monotonic clock for intervals and deadlines, the wall clock for
 * summary epochs (microseconds) and the publisher (milliseconds), and the
 * struct timeval libevent wants for a delay in milliseconds.
 */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

static inline uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static inline uint64_t
mono_ms(void)
{
	return mono_us() / 1000;
}

static inline uint64_t
wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The publisher's one clock (summary/publisher.h): expiry times are wall
 * times, and a timed summary's deadlines are reckoned from them. */
static inline uint64_t
wall_ms(void)
{
	return wall_us() / 1000;
}

static inline struct timeval
tv_ms(uint64_t ms)
{
	return (struct timeval){.tv_sec = (time_t)(ms / 1000),
	    .tv_usec = (suseconds_t)(ms % 1000) * 1000};
}

#endif
