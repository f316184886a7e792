/*
 * Peer links (issue 34): https objects move between nodes only over TLS
 * in which both ends show a certificate of the cluster CA, derived from
 * the cluster key (proxy/cert/cluster.h). Refusals first: a link without
 * a certificate, or with another cluster's, fails its handshake and is
 * counted; a peer asking for an https object in clear gets a 403; a peer
 * that cannot speak the link is never sent the request and the origin
 * answers; ICP is never asked about https. Then three nodes: an https
 * object fetched through A is a remote hit through B, and a capture of
 * the loopback traffic during that fetch holds no byte of the body in
 * clear (the same capture of an http object does, so the capture can
 * fail). Under placement hash, an https miss goes to its owner over the
 * link too.
 */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cluster.h"
#include "harness.h"
#include "placement.h"
#include "tlsfiles.h"

static pid_t liar;

static void
down(void)
{
	if (liar > 0)
		harness_stop(liar, SIGTERM, 2000);
	liar = 0;
	cluster_suite_down();
}

/* A TLS origin (CE.tport) whose CA the nodes trust, for every test. */
static void
up(void)
{
	static char crt[400], key[400];

	origin_dir(&CE);
	tlsfiles_write(CE.dir);
	snprintf(crt, sizeof(crt), "%s/good.crt", CE.dir);
	snprintf(key, sizeof(key), "%s/good.key", CE.dir);
	origin_start_tls(&CE, crt, key);
}

TestSuite(peerlink, .init = up, .fini = down, .timeout = 90);

static const char *const *
trusting(void)
{
	static char opt[420];
	static const char *opts[] = {opt, NULL};

	snprintf(opt, sizeof(opt), "tls_upstream_ca=%s/testca.crt", CE.dir);
	return opts;
}

/* The identity a node of the cluster whose key file is path derives,
 * its certificate naming name (CLUSTER_LINK_NAME, as every node's, or
 * another, as none's). */
static struct cluster_id *
identity_named(const char *path, const char *node, const char *name)
{
	unsigned char key[256];
	char err[256];
	FILE *f = fopen(path, "rb");

	cr_assert_not_null(f);
	size_t n = fread(key, 1, sizeof(key), f);
	fclose(f);
	while (n > 0 && (key[n - 1] == '\n' || key[n - 1] == '\r'))
		n--;
	struct cluster_id *id = cluster_id_new_named(key, n, node, name, err,
	    sizeof(err));
	cr_assert_not_null(id, "%s", err);
	return id;
}

static struct cluster_id *
identity_of(const char *path, const char *node)
{
	return identity_named(path, node, CLUSTER_LINK_NAME);
}

