/*
 * A real Squid for interoperability tests: its own configuration, cache
 * directory and logs under a scratch directory, listening on loopback
 * only, run in the foreground (-N) so it is stopped by PID.
 */
#ifndef SQUID_H
#define SQUID_H

#include <stdbool.h>
#include <sys/types.h>

struct squid {
	pid_t pid;
	char host[16];
	int port;
	int icp_port;   /* 0: ICP off */
	char dir[300];
	char access_log[340];
};

/* Starts Squid on a free loopback port with a small ufs cache_dir (Squid
 * builds a Cache Digest only with a disk store). extra is appended to
 * the configuration, one directive per line. */
void squid_start(struct squid *s, const char *scratch, const char *extra);
/* The same on host (an IPv4 loopback address), with ICP on a free port
 * when icp is set. Squid ignores ICP from its own address, so a Squid
 * that peers with sumcache over ICP runs on 127.0.0.2. Every loopback
 * address may use it (HTTP and ICP). */
void squid_start_at(struct squid *s, const char *scratch, const char *host,
    bool icp, const char *extra);
/* Picks the ports squid_start_at will use, for a peer that must know
 * them before Squid starts (s zeroed before the first call). */
void squid_ports(struct squid *s, const char *host, bool icp);
void squid_stop(struct squid *s);

#endif
