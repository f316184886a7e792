/*
 * The event loop's classes of work.
 *
 * libevent runs the ready events of one priority per turn, most urgent
 * first. Moving a body's bytes between sockets is bulk work: a thousand
 * misses streaming at once make a thousand ready events, and a turn that
 * ran them all would keep a newcomer's accept, request head and hit
 * waiting for 100 ms and more. So transfers run at LOOP_PRIO_BULK, only
 * when nothing else is ready, and the loop looks for new events after
 * every LOOP_BULK_SLICE_MS of them (server.c). What everything else
 * creates gets libevent's default, LOOP_PRIO_DEFAULT (the middle queue).
 * A bulk event is never starved for long: ready default work is one
 * accept, one head or one timer each, bounded by max_connections.
 */
#ifndef LOOP_H
#define LOOP_H

enum loop_prio {
	LOOP_PRIO_URGENT,
	LOOP_PRIO_DEFAULT, /* libevent's default for LOOP_PRIOS queues */
	LOOP_PRIO_BULK,
	LOOP_PRIOS
};

#define LOOP_BULK_SLICE_MS 5

#endif