static size_t
sink(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* A link to nd as a node would open it, trusting trust's CA and showing
 * mine's certificate (none if NULL), asking for target: the HTTP status,
 * or 0 if the TLS handshake or the exchange failed (curl's words in err,
 * if not NULL). */
static long
link_ask_err(const struct node *nd, const struct cluster_id *trust,
    const struct cluster_id *mine, const char *target,
    char err[CURL_ERROR_SIZE])
{
	CURL *e = curl_easy_init();
	char to[200];
	long status = 0;
	struct curl_slist *connect_to;
	struct curl_blob ca = {trust->ca_pem, trust->ca_pem_len,
	    CURL_BLOB_COPY};

	snprintf(to, sizeof(to), "%s:443:%s:%d", CLUSTER_LINK_NAME, nd->host,
	    nd->port);
	connect_to = curl_slist_append(NULL, to);
	curl_easy_setopt(e, CURLOPT_CONNECT_TO, connect_to);
	curl_easy_setopt(e, CURLOPT_URL, "https://" CLUSTER_LINK_NAME "/");
	curl_easy_setopt(e, CURLOPT_REQUEST_TARGET, target);
	curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
	curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
	if (mine != NULL) {
		struct curl_blob cert = {mine->cert_pem, mine->cert_pem_len,
		    CURL_BLOB_COPY}, key = {mine->key_pem, mine->key_pem_len,
		    CURL_BLOB_COPY};
		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &key);
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
	if (err != NULL) {
		err[0] = '\0';
		curl_easy_setopt(e, CURLOPT_ERRORBUFFER, err);
	}
	if (curl_easy_perform(e) == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	curl_slist_free_all(connect_to);
	return status;
}

static long
link_ask(const struct node *nd, const struct cluster_id *trust,
    const struct cluster_id *mine, const char *target)
{
	return link_ask_err(nd, trust, mine, target, NULL);
}

#define LINKS "sumcache_peer_links_total{result=\""

/* GET url (absolute form, https: curl would CONNECT) through nd: the
 * whole response, which must be a 200. */
static char *
get_200(const struct node *nd, const char *url)
{
	char req[600];
	bool closed;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", url);
	char *r = raw_exchange_at(nd->host, nd->port, req, strlen(req), 5000,
	    &closed);
	cr_assert(strncmp(r, "HTTP/1.1 200", 12) == 0, "%s: %s", url, r);
	return r;
}

Test(peerlink, links_without_a_certificate_of_the_cluster_are_refused)
{
	char url[200], other_key[400];

	cluster_start(&CE, &CL, 2, trusting(), NULL);
	struct node *a = &CL.nodes[0];
	struct cluster_id *good = identity_of(CL.key_file, "t");
	snprintf(other_key, sizeof(other_key), "%s/other.key", CE.dir);
	FILE *f = fopen(other_key, "w");
	cr_assert_not_null(f);
	fputs("another-cluster-key-0123456789abcdef\n", f);
	fclose(f);
	struct cluster_id *foreign = identity_of(other_key, "t");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/l?max_age=60",
	    CE.tport);

	/* no certificate, then another cluster's: refused by A */
	cr_expect_eq(link_ask(a, good, NULL, url), 0);
	cr_expect_eq(node_wait_metric(a, LINKS "refused\"}", 1, 3000), 1);
	char err[CURL_ERROR_SIZE];
	cr_expect_eq(link_ask_err(a, good, foreign, url, err), 0);
	cr_expect_eq(node_wait_metric(a, LINKS "refused\"}", 2, 3000), 2);
	/* told why, by A's alert (it was thrown away with the socket, and
	 * every refusal read "unexpected eof") */
	cr_expect(strstr(err, "alert") != NULL, "the client was told: %s",
	    err);
	/* A's own certificate is not what another cluster trusts */
	cr_expect_eq(link_ask(a, foreign, good, url), 0);
	cr_expect(harness_file_has(a->out, "peer link refused", NULL, 3000),
	    "the refusal is logged");
	cr_expect_eq(node_metric(a, LINKS "accepted\"}"), 0);
	cr_expect_eq(origin_count(&CE, "/obj/l", NULL), 0);

	/* the cluster's own certificate: the link holds, and the request
	 * inside (no Via: a client's, not a peer's) is fetched as any */
	cr_expect_eq(link_ask(a, good, good, url), 200);
	cr_expect_eq(node_metric(a, LINKS "accepted\"}"), 1);
	cr_expect_eq(origin_count(&CE, "/obj/l", NULL), 1);
	cluster_id_free(&good);
	cluster_id_free(&foreign);
}

Test(peerlink, a_peer_asking_for_https_in_clear_is_refused)
{
	char url[200], req[600];
	bool closed;

	cluster_start(&CE, &CL, 2, trusting(), NULL);
	struct node *a = &CL.nodes[0];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/c?max_age=60",
	    CE.tport);
	/* cached at A first: the refusal is not for want of the object */
	free(get_200(a, url));
	/* as B would ask, from B's address, but in clear */
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nVia: 1.1 b"
	    "\r\nCache-Control: only-if-cached\r\nConnection: close\r\n\r\n",
	    url);
	char *ans = raw_exchange_at(a->host, a->port, req, strlen(req), 5000,
	    &closed);
	cr_expect(strncmp(ans, "HTTP/1.1 403", 12) == 0, "%s", ans);
	cr_expect(strstr(ans, "over a peer link only") != NULL, "%s", ans);
	free(ans);
	cr_expect_eq(node_metric(a, LINKS "https_over_plain\"}"), 1);
	cr_expect_eq(node_metric(a, "sumcache_peer_requests_served_total{"
	    "result=\"hit\"}"), 0);
}

