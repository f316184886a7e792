/*
 * See squid.h. Squid drops root privileges to its cache_effective_user
 * ("proxy" on Debian), so the scratch tree is handed to that user.
 */
#include "squid.h"

#include <criterion/criterion.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define SQUID_BIN "/usr/sbin/squid"

static void
give_to_proxy_user(const char *path)
{
	struct passwd *pw = getpwnam("proxy");

	if (geteuid() == 0 && pw != NULL)
		cr_assert(chown(path, pw->pw_uid, pw->pw_gid) == 0, "chown %s",
		    path);
}

void
squid_start(struct squid *s, const char *scratch, const char *extra)
{
	squid_start_at(s, scratch, "127.0.0.1", false, extra);
}

void
squid_ports(struct squid *s, const char *host, bool icp)
{
	if (s->port != 0)
		return;
	memset(s, 0, sizeof(*s));
	snprintf(s->host, sizeof(s->host), "%s", host);
	s->port = harness_free_port();
	if (icp)
		s->icp_port = harness_free_port();
}

void
squid_start_at(struct squid *s, const char *scratch, const char *host,
    bool icp, const char *extra)
{
	char conf[400], out[400];

	squid_ports(s, host, icp);
	snprintf(s->dir, sizeof(s->dir), "%s/squid", scratch);
	mkdir(s->dir, 0755);
	give_to_proxy_user(s->dir);
	snprintf(s->access_log, sizeof(s->access_log), "%s/access.log",
	    s->dir);
	snprintf(conf, sizeof(conf), "%s/squid.conf", s->dir);
	FILE *f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
	    "http_port %s:%d\n"
	    "icp_port %d\n"
	    "udp_incoming_address %s\n"
	    "htcp_port 0\n"
	    "visible_hostname squid-test\n"
	    "cache_dir ufs %s/cache 16 4 4\n"
	    "cache_mem 8 MB\n"
	    "pid_filename %s/squid.pid\n"
	    "access_log stdio:%s squid\n"
	    "cache_log %s/cache.log\n"
	    "cache_store_log none\n"
	    "coredump_dir %s\n"
	    "strip_query_terms off\n"
	    "shutdown_lifetime 1 seconds\n"
	    /* the origin's round trip (1 ms on loopback, in Squid's
	     * network database) would send every request direct without
	     * asking a sibling */
	    "pinger_enable off\n"
	    "minimum_direct_rtt 0\n"
	    "minimum_direct_hops 0\n"
	    "acl lo src 127.0.0.0/8\n"
	    "http_access allow lo\n"
	    "http_access deny all\n"
	    "icp_access allow lo\n"
	    "icp_access deny all\n"
	    "%s\n",
	    s->host, s->port, s->icp_port, s->host, s->dir, s->dir,
	    s->access_log, s->dir, s->dir, extra ? extra : "");
	fclose(f);

	/* -z creates the cache directories and exits */
	snprintf(out, sizeof(out), "%s/squid-z.out", s->dir);
	char *zargv[] = {SQUID_BIN, "-N", "-z", "-f", conf, NULL};
	pid_t z = harness_spawn(zargv, out);
	int st;
	cr_assert(waitpid(z, &st, 0) == z && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0, "squid -z failed; see %s", out);

	snprintf(out, sizeof(out), "%s/squid.out", s->dir);
	char *argv[] = {SQUID_BIN, "-N", "-f", conf, NULL};
	s->pid = harness_spawn(argv, out);
	cr_assert(harness_wait_addr(s->host, s->port, 20000),
	    "squid did not start; see %s/cache.log", s->dir);
}

void
squid_stop(struct squid *s)
{
	if (s->pid > 0)
		harness_stop(s->pid, SIGTERM, 10000);
	s->pid = 0;
}
