/*
 * End-to-end: what a proxy must add, drop and reuse, and how it is
 * operated (config check, log reopening).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"


TestSuite(ops, .init = env_up, .fini = env_down, .timeout = 60);

Test(ops, hop_by_hop_fields_dropped_both_ways)
{
	const char *extra[] = {"Connection: X-Secret", "X-Secret: 1",
	    "Proxy-Authorization: Basic eA==", "Keep-Alive: timeout=1",
	    "TE: trailers", "Upgrade: h2c", "X-End-To-End: 1", NULL};
	struct resp r;
	char u[128];

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/headers", E.oport);
	proxy_get(&E, u, extra, &r);
	cr_assert_eq(r.status, 200);
	/* r.body is the head the origin received */
	const char *gone[] = {"X-Secret:", "Proxy-Authorization:",
	    "Keep-Alive:", "TE:", "Upgrade:", "Proxy-Connection:"};
	for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
		cr_expect(strstr(r.body, gone[i]) == NULL, "%s forwarded:\n%s",
		    gone[i], r.body);
	cr_assert(strstr(r.body, "X-End-To-End: 1") != NULL);
	cr_assert(strstr(r.body, "Via: 1.1 test-node") != NULL, "%s", r.body);
	cr_assert_null(resp_header(&r, "X-Internal"));
	cr_assert_null(resp_header(&r, "Keep-Alive"));
	cr_assert_str_eq(resp_header(&r, "X-Kept"), "yes");
	resp_free(&r);
}

/* The head the origin received has the line want, or (want NULL) no
 * field called name. */
static void
expect_field(const char *mode, const char *head, const char *name,
    const char *want)
{
	if (want != NULL)
		cr_expect(strstr(head, want) != NULL, "%s:\n%s", mode, head);
	else
		cr_expect(strstr(head, name) == NULL, "%s:\n%s", mode, head);
}

/* forwarded_for: what the origin hears of the client, in each mode. */
Test(ops, forwarded_for_adds_keeps_or_strips_the_client)
{
	const char *extra[] = {"X-Forwarded-For: 10.1.1.1",
	    "Forwarded: for=10.2.2.2", NULL};
	struct {
		const char *mode, *xff, *fwd;  /* NULL: absent */
	} c[] = {
		{"add", "X-Forwarded-For: 10.1.1.1, 127.0.0.1\r\n",
		    "Forwarded: for=10.2.2.2\r\n"},
		{"forwarded", "X-Forwarded-For: 10.1.1.1\r\n",
		    "Forwarded: for=10.2.2.2, for=127.0.0.1\r\n"},
		{"keep", "X-Forwarded-For: 10.1.1.1\r\n",
		    "Forwarded: for=10.2.2.2\r\n"},
		{"strip", NULL, NULL},
	};
	struct resp r;
	char u[128], opt[64];

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/headers", E.oport);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *opts[] = {opt, NULL};
		snprintf(opt, sizeof(opt), "forwarded_for=%s", c[i].mode);
		proxy_restart(&E, opts, SIGTERM);
		proxy_get(&E, u, extra, &r);
		cr_assert_eq(r.status, 200);
		expect_field(c[i].mode, r.body, "X-Forwarded-For:", c[i].xff);
		expect_field(c[i].mode, r.body, "\nForwarded:", c[i].fwd);
		resp_free(&r);
	}
	/* none sent: add starts the field */
	const char *opts[] = {"forwarded_for=add", NULL};
	proxy_restart(&E, opts, SIGTERM);
	proxy_get(&E, u, NULL, &r);
	cr_assert(strstr(r.body, "X-Forwarded-For: 127.0.0.1\r\n") != NULL,
	    "%s", r.body);
	resp_free(&r);
}

Test(ops, forwarding_loops_are_counted_and_go_direct)
{
	const char *via[] = {"Via: 1.0 other, 1.1 test-node (sumcache)", NULL};
	const char *other[] = {"Via: 1.1 test-node-2", NULL};
	struct resp r;
	char u[128];

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/loop", E.oport);
	proxy_get(&E, u, other, &r);
	resp_free(&r);
	cr_assert_eq(proxy_metric(&E, "sumcache_forwarding_loops_total"), 0,
	    "another node's name is no loop");
	proxy_get(&E, u, via, &r);
	cr_assert_eq(r.status, 200, "a looped request still goes direct");
	resp_free(&r);
	cr_assert_eq(proxy_metric(&E, "sumcache_forwarding_loops_total"), 1);
	cr_assert_eq(origin_count(&E, "/obj/loop", NULL), 2);
	/* a URL naming the proxy itself arrives in origin form, which the
	 * proxy does not serve: one round, no recursion */
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/self", E.pport);
	proxy_get(&E, u, NULL, &r);
	cr_assert_eq(r.status, 400);
	cr_assert(strstr(r.body, "forward proxy") != NULL, "%s", r.body);
	resp_free(&r);
}