/* How many object requests test-peer on port has read. */
static int
objects_asked(int port)
{
	static const char req[] = "GET /__count HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n";
	bool closed;
	char *r = raw_exchange(port, req, sizeof(req) - 1, 3000, &closed);
	const char *body = strstr(r, "\r\n\r\n");

	cr_assert_not_null(body, "%s", r);
	int n = atoi(body + 4);
	free(r);
	return n;
}

Test(peerlink, a_peer_without_the_link_is_never_asked_in_clear)
{
	char url[200];
	int zport;
	struct resp r;

	/* z holds the key and claims every URL, but answers plain HTTP
	 * only: the link to it fails, the origin answers */
	cluster_init(&CE, &CL, 1, NULL, NULL);
	struct node *a = node_with_fakepeer_tls("false", 0, 0, NULL, NULL,
	    trusting(), &liar, &zport);
	cr_assert_eq(node_wait_metric(a, "sumcache_peer_up{peer=\"z\"}", 1,
	    5000), 1, "z never up");

	/* an http object is asked of z as ever (z says it has none) */
	node_get(a, env_url(&CE, "/obj/asked?max_age=60"), &r);
	resp_free(&r);
	cr_assert_eq(objects_asked(zport), 1);

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/z?max_age=60",
	    CE.tport);
	free(get_200(a, url));
	cr_expect_eq(origin_count(&CE, "/obj/z", NULL), 1);
	/* z was sent no request it could read */
	cr_expect_eq(objects_asked(zport), 1, "z was asked in clear");
}

/* tcpdump of loopback traffic to or from port into path (each packet as
 * it comes: the kernel's blocks would hold them past the stop), its
 * output in out (a new file each time), until stopped;
 * the test fails if tcpdump cannot start (deploy/bootstrap.sh installs
 * it; the tests run as root). */
static pid_t
capture_start(int port, const char *path, const char *out)
{
	char filter[64];

	snprintf(filter, sizeof(filter), "tcp port %d", port);
	/* -Z root: it would write as user tcpdump, which the test's
	 * directory does not let in */
	char *argv[] = {"/usr/bin/tcpdump", "-i", "lo", "--immediate-mode",
	    "-U", "-s", "0", "-Z", "root", "-w", (char *)path, filter, NULL};
	pid_t pid = harness_spawn(argv, out);
	cr_assert(harness_file_has(out, "listening on", NULL, 5000),
	    "tcpdump did not start");
	return pid;
}

/* The bytes of the capture at path; *len. */
static char *
capture_read(pid_t pid, const char *path, size_t *len)
{
	struct stat st;

	usleep(300 * 1000);     /* -U writes each packet; let the last land */
	harness_stop(pid, SIGINT, 3000);
	cr_assert_eq(stat(path, &st), 0);
	char *buf = malloc((size_t)st.st_size + 1);
	FILE *f = fopen(path, "rb");
	cr_assert(buf != NULL && f != NULL);
	*len = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	return buf;
}

