/*
 * A real Squid for interoperability tests: its own configuration, cache
 * directory and logs under a scratch directory, listening on loopback
 * only, run in the foreground (-N) so it is stopped by PID.
 */
#ifndef SQUID_H
#define SQUID_H

#include <sys/types.h>

struct squid {
	pid_t pid;
	int port;
	char dir[300];
	char access_log[340];
};

/* Starts Squid on a free loopback port with a small ufs cache_dir (Squid
 * builds a Cache Digest only with a disk store). extra is appended to
 * the configuration, one directive per line. */
void squid_start(struct squid *s, const char *scratch, const char *extra);
void squid_stop(struct squid *s);

#endif