/* Misses reuse the origin connections a worker keeps: five on one
 * client connection (one worker) cost one, five more from new clients
 * cost at most one more per worker (each keeps its own, as nginx's
 * workers do). */
Test(ops, origin_connections_are_reused)
{
	struct keepalive *k = keepalive_new();
	struct resp r;
	char u[128];

	for (int i = 0; i < 10; i++) {
		snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/reuse%d",
		    E.oport, i);
		if (i < 5)
			keepalive_get(k, &E, u, &r);
		else
			proxy_get(&E, u, NULL, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	keepalive_free(&k);
	bool closed;
	const char *q = "GET /__conns HTTP/1.1\r\nHost: o\r\n"
	    "Connection: close\r\n\r\n";
	char *out = raw_exchange(E.oport, q, strlen(q), 3000, &closed);
	/* the proxy's, one for this query, and the ones origin_count() and
	 * harness_wait_port made: none of those ran here */
	char *body = strstr(out, "\r\n\r\n");
	cr_assert_not_null(body);
	int conns = atoi(body + 4);
	cr_assert_leq(conns, 2 + harness_workers(), "origin saw %d "
	    "connections for 10 misses at %d workers", conns,
	    harness_workers());
	free(out);
}

Test(ops, sighup_reopens_the_access_log)
{
	struct resp r;
	char u[128], moved[400];

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/log1", E.oport);
	proxy_get(&E, u, NULL, &r);
	resp_free(&r);
	snprintf(moved, sizeof(moved), "%s.1", E.log);
	usleep(400000); /* one flush interval */
	cr_assert_eq(rename(E.log, moved), 0);
	kill(E.proxy, SIGHUP);
	usleep(200000);
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/log2", E.oport);
	proxy_get(&E, u, NULL, &r);
	resp_free(&r);
	usleep(400000);
	FILE *f = fopen(E.log, "r");
	cr_assert_not_null(f, "no new log after SIGHUP");
	char line[1024] = "";
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert(strstr(line, "TCP_MISS/200") && strstr(line, "/obj/log2"),
	    "%s", line);
	cr_assert(strstr(line, "HIER_DIRECT/127.0.0.1"), "%s", line);
}

Test(ops, tunnel_idle_timeout_closes)
{
	int eport = harness_free_port();
	char cp[64], req[256];
	bool closed;

	pid_t echo = harness_echo_server(eport);
	snprintf(cp, sizeof(cp), "connect_ports=%d", eport);
	const char *opts[] = {"tunnel_idle_timeout=300ms", cp, NULL};
	struct env e2;
	env_start(&e2, opts);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: "
	    "127.0.0.1:%d\r\n\r\n", eport, eport);
	char *out = raw_exchange(e2.pport, req, strlen(req), 5000, &closed);
	cr_assert(strncmp(out, "HTTP/1.1 200", 12) == 0, "%s", out);
	cr_assert(closed, "idle tunnel still open after 5 s");
	free(out);
	kill(echo, SIGTERM);
	waitpid(echo, NULL, 0);
	env_stop(&e2);
}

/* Runs cmd (with 2>&1 in it for stderr); its exit status (-1 if it did
 * not exit), its output in out. */
static int
run_cli(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	size_t n = fread(out, 1, cap - 1, p);

	out[n] = '\0';
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Writes text to path and runs sumcache -t -c path. */
static int
config_check(const char *path, const char *text, char *out, size_t cap)
{
	char cmd[700];
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s -t -c %s 2>&1", harness_sumcache(),
	    path);
	return run_cli(cmd, out, cap);
}