Test(peerlink, https_remote_hit_over_the_link_and_never_in_clear)
{
	char url[200], pcap[400], out[400];
	struct resp r;
	size_t len;

	cluster_start(&CE, &CL, 3, trusting(), NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	/* a body of 4000 bytes that says its name over and over */
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/"
	    "linkmarkerq7?max_age=600&size=4000", CE.tport);
	free(get_200(a, url));
	node_wait_synced(a, b);

	snprintf(pcap, sizeof(pcap), "%s/link.pcap", CE.dir);
	snprintf(out, sizeof(out), "%s/tcpdump.out", CE.dir);
	pid_t cap = capture_start(a->port, pcap, out);
	char *got = get_200(b, url);
	cr_assert(strstr(got, "linkmarkerq7linkmarkerq7") != NULL, "%s", got);
	free(got);
	char *bytes = capture_read(cap, pcap, &len);
	cr_expect_gt(len, 2000, "the capture saw the link (%zu bytes)", len);
	cr_expect(memmem(bytes, len, "linkmarkerq7", 12) == NULL,
	    "the body or its URL crossed between the nodes in clear");
	free(bytes);

	cr_expect_eq(origin_count(&CE, "/obj/linkmarkerq7", NULL), 1);
	cr_expect_eq(node_metric(b, "sumcache_requests_total{result=\""
	    "remote_hit\"}"), 1);
	cr_expect_eq(node_metric(a, "sumcache_peer_requests_served_total{"
	    "result=\"hit\"}"), 1);
	cr_expect_eq(node_metric(a, LINKS "accepted\"}"), 1);
	cr_expect(harness_file_has(b->log, "linkmarkerq7", "CD_SIBLING_HIT/a ",
	    3000), "B's access log names A as the source");

	/* the same capture of an http object between the same nodes: the
	 * body is there in clear, so the check above can fail */
	node_get(a, env_url(&CE, "/obj/plainmarkerq7?max_age=600&size=4000"),
	    &r);
	resp_free(&r);
	node_wait_synced(a, b);
	snprintf(out, sizeof(out), "%s/tcpdump-plain.out", CE.dir);
	cap = capture_start(a->port, pcap, out);
	node_get(b, env_url(&CE, "/obj/plainmarkerq7?max_age=600&size=4000"),
	    &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	bytes = capture_read(cap, pcap, &len);
	cr_expect(memmem(bytes, len, "plainmarkerq7", 13) != NULL,
	    "the capture missed a plain peer fetch");
	free(bytes);
}

/* Under placement hash (no summaries), an https miss at B whose owner is
 * A is asked of A over the link; A fetches it once for both. */
Test(peerlink, https_miss_goes_to_its_owner_over_the_link)
{
	const char *opts[] = {trusting()[0], "sharing=none", "placement=hash",
	    NULL};
	char url[200] = "";
	struct place_node v[2];

	cluster_start(&CE, &CL, 2, opts, NULL);
	struct node *a = &CL.nodes[0], *b = &CL.nodes[1];
	for (int i = 0; i < 2; i++)
		v[i] = (struct place_node){place_hash(CL.nodes[i].name,
		    strlen(CL.nodes[i].name)), 1.0};
	/* a URL whose owner is A, by the rule the nodes use */
	for (int i = 0; i < 64; i++) {
		snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/own%d?"
		    "max_age=600", CE.tport, i);
		if (place_owner(v, 2, place_hash(url, strlen(url))) == 0)
			break;
	}
	free(get_200(b, url));
	free(get_200(a, url));
	const char *name = strstr(url, "/obj/");
	char path[64];
	snprintf(path, sizeof(path), "%.*s?", (int)strcspn(name, "?"), name);
	cr_expect_eq(origin_count(&CE, path, NULL), 1, "%s", url);
	cr_expect_eq(node_metric(b, "sumcache_owner_requests_total{outcome="
	    "\"miss\"}"), 1, "B asked the owner, which fetched it");
	cr_expect_eq(node_metric(a, LINKS "accepted\"}"), 1);
	cr_expect_eq(node_metric(a, "sumcache_requests_total{result=\""
	    "local_hit\"}"), 1, "A kept the copy it fetched for B");
}

/* ICP names http URLs only: an https miss asks no peer over ICP (it
 * would only get ICP_ERR back), while an http miss does. */
