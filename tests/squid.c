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
	char conf[400], out[400];

	memset(s, 0, sizeof(*s));
	snprintf(s->dir, sizeof(s->dir), "%s/squid", scratch);
	mkdir(s->dir, 0755);
	give_to_proxy_user(s->dir);
	snprintf(s->access_log, sizeof(s->access_log), "%s/access.log",
	    s->dir);
	s->port = harness_free_port();
	snprintf(conf, sizeof(conf), "%s/squid.conf", s->dir);
	FILE *f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
	    "http_port 127.0.0.1:%d\n"
	    "icp_port 0\n"
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
	    "http_access allow localhost\n"
	    "http_access deny all\n"
	    "%s\n",
	    s->port, s->dir, s->dir, s->access_log, s->dir, s->dir,
	    extra ? extra : "");
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
	cr_assert(harness_wait_port(s->port, 20000),
	    "squid did not start; see %s/cache.log", s->dir);
}

void
squid_stop(struct squid *s)
{
	if (s->pid > 0)
		harness_stop(s->pid, SIGTERM, 10000);
	s->pid = 0;
}
