/*
 * A disk tier on a real temporary directory, for the tests of disk.c and
 * diskstream.c: the events it reports counted, helpers to write objects
 * and read them back, and to reach into the files.
 */
#ifndef DISKRIG_H
#define DISKRIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <criterion/criterion.h>
#include <event2/event.h>

#include "disk.h"

struct events {
	int found, lost, unlinked, moved, stale, scanned;
	char last_lost[256];
	int expires_wrong;  /* found with another expiry than obj()'s */
};

struct rig {
	char dir[160];
	struct event_base *base;
	struct disk *d;
	struct events ev;
};

/* Runs the loop until cond holds, at most 10 s. */
#define RUN_UNTIL(g, cond) do { \
	for (int i_ = 0; i_ < 10000 && !(cond); i_++) { \
		struct timeval tv_ = {0, 1000}; \
		event_base_loopexit((g)->base, &tv_); \
		event_base_dispatch((g)->base); \
	} \
	cr_assert(cond, "never: %s (found %d, writes %llu, errors %llu, reads %llu, " \
	    "objects %llu)", #cond, (g)->ev.found, \
	    (unsigned long long)disk_stats((g)->d)->writes, \
	    (unsigned long long)disk_stats((g)->d)->write_errors, \
	    (unsigned long long)disk_stats((g)->d)->reads, \
	    (unsigned long long)disk_stats((g)->d)->objects); \
} while (0)

/* The events of a disk, counted in ev. */
struct disk_events rig_events(struct events *ev);
/* A new directory and a disk of size bytes on it, scanning. */
void rig_start(struct rig *g, uint64_t size);
/* The disk again on the same directory (after disk_close). */
void rig_open(struct rig *g, uint64_t size);
/* Closes the disk and removes the directory. */
void rig_stop(struct rig *g);

/* An object of key with body_len bytes of fill (one reference). */
struct store_obj *obj(const char *key, size_t body_len, char fill);
/* when its copies expire: received at OBJ_RESPONSE_TIME, 3 s old, fresh
 * for 600 s */
#define OBJ_RESPONSE_TIME 1700000000
#define OBJ_EXPIRES_MS ((OBJ_RESPONSE_TIME + 600ull - 3) * 1000)
/* The i-th test key, and n objects of body bytes from the from-th on,
 * filled with 'a' + i % 26, written and waited for. */
void key_of(char *buf, size_t len, int i);
void store_n(struct rig *g, int from, int n, size_t body);
/* o is the i-th object with body bytes, every byte checked. */
void check_body(struct store_obj *o, size_t body, int i);
/* The i-th object, read back from the disk, is whole: check_body. */
void check_read_back(struct rig *g, int i, size_t body);
/* Reads key back from the disk (bodies over 1 MB left in the file):
 * the object, or NULL. */
struct store_obj *read_back(struct rig *g, const char *key);
/* The same with bodies over mem_max left in the file; *at_once (may be
 * NULL) tells whether the read was done on the spot, from the page
 * cache. */
struct store_obj *read_back_as(struct rig *g, const char *key,
    size_t mem_max, bool *at_once);

/* The newest non-empty segment's path and length. */
void newest_segment(const struct rig *g, char *path, size_t len,
    off_t *size);
/* Flips the bits x of the byte at at. */
void poke(const char *path, off_t at, uint8_t x);
/* The key file of segment id. */
void keys_file(const struct rig *g, uint32_t id, char *buf, size_t len);

#endif