Test(peerlink, icp_is_never_asked_about_https)
{
	char url[200], series[200];

	cluster_init(&CE, &CL, 2, trusting(), NULL);
	CL.icp = true;
	for (int i = 0; i < 2; i++)
		node_start(&CE, &CL, i);
	struct node *a = &CL.nodes[0];
	snprintf(series, sizeof(series), "sumcache_interproxy_messages_total"
	    "{direction=\"sent\",type=\"icp_query\",peer=\"b\"}");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/icp?max_age=60",
	    CE.tport);
	free(get_200(a, url));
	cr_expect_eq(node_metric(a, series), 0, "an ICP query about https");
	cr_expect_eq(origin_count(&CE, "/obj/icp?", NULL), 1);

	struct resp r;
	node_get(a, env_url(&CE, "/obj/icp-http?max_age=60"), &r);
	cr_assert_eq(r.status, 200);
	resp_free(&r);
	cr_expect_eq(node_metric(a, series), 1, "the http miss asked b");
}

/* A certificate the cluster CA signed, naming another name than the
 * link's: A refuses it from a connecting node, counted and told. */
Test(peerlink, a_link_certificate_naming_another_name_is_refused_by_its_node)
{
	char url[200], err[CURL_ERROR_SIZE];

	cluster_start(&CE, &CL, 2, trusting(), NULL);
	struct node *a = &CL.nodes[0];
	struct cluster_id *good = identity_of(CL.key_file, "t");
	struct cluster_id *misnamed = identity_named(CL.key_file, "t",
	    "other.sumcache.invalid");
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/mn?max_age=60",
	    CE.tport);
	cr_expect_eq(link_ask_err(a, good, misnamed, url, err), 0);
	cr_expect_eq(node_wait_metric(a, LINKS "refused\"}", 1, 3000), 1);
	cr_expect(strstr(err, "alert") != NULL, "the client was told: %s",
	    err);
	cr_expect_eq(origin_count(&CE, "/obj/mn", NULL), 0);
	/* the same with the link's name is taken: the refusal was the
	 * name's */
	cr_expect_eq(link_ask(a, good, good, url), 200);
	cluster_id_free(&good);
	cluster_id_free(&misnamed);
}

/* Peer z holds the key and claims every URL, and its end of a link shows
 * a certificate the cluster CA signed for another name: A never asks it
 * for an https object (the origin answers), and counts and logs the
 * refusal. */
Test(peerlink, a_peer_whose_link_certificate_names_another_name_is_never_asked)
{
	char url[200], crt[400], key[400];
	int zport;

	cluster_init(&CE, &CL, 1, NULL, NULL);
	struct cluster_id *misnamed = identity_named(CL.key_file, "z",
	    "other.sumcache.invalid");
	snprintf(crt, sizeof(crt), "%s/z.crt", CE.dir);
	snprintf(key, sizeof(key), "%s/z.key", CE.dir);
	FILE *f = fopen(crt, "w");
	cr_assert_not_null(f);
	fwrite(misnamed->cert_pem, 1, misnamed->cert_pem_len, f);
	fclose(f);
	cr_assert_not_null(f = fopen(key, "w"));
	fwrite(misnamed->key_pem, 1, misnamed->key_pem_len, f);
	fclose(f);
	cluster_id_free(&misnamed);
	struct node *a = node_with_fakepeer_tls("false", 0, 0, crt, key,
	    trusting(), &liar, &zport);
	cr_assert_eq(node_wait_metric(a, "sumcache_peer_up{peer=\"z\"}", 1,
	    5000), 1, "z never up");

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/obj/zn?max_age=60",
	    CE.tport);
	free(get_200(a, url));
	cr_expect_eq(origin_count(&CE, "/obj/zn", NULL), 1);
	cr_expect_eq(objects_asked(zport), 0, "z was asked");
	cr_expect_eq(node_metric(a, LINKS "refused_out\"}"), 1);
	cr_expect(harness_file_has(a->out, "peer z: its link certificate was "
	    "refused", NULL, 3000));
}
