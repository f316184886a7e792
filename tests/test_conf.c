#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include "conf.h"
#include "disk.h"
#include "manual.h"
#include "testrun.h"

static const char *
write_file(const char *text)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s/sumcache.conf", scratch_dir());
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

Test(conf, defaults_are_safe)
{
	struct conf c;
	struct sockaddr_in lo = {.sin_family = AF_INET}, out = lo;

	cr_assert_eq(conf_defaults(&c), 0);
	cr_assert_str_eq(c.http_listen, "127.0.0.1:3128");
	cr_assert_eq(c.cache_mem, 256u << 20);
	cr_assert_eq(c.n_connect_ports, 1);
	cr_assert_eq(c.connect_ports[0], 443);
	inet_pton(AF_INET, "127.0.0.1", &lo.sin_addr);
	inet_pton(AF_INET, "8.8.8.8", &out.sin_addr);
	cr_assert(acl_allows(&c.allow, (struct sockaddr *)&lo));
	cr_assert(!acl_allows(&c.allow, (struct sockaddr *)&out),
	    "never an open proxy by default");
	cr_assert_eq(c.tls_intercept.n, 0, "interception is opt-in");
	cr_assert_null(c.tls_ca_cert);
	cr_assert_eq(c.tls_splice_after_reject_ms, 3600000);
	conf_clear(&c);
}