Test(ops, config_check_names_file_and_line)
{
	char path[300], out[512], want[400];

	snprintf(path, sizeof(path), "%s/bad.conf", E.dir);
	cr_assert_gt(config_check(path, "node_name = \"ok\";\n"
	    "cache_mem = \"12 parsecs\";\n", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s:2: cache_mem", path);
	cr_assert(strstr(out, want) != NULL, "%s", out);
	cr_assert_eq(config_check(path, "cache_mem = \"64MB\";\n"
	    "allow = [\"10.0.0.0/8\"];\n", out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "configuration OK") != NULL);
	cr_assert(strstr(out, "warning") == NULL, "%s", out);
	/* peers that sharing none leaves unused: valid, but said */
	cr_assert_eq(config_check(path, "peer = [\"b 127.0.0.2:3128\"];\n",
	    out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "warning: 1 peer line(s) configured, but "
	    "sharing none leaves them unused") != NULL, "%s", out);
}

/* -t says how many workers run, that a change takes a restart, whatever
 * the node shares (a disk, peers, ICP); a count out of range names its
 * line. */
Test(ops, config_check_says_how_many_workers_run)
{
	char path[300], out[1024], dir[400];

	snprintf(path, sizeof(path), "%s/w.conf", E.dir);
	cr_assert_eq(config_check(path, "workers = \"3\";\n", out,
	    sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "workers 3 (a change takes a restart)") != NULL,
	    "%s", out);
	cr_assert_eq(config_check(path, "workers = \"auto\";\n", out,
	    sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "(auto: the CPUs this process may run on)") !=
	    NULL, "%s", out);
	snprintf(dir, sizeof(dir), "workers = \"4\";\ncache_dir = \"%s/wd "
	    "64MB\";\nsharing = \"icp\";\npeer = \"b 127.0.0.1:9 "
	    "icp=9\";\n", E.dir);
	cr_assert_eq(config_check(path, dir, out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, "workers 4 (a change") != NULL, "%s", out);
	cr_assert(strstr(out, "1 runs") == NULL, "%s", out);
	/* the default is auto: every CPU, with a disk and ICP too */
	cpu_set_t cpus;
	cr_assert_eq(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	char want[400];
	snprintf(want, sizeof(want), "workers %d (auto: the CPUs",
	    CPU_COUNT(&cpus));
	cr_assert_eq(config_check(path, "node_name = \"ok\";\n", out,
	    sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, want) != NULL, "%s", out);
	cr_assert_eq(config_check(path, dir + strlen("workers = \"4\";\n"),
	    out, sizeof(out)), 0, "%s", out);
	cr_assert(strstr(out, want) != NULL, "%s", out);
	cr_assert_gt(config_check(path, "node_name = \"ok\";\n"
	    "workers = \"65\";\n", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s:2: workers", path);
	cr_assert(strstr(out, want) != NULL, "%s", out);
}

/* --make-ca: a CA openssl accepts, its key private; a second run in the
 * same place refuses and leaves the first intact. */
Test(ops, make_ca_writes_a_private_key_and_never_overwrites)
{
	char cmd[700], out[1024], key[400], first[4096], again[4096];
	struct stat st;

	snprintf(cmd, sizeof(cmd), "%s --make-ca %s/ca 2>&1",
	    harness_sumcache(), E.dir);
	cr_assert_eq(run_cli(cmd, out, sizeof(out)), 0, "%s", out);
	snprintf(key, sizeof(key), "%s/ca/ca.key", E.dir);
	cr_assert_eq(stat(key, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600);
	snprintf(cmd, sizeof(cmd), "openssl verify -x509_strict -CAfile "
	    "%s/ca/ca.crt %s/ca/ca.crt 2>&1", E.dir, E.dir);
	cr_assert_eq(run_cli(cmd, out, sizeof(out)), 0, "%s", out);
	snprintf(cmd, sizeof(cmd), "cat %s", key);
	run_cli(cmd, first, sizeof(first));
	snprintf(cmd, sizeof(cmd), "%s --make-ca %s/ca 2>&1",
	    harness_sumcache(), E.dir);
	cr_assert_eq(run_cli(cmd, out, sizeof(out)), 1);
	cr_assert(strstr(out, "never overwritten") != NULL, "%s", out);
	snprintf(cmd, sizeof(cmd), "cat %s", key);
	run_cli(cmd, again, sizeof(again));
	cr_assert_str_eq(first, again);
	cr_assert(strstr(out, "PRIVATE KEY") == NULL, "the key was printed");
}

/* Interception's config, refused before it could fail a connection:
 * no CA, a CA key others may read (at -t and at start), a bad pattern
 * with its line, an upstream CA file with no CA in it (with its line);
 * a good CA passes. */
Test(ops, tls_intercept_config_needs_a_usable_ca)
{
	char cmd[900], out[1024], path[300], conf[1200], want[400];

	snprintf(path, sizeof(path), "%s/tls.conf", E.dir);
	cr_assert_gt(config_check(path, "tls_intercept = [\"*\"];\n", out,
	    sizeof(out)), 0);
	cr_assert(strstr(out, "tls_intercept needs both tls_ca_cert and "
	    "tls_ca_key") != NULL, "%s", out);

	snprintf(cmd, sizeof(cmd), "%s --make-ca %s/tlsca 2>&1",
	    harness_sumcache(), E.dir);
	cr_assert_eq(run_cli(cmd, out, sizeof(out)), 0, "%s", out);
	snprintf(conf, sizeof(conf), "http_listen = \"127.0.0.1:1\";\n"
	    "tls_intercept = [\"*.debian.org\", \"registry.npmjs.org\"];\n"
	    "tls_no_intercept = [\"bank.example\"];\n"
	    "tls_ca_cert = \"%s/tlsca/ca.crt\";\n"
	    "tls_ca_key = \"%s/tlsca/ca.key\";\n", E.dir, E.dir);
	cr_assert_eq(config_check(path, conf, out, sizeof(out)), 0, "%s",
	    out);

	snprintf(cmd, sizeof(cmd), "chmod 644 %s/tlsca/ca.key", E.dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_gt(config_check(path, conf, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "tls_ca_key %s/tlsca/ca.key: mode 0644",
	    E.dir);
	cr_assert(strstr(out, want) != NULL, "%s", out);
	/* a node started on it refuses too, before it listens */
	snprintf(cmd, sizeof(cmd), "timeout 10 %s -c %s 2>&1",
	    harness_sumcache(), path);
	int rc = run_cli(cmd, out, sizeof(out));
	cr_assert(rc != 0 && rc != 124, "started anyway (%d): %s", rc, out);
	cr_assert(strstr(out, want) != NULL, "%s", out);
	cr_assert(strstr(out, "PRIVATE KEY") == NULL, "the key was printed");
	snprintf(cmd, sizeof(cmd), "chmod 600 %s/tlsca/ca.key", E.dir);
	cr_assert_eq(system(cmd), 0);

	cr_assert_gt(config_check(path, "tls_intercept = [\"deb.*.org\"];\n",
	    out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s:1: tls_intercept", path);
	cr_assert(strstr(out, want) != NULL, "%s", out);

	snprintf(conf, sizeof(conf), "tls_upstream_ca = \"%s/tls.conf\";\n",
	    E.dir);
	cr_assert_gt(config_check(path, conf, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s:1: tls_upstream_ca", path);
	cr_assert(strstr(out, want) != NULL, "%s", out);
	cr_assert(strstr(out, "no PEM certificate in it") != NULL, "%s", out);
	snprintf(conf, sizeof(conf), "tls_upstream_ca = \"%s/tlsca/ca.crt\";"
	    "\n", E.dir);
	cr_assert_eq(config_check(path, conf, out, sizeof(out)), 0, "%s", out);
}

Test(ops, object_size_limit_and_memory_budget)
{
	const char *opts[] = {"max_object_size=64KB", "cache_mem=256KB", NULL};
	struct env e2;
	struct resp r;
	char u[128];

	env_start(&e2, opts);
	/* over max_object_size: streamed through, never stored */
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/huge?max_age=60&"
	    "size=100000", e2.oport);
	for (int i = 0; i < 2; i++) {
		proxy_get(&e2, u, NULL, &r);
		cr_assert_eq(r.len, 100000);
		cr_assert_str_eq(resp_header(&r, "X-Cache"),
		    "MISS from test-node");
		resp_free(&r);
	}
	cr_assert_eq(origin_count(&e2, "/obj/huge", NULL), 2);
	/* twenty 30 KB objects in a 256 KB budget: evictions keep it */
	for (int i = 0; i < 20; i++) {
		snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/fill%d?"
		    "max_age=60&size=30000", e2.oport, i);
		proxy_get(&e2, u, NULL, &r);
		cr_assert_eq(r.status, 200);
		resp_free(&r);
	}
	cr_assert_leq(proxy_metric(&e2, "sumcache_cache_bytes"), 256 * 1024);
	cr_assert_geq(proxy_metric(&e2, "sumcache_evictions_total"), 12);
	cr_assert_leq(proxy_metric(&e2, "sumcache_cache_objects"), 8);
	/* the newest one is still a hit */
	proxy_get(&e2, u, NULL, &r);
	cr_assert_str_eq(resp_header(&r, "X-Cache"), "HIT from test-node");
	resp_free(&r);
	env_stop(&e2);
}

Test(ops, connect_to_a_dead_port_is_502)
{
	int dead = harness_free_port();
	char cp[64], req[256];
	bool closed;

	snprintf(cp, sizeof(cp), "connect_ports=%d", dead);
	const char *opts[] = {cp, NULL};
	struct env e2;
	env_start(&e2, opts);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: "
	    "127.0.0.1:%d\r\n\r\n", dead, dead);
	char *out = raw_exchange(e2.pport, req, strlen(req), 3000, &closed);
	cr_assert(strncmp(out, "HTTP/1.1 502 ", 13) == 0, "%s", out);
	cr_assert(closed);
	free(out);
	cr_assert_eq(proxy_metric(&e2,
	    "sumcache_origin_errors_total{cause=\"unreachable\"}"), 1);
	env_stop(&e2);
}

Test(ops, status_page_and_its_data)
{
	struct resp r;
	char u[128];

	/* one miss and one hit, so the data has something to say */
	snprintf(u, sizeof(u), "http://127.0.0.1:%d/obj/status?max_age=60",
	    E.oport);
	proxy_get(&E, u, NULL, &r);
	resp_free(&r);
	proxy_get(&E, u, NULL, &r);
	resp_free(&r);

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/sumcache/status", E.pport);
	http_request(0, "GET", u, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(resp_header(&r, "Content-Type"),
	    "text/html; charset=utf-8");
	cr_assert(strstr(resp_header(&r, "Content-Security-Policy"),
	    "default-src 'none'") != NULL, "the page may load nothing else");
	cr_assert(strstr(r.body, "<title>sumcache status</title>") != NULL);
	cr_assert(strstr(r.body, "</html>") != NULL, "the whole page");
	resp_free(&r);

	snprintf(u, sizeof(u), "http://127.0.0.1:%d/sumcache/v1/status",
	    E.pport);
	http_request(0, "GET", u, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(resp_header(&r, "Content-Type"), "application/json");
	cr_assert(strstr(r.body, "\"node\":\"test-node\"") != NULL, "%s",
	    r.body);
	cr_assert(strstr(r.body, "\"sharing\":\"none\"") != NULL);
	cr_assert(strstr(r.body, "\"fields\":[\"time_ms\",\"local_hit\","
	    "\"remote_hit\",\"miss\",") != NULL, "%s", r.body);
	cr_assert(strstr(r.body, "\"peers\":[]}") != NULL, "%s", r.body);
	/* the last sample is taken at the request: local_hit 1, remote 0,
	 * miss 1, error 0 */
	const char *last = strstr(r.body, "]],\"peers\"");
	cr_assert_not_null(last, "%s", r.body);
	while (*last != '[')
		last--;
	unsigned long long ms, local, remote, miss, error;
	cr_assert_eq(sscanf(last, "[%llu,%llu,%llu,%llu,%llu", &ms, &local,
	    &remote, &miss, &error), 5, "%s", r.body);
	cr_assert_eq(local, 1);
	cr_assert_eq(remote, 0);
	cr_assert_eq(miss, 1);
	cr_assert_eq(error, 0);
	resp_free(&r);

	/* read-only pages refuse other methods; none counts as a request */
	http_request(0, "POST", u, NULL, "x", 1, false, &r);
	cr_assert_eq(r.status, 405);
	resp_free(&r);
	char du[128];
	snprintf(du, sizeof(du), "http://127.0.0.1:%d/squid-internal-periodic/"
	    "store_digest", E.pport);
	http_request(0, "POST", du, NULL, "x", 1, false, &r);
	cr_assert_eq(r.status, 405, "the digest is a read-only page too");
	resp_free(&r);
	/* a browser using this node as its proxy asks in absolute form: the
	 * node answers itself instead of fetching from itself */
	proxy_get(&E, u, NULL, &r);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "\"node\":\"test-node\"") != NULL);
	cr_assert_null(resp_header(&r, "Via"), "not a proxied response");
	resp_free(&r);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_requests_total{result=\"miss\"}"), 1);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_requests_total{result=\"local_hit\"}"), 1);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_requests_total{result=\"error\"}"), 0);
	/* paths are case-sensitive: this is no page of ours, and a client
	 * error like any other origin-form request */
	snprintf(du, sizeof(du), "http://127.0.0.1:%d/SUMCACHE/STATUS",
	    E.pport);
	http_request(0, "GET", du, NULL, NULL, 0, false, &r);
	cr_assert_eq(r.status, 400);
	resp_free(&r);
	cr_assert_eq(proxy_metric(&E,
	    "sumcache_requests_total{result=\"error\"}"), 1);
}
