/*
 * sumcache: the command line. Reads the configuration (a file, then -o
 * overrides, checked with its file and line), answers -t, --policy and
 * --metrics-list, and otherwise runs the node (server.c) until it has
 * drained.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/thread.h>

#include "accept.h"
#include "budget.h"
#include "ca.h"
#include "cert.h"
#include "hostpat.h"
#include "manual.h"
#include "metric.h"
#include "peers.h"
#include "reload.h"
#include "server.h"

#ifndef SUMCACHE_VERSION
#define SUMCACHE_VERSION "0.1.0"
#endif

#ifndef SUMCACHE_DATE
#define SUMCACHE_DATE "2026-01-01"
#endif

static void
usage(FILE *f)
{
	manual_usage(f);
	conf_print_help(f);
}

/* --man PAGE: the manual the build installs, written from the tables */
static int
man(const char *page)
{
	if (strcmp(page, "sumcache.8") == 0)
		manual_sumcache(stdout, SUMCACHE_VERSION, SUMCACHE_DATE);
	else if (strcmp(page, "sumcache.conf.5") == 0)
		manual_conf(stdout, SUMCACHE_VERSION, SUMCACHE_DATE);
	else {
		fprintf(stderr, "sumcache: --man %s: the pages are sumcache.8 "
		    "and sumcache.conf.5\n", page);
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}

/* --make-ca DIR [--for PATTERN]...: the CA is named for this host, so a
 * client's trust store tells one cluster's CA from another's; with
 * --for, it may sign for those hosts only. */
static int
make_ca(const char *dir, const struct hostpats *permit)
{
	char host[256] = "localhost", err[1024];

	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	if (ca_make(dir, host, permit, err, sizeof(err)) < 0) {
		fprintf(stderr, "sumcache: --make-ca: %s\n", err);
		return 1;
	}
	printf("sumcache: wrote %s/%s and %s/%s (mode 0600): name them in "
	    "tls_ca_cert and tls_ca_key (proxy/README.md: HTTPS)\n", dir,
	    CA_CERT_FILE, dir, CA_KEY_FILE);
	if (permit->n == 0)
		printf("sumcache: this CA may sign for any host: whoever reads "
		    "%s/%s can pass for any site to every client that trusts "
		    "it; --for PATTERN limits it to the hosts you intercept\n",
		    dir, CA_KEY_FILE);
	for (unsigned i = 0; i < permit->n; i++) {
		/* what X.509 can say of a name: it and every name below */
		const char *p = permit->p[i];
		const char *name = strncmp(p, "*.", 2) == 0 ? p + 2 : p;
		bool addr = cert_host_is_ip(name);
		printf("sumcache: it may sign for %s%s%s\n", addr ?
		    "the address " : "", name, addr ? "" :
		    " and every name below it");
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"policy", no_argument, NULL, 'P'},
		{"metrics-list", no_argument, NULL, 'M'},
		{"make-ca", required_argument, NULL, 'A'},
		{"for", required_argument, NULL, 'F'},
		{"man", required_argument, NULL, 'm'},
		{NULL, 0, NULL, 0},
	};
	struct node s;
	struct hostpats permit = {0};
	const char *file = NULL, *make_ca_dir = NULL, *why;
	char **ovr = calloc((size_t)argc, sizeof(*ovr));
	int novr = 0, check = 0, policy = 0, opt, rc = 1;

	memset(&s, 0, sizeof(s));
	if (ovr == NULL)
		return 1;
	while ((opt = getopt_long(argc, argv, "c:o:thV", longopts, NULL)) !=
	    -1) {
		switch (opt) {
		case 'c': file = optarg; break;
		case 'o': ovr[novr++] = optarg; break;
		case 't': check = 1; break;
		case 'P': policy = 1; break;
		case 'M': {
			/* proxy/README.md's metric reference */
			struct evbuffer *b = evbuffer_new();
			if (b == NULL)
				return 1;
			metrics_reference(b);
			while (evbuffer_get_length(b) > 0 &&
			    evbuffer_write(b, STDOUT_FILENO) > 0)
				;
			evbuffer_free(b);
			free(ovr);
			return 0;
		}
		case 'A': make_ca_dir = optarg; break;
		case 'F':
			if (hostpat_add(&permit, optarg, &why) < 0) {
				fprintf(stderr, "sumcache: --for %s: %s\n",
				    optarg, why);
				free(ovr);
				return 2;
			}
			break;
		case 'm': free(ovr); return man(optarg);
		case 'h': usage(stdout); free(ovr); return 0;
		case 'V':
			printf("sumcache %s\n", SUMCACHE_VERSION);
			free(ovr);
			return 0;
		default: usage(stderr); free(ovr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sumcache: unexpected argument '%s'\n",
		    argv[optind]);
		free(ovr);
		return 2;
	}
	if (make_ca_dir != NULL || permit.n > 0) {
		free(ovr);
		if (make_ca_dir == NULL) {
			fprintf(stderr, "sumcache: --for goes with --make-ca "
			    "DIR\n");
			hostpat_clear(&permit);
			return 2;
		}
		rc = make_ca(make_ca_dir, &permit);
		hostpat_clear(&permit);
		return rc;
	}
	s.conf_src = (struct server_conf_src){file, ovr, novr};
	char err[1024];
	if (reload_read_conf(&s.conf, &s.conf_src, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "sumcache: %s\n", err);
		goto out;
	}
	conf_warn(&s.conf, stderr);
	unsigned workers = conf_workers(&s.conf);
	if (check) {
		printf("sumcache: configuration OK\n");
		/* the one directive a reload cannot change that is no layout
		 * of memory or disk: said here, so nobody expects a HUP to */
		printf("sumcache: workers %u%s (a change takes a restart)\n",
		    workers, s.conf.workers == 0 ?
		    " (auto: the CPUs this process may run on)" : "");
		rc = 0;
		goto out;
	}
	if (policy) {
		char line[512];
		struct pub_conf pc = server_publish_conf(&s.conf);
		peers_policy_line(&pc, s.conf.peers_asked, line, sizeof(line));
		printf("%s\n", line);
		rc = 0;
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	budget_tune_allocator();
	if (accept_plan(&s, workers) < 0)
		goto out;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		goto out;
	/* libevent's own locks, for what workers share: a file segment two
	 * workers send (the loops themselves take none: server.c) */
	if (workers > 1 && evthread_use_pthreads() < 0) {
		fprintf(stderr, "sumcache: libevent has no thread support\n");
		goto out_curl;
	}
	if (server_init(&s, workers) < 0) {
		fprintf(stderr, "sumcache: start-up failed\n");
		goto out_curl;
	}
	fprintf(stderr, "sumcache %s: node %s listening on %s (%u worker%s)\n",
	    SUMCACHE_VERSION, s.conf.node_name, s.conf.http_listen, workers,
	    workers == 1 ? "" : "s");
	rc = server_run(&s) < 0 ? 1 : 0;
	fprintf(stderr, "sumcache: stopped\n");
out_curl:
	server_fini(&s);
	curl_global_cleanup();
	free(ovr);
	return rc;
out:
	conf_clear(&s.conf);
	free(ovr);
	return rc;
}