Test(conf, file_and_overrides)
{
	struct conf c;
	char err[256];
	const char *p = write_file("# sample\nnode_name = \"n1\";\n"
	    "cache_mem = \"64 MB\";\nallow = [\"10.0.0.0/8\", \"::1\"];\n"
	    "connect_ports = [443, 8443];\nheader_timeout = \"250ms\";\n");

	conf_defaults(&c);
	cr_assert_eq(conf_load_file(&c, p, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c.node_name, "n1");
	cr_assert_eq(c.cache_mem, 64u << 20);
	cr_assert_eq(c.allow.n, 2, "the file's list replaces the default");
	cr_assert_eq(c.n_connect_ports, 2);
	cr_assert_eq(c.header_timeout_ms, 250);
	cr_assert_eq(conf_override(&c, "tls_splice_after_reject=2h", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.tls_splice_after_reject_ms, 7200000);
	cr_assert_eq(conf_override(&c, "max_object_size=1m", err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(c.max_object_size, 1u << 20);
	cr_assert_eq(conf_override(&c, "allow=192.168.0.0/16", err,
	    sizeof(err)), 0);
	cr_assert_eq(c.allow.n, 3, "later values append");
	conf_clear(&c);
}

Test(conf, errors_name_file_and_line)
{
	struct conf c;
	char err[512], want[300];
	struct { const char *text; int line; const char *msg; } v[] = {
		{"node_name = \"a\";\nbogus = 1;\n", 2, "unknown directive"},
		{"\n\ncache_mem = \"lots\";\n", 3, "expected a size"},
		{"allow = [\"10.0.0.0/33\"];\n", 1, "bad prefix length"},
		{"node_name = \"a\"\nx y;\n", 2, "syntax error"},
		{"http_listen = [\"a:1\"];\n", 1, "not a list"},
		{"refresh_pattern = [\"\\\\.deb$ 1 20%\"];\n", 1,
		    "[-i] REGEX MIN PERCENT MAX"},
		{"\nrefresh_pattern = [\"x 1 20 5 ignore-reload\"];\n", 2,
		    "not supported"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *p = write_file(v[i].text);
		conf_defaults(&c);
		cr_expect_eq(conf_load_file(&c, p, err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "%s:%d: ", p, v[i].line);
		cr_expect(strncmp(err, want, strlen(want)) == 0 &&
		    strstr(err, v[i].msg) != NULL, "case %zu: %s", i, err);
		conf_clear(&c);
	}
	conf_defaults(&c);
	cr_assert_eq(conf_override(&c, "sharing=gossip", err, sizeof(err)), -1);
	cr_assert_eq(conf_override(&c, "nonsense", err, sizeof(err)), -1);
	cr_assert_eq(conf_override(&c, "node_name=a b", err, sizeof(err)), -1);
	/* the sender of our signed summaries holds 63 characters: a longer
	 * name is refused, not cut (peers would not know the cut one) */
	char name[100] = "node_name=";
	memset(name + 10, 'n', 63);
	cr_assert_eq(conf_override(&c, name, err, sizeof(err)), 0, "%s", err);
	name[10 + 63] = 'n';
	cr_assert_eq(conf_override(&c, name, err, sizeof(err)), -1);
	cr_assert(strstr(err, "longer than 63") != NULL, "%s", err);
	/* http_listen is checked the way start-up binds it */
	cr_assert_eq(conf_override(&c, "http_listen=[::1]:3128", err,
	    sizeof(err)), 0, "%s", err);
	const char *bad[] = {"http_listen=localhost:3128",
	    "http_listen=127.0.0.1", "http_listen=::1",
	    "http_listen=127.0.0.1:0", "http_listen=1.2.3.4:99999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(conf_override(&c, bad[i], err, sizeof(err)), -1,
		    "%s accepted", bad[i]);
	conf_clear(&c);
}

Test(conf, summary_sharing_from_a_file)
{
	struct conf c;
	char err[512];
	char key[256];

	snprintf(key, sizeof(key), "%s/cluster.key", scratch_dir());
	FILE *f = fopen(key, "w");
	fputs("0123456789abcdef0123\n", f);
	fclose(f);
	char text[512];
	snprintf(text, sizeof(text), "sharing = \"summary\";\n"
	    "peer = [\"b 10.0.0.2:3128\", \"c [::1]:3129 proxy_only\"];\n"
	    "cluster_key_file = \"%s\";\nsummary_threshold = \"0.5%%\";\n"
	    "summary_bits_per_entry = 8;\n", key);
	cr_assert_eq(conf_defaults(&c), 0);
	cr_assert_eq(conf_load_file(&c, write_file(text), err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_load_key(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.sharing, SHARING_SUMMARY);
	cr_assert_eq(c.n_peers, 2);
	cr_assert_str_eq(c.peers[0].name, "b");
	cr_assert_str_eq(c.peers[0].host, "10.0.0.2");
	cr_assert_eq(c.peers[0].port, 3128);
	cr_assert(!c.peers[0].proxy_only);
	cr_assert_str_eq(c.peers[1].host, "::1");
	cr_assert(c.peers[1].proxy_only);
	cr_assert_float_eq(c.summary_threshold, 0.005, 1e-12);
	cr_assert_eq(c.summary_bits_per_entry, 8);
	cr_assert_eq(c.cluster_key_len, 20, "the newline is not key");
	conf_clear(&c);
	unlink(key);
}

Test(conf, summary_sharing_errors)
{
	static const struct { const char *opt, *want; } v[] = {
		{"peer=b", "expected NAME HOST:PORT"},
		{"peer=b 10.0.0.2", "expected NAME HOST:PORT"},
		{"peer=b 10.0.0.2:0", "expected NAME HOST:PORT"},
		{"peer=b! 10.0.0.2:1", "letters, digits"},
		{"peer=b 10.0.0.2:1 fast", "unknown peer option"},
		{"peer=b 10.0.0.2:1 type=icp", "sumcache, squid-digest"},
		{"peer_dns=squids.test:3128 type=squid-digest", "peer line"},
		{"summary_threshold=0", "expected auto or a share"},
		{"summary_threshold=150%", "expected auto or a share"},
		{"summary_hash=md4", "expected xxh3 or squid-md5"},
		{"sharing=carrier-pigeon", "expected none, summary or icp"},
		{"icp_listen=3130", "expected address:port"},
		{"peer_dns=peers.test", "expected HOST:PORT"},
		{"peer_dns=peers.test:3128 fast", "unknown peer option"},
		{"dns_nameservers=ns.example", "expected IP addresses"},
		{"dns_nameservers=10.0.0.53 10.0.0.54:x", "expected IP addresses"},
		{"dns_nameservers=", "at least one"},
		{"placement=ring", "expected none or hash"},
		{"placement_weight=0", "a number over 0"},
		{"placement_weight=2x", "a number over 0"},
		{"placement_admit_hits=16", "from 0 to 15"},
		{"peer=b 10.0.0.2:1 weight=0", "weight= needs a number"},
		{"peer=b 10.0.0.2:1 weight=-1", "weight= needs a number"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct conf c;
		char err[512] = "";
		cr_assert_eq(conf_defaults(&c), 0);
		cr_expect_eq(conf_override(&c, v[i].opt, err, sizeof(err)), -1,
		    "%s accepted", v[i].opt);
		cr_expect(strstr(err, v[i].want) != NULL, "%s: %s", v[i].opt,
		    err);
		conf_clear(&c);
	}
	/* cross-directive checks */
	struct conf c;
	char err[512] = "";
	cr_assert_eq(conf_defaults(&c), 0);
	cr_assert_eq(conf_override(&c, "sharing=summary", err, sizeof(err)),
	    0);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "a peer or peer_dns") != NULL, "%s", err);
	cr_assert_eq(conf_override(&c, "peer_dns=sumcache.ns.svc:3128 "
	    "proxy_only", err, sizeof(err)), 0);
	cr_assert_str_eq(c.peer_dns.host, "sumcache.ns.svc");
	cr_assert_eq(c.peer_dns.port, 3128);
	cr_assert(c.peer_dns.proxy_only);
	cr_assert_eq(conf_override(&c, "dns_nameservers=10.96.0.10 "
	    "[fd00::a]:5353", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "cluster_key_file") != NULL, "%s", err);
	cr_assert_eq(conf_override(&c, "summary_hash=squid-md5", err,
	    sizeof(err)), 0);
	cr_assert_eq(conf_override(&c, "summary_hash_functions=6", err,
	    sizeof(err)), 0);
	cr_assert_eq(conf_override(&c, "cluster_key_file=/x", err,
	    sizeof(err)), 0);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "4 with squid-md5") != NULL, "%s", err);
	conf_clear(&c);

	/* ICP needs a peer, but no key */
	cr_assert_eq(conf_defaults(&c), 0);
	cr_assert_str_eq(c.icp_listen, "auto");
	cr_assert_eq(conf_override(&c, "sharing=icp", err, sizeof(err)), 0);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "sharing icp needs a peer") != NULL, "%s", err);
	cr_assert_eq(conf_override(&c, "peer=s 127.0.0.2:3128 icp=3131", err,
	    sizeof(err)), 0);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(conf_load_key(&c, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c.peers[0].icp_port, 3131);
	cr_assert_eq(conf_override(&c, "peer=sq 127.0.0.3:3128 "
	    "type=squid-digest", err, sizeof(err)), 0);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "squid-digest needs sharing summary") != NULL,
	    "%s", err);
	conf_clear(&c);

	/* Squid peers alone read our digest: no key; a sumcache peer
	 * beside them needs one */
	cr_assert_eq(conf_defaults(&c), 0);
	cr_assert_eq(conf_override(&c, "sharing=summary", err, sizeof(err)),
	    0);
	cr_assert_eq(conf_override(&c, "peer=sq 127.0.0.3:3128 "
	    "type=squid-digest proxy_only", err, sizeof(err)), 0);
	cr_expect_eq(c.peers[0].type, PEER_SQUID_DIGEST);
	cr_expect(c.peers[0].proxy_only);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(conf_load_key(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_override(&c, "peer=b 127.0.0.2:3128 type=sumcache",
	    err, sizeof(err)), 0);
	cr_expect_eq(c.peers[1].type, PEER_SUMCACHE);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "needs cluster_key_file") != NULL, "%s", err);
	conf_clear(&c);
}

Test(conf, placement_takes_weights_and_refuses_icp)
{
	struct conf c;
	char err[512] = "";

	cr_assert_eq(conf_defaults(&c), 0);
	cr_expect_not(c.placement_hash, "placement is none unless asked");
	cr_assert_eq(conf_override(&c, "placement=hash", err, sizeof(err)), 0);
	cr_assert_eq(conf_override(&c, "placement_weight=2.5", err,
	    sizeof(err)), 0);
	cr_assert_eq(conf_override(&c, "placement_admit_hits=0", err,
	    sizeof(err)), 0);
	cr_assert_eq(conf_override(&c, "peer=b 10.0.0.2:3128 weight=4", err,
	    sizeof(err)), 0, "%s", err);
	cr_expect(c.placement_hash);
	cr_expect_eq(c.placement_weight, 2.5);
	cr_expect_eq(c.placement_admit_hits, 0);
	cr_expect_eq(c.peers[0].weight, 4.0);
	/* sharing none with peers: carp, no warning, no key needed */
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(conf_warn(&c, stderr), 0);
	cr_assert_eq(conf_override(&c, "sharing=icp", err, sizeof(err)), 0);
	cr_expect_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_expect(strstr(err, "placement hash works with sharing summary") !=
	    NULL, "%s", err);
	conf_clear(&c);
}

Test(conf, status_interval_has_a_floor)
{
	struct conf c;
	char err[256];

	cr_assert_eq(conf_defaults(&c), 0);
	cr_assert_eq(c.status_interval_ms, 5000);
	cr_assert_eq(conf_override(&c, "status_interval=100ms", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_override(&c, "status_interval=50ms", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "status_interval") != NULL, "%s", err);
	conf_clear(&c);
}

Test(conf, limits_take_auto_or_a_value)
{
	struct conf c;
	char err[256];

	cr_assert_eq(conf_defaults(&c), 0);
	/* auto is 0: the daemon derives each at start-up */
	cr_assert_eq(c.max_connections, 0);
	cr_assert_eq(c.inflight_mem, 0);
	cr_assert_eq(c.summary_max_size, 0);
	cr_assert_eq(conf_override(&c, "max_connections=5000", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_connections, 5000);
	cr_assert_eq(conf_override(&c, "summary_max_size=32MB", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.summary_max_size, 32u << 20);
	cr_assert_eq(conf_override(&c, "max_connections=0", err,
	    sizeof(err)), -1);
	cr_assert_eq(conf_override(&c, "summary_max_size=0", err,
	    sizeof(err)), -1);
	cr_assert_eq(conf_override(&c, "inflight_mem=many", err,
	    sizeof(err)), -1);
	/* an object max_object_size allows must fit the copies' pool */
	cr_assert_eq(conf_override(&c, "inflight_mem=8MB", err, sizeof(err)),
	    0, "%s", err);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), -1);
	cr_assert(strstr(err, "inflight_mem") != NULL, "%s", err);
	cr_assert_eq(conf_override(&c, "max_object_size=8MB", err,
	    sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	conf_clear(&c);
}

/* The disk tier's check of a cache_dir, as the server installs it. */
static const struct conf_hooks disk_hooks = {.dir_check = disk_check};

/* cache_dir is checked where it is read, so -t names the file and line:
 * its form, a directory that cannot be made, a size its file system
 * cannot hold; and max_object_size's auto follows it. */
Test(conf, cache_dir_is_checked_with_file_and_line)
{
	struct conf c;
	char err[512], want[300], text[256];
	struct { const char *value; const char *msg; } v[] = {
		{"/var/cache/x", "expected \"PATH SIZE\""},
		{"relative/dir 64MB", "absolute PATH"},
		{"/tmp/sumcache-conf-dir 2MB", "under the least"},
		{"/etc/hostname/sub 64MB", "cannot be created"},
		{"/tmp/sumcache-conf-dir 999999GB", "file system has free"},
		{"/tmp/sumcache-conf-dir lots", "expected a size"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(text, sizeof(text), "node_name = \"a\";\n"
		    "cache_dir = \"%s\";\n", v[i].value);
		const char *p = write_file(text);
		conf_defaults(&c);
		c.hooks = &disk_hooks;
		cr_expect_eq(conf_load_file(&c, p, err, sizeof(err)), -1,
		    "%s accepted", v[i].value);
		snprintf(want, sizeof(want), "%s:2: ", p);
		cr_expect(strncmp(err, want, strlen(want)) == 0 &&
		    strstr(err, v[i].msg) != NULL, "case %zu: %s", i, err);
		conf_clear(&c);
	}
	conf_defaults(&c);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_object_size, 16u << 20, "memory only: 16MB");
	conf_clear(&c);
	conf_defaults(&c);
	c.hooks = &disk_hooks;
	cr_assert_eq(conf_override(&c, "cache_dir=/tmp/sumcache-conf-dir 64MB",
	    err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_object_size, 16u << 20, "a quarter of 64MB");
	cr_assert_str_eq(c.cache_dir, "/tmp/sumcache-conf-dir");
	conf_clear(&c);
	/* (set by hand: the test machine's disk may not have 8GB free) */
	conf_defaults(&c);
	c.cache_dir = strdup("/tmp/sumcache-conf-dir");
	c.cache_dir_size = 8ull << 30;
	cr_assert_eq(conf_finish(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c.max_object_size, 1u << 30, "1GB with a large one");
	cr_assert_eq(c.max_memory_object_size, 16u << 20);
	conf_clear(&c);
	rmdir("/tmp/sumcache-conf-dir");
}

/* The manual pages come from the tables: every directive in
 * sumcache.conf.5 with its syntax line, default and reload behaviour;
 * every option in sumcache.8; a backslash or a leading dot in a table's
 * text cannot become a request. */
Test(conf, the_manual_is_written_from_the_tables)
{
	char *page = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&page, &len);

	manual_conf(f, "9.9", "2026-11-26");
	fclose(f);
	cr_assert(strstr(page, ".TH SUMCACHE.CONF 5 2026-11-26 \"sumcache "
	    "9.9\"") != NULL);
	size_t reloads = 0;
	for (const char *p = page; (p = strstr(p, "On reload: ")) != NULL;
	    p++)
		reloads++;
	cr_assert_eq(reloads, conf_docs());
	for (size_t i = 0; i < conf_docs(); i++) {
		struct conf_doc d;
		char want[128];
		conf_doc(i, &d);
		snprintf(want, sizeof(want), ".TP\n.B %s\n", d.name);
		cr_assert(strstr(page, want) != NULL, "%s missing", d.name);
		cr_assert(strcmp(d.syntax, "VALUE") != 0, "%s: its parser has "
		    "no syntax in value.c", d.name);
	}
	cr_assert(strstr(page, "Default: \\fB256MB\\fR") != NULL);
	free(page);

	f = open_memstream(&page, &len);
	manual_sumcache(f, "9.9", "2026-11-26");
	fclose(f);
	for (size_t i = 0; i < manual_noptions; i++) {
		char want[64];
		size_t n = 0;
		for (const char *s = manual_options[i].flags; *s &&
		    n < sizeof(want) - 3; s++) {
			if (*s == '-')
				want[n++] = '\\';
			want[n++] = *s;
		}
		want[n] = '\0';
		cr_assert(strstr(page, want) != NULL, "%s missing",
		    manual_options[i].flags);
	}
	for (const char *line = page; line != NULL; line = strchr(line,
	    '\n')) {
		line += *line == '\n';
		cr_assert(*line != '\'', "a line starts with a quote");
	}
	free(page);
}
