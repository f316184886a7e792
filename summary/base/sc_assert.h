/*
 * Assertions for programmer errors only: broken invariants inside sumcache.
 * Never use these for anything a client, an origin, a peer or a config file
 * can cause; those get an error return, a log line and a counter.
 * They are always on, in every build, because a proxy that goes on after its
 * own state is corrupt can serve one user's data to another.
 */
#ifndef SC_ASSERT_H
#define SC_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#define SC_ASSERT(cond)                                                        \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "sumcache: assertion failed: %s "     \
			    "(%s:%d, %s)\n", #cond, __FILE__, __LINE__,        \
			    __func__);                                         \
			abort();                                               \
		}                                                              \
	} while (0)

#define SC_NEVER(why) SC_ASSERT(!(why))

/*
 * An object handed through a void * (a callback's or an event's argument)
 * carries a magic number in its first field, magic, set when it is made
 * and cleared when it is freed. Where it comes back, SC_CAST checks it
 * (Varnish's CAST_OBJ_NOTNULL): a pointer to another kind of object, or
 * to one already freed, stops there instead of being used.
 *   struct fetch *f = SC_CAST(struct fetch, arg, FETCH_MAGIC);
 */
#define SC_CAST(type, from, want)                                              \
	({                                                                     \
		type *sc_cast_ = (from);                                       \
		SC_ASSERT(sc_cast_ != NULL && sc_cast_->magic == (want));      \
		sc_cast_;                                                      \
	})

#endif
