/*
 * Test harness, one node: processes, the origin, requests and metrics
 * (see harness.h; clusters of nodes are harness_cluster.c's). Paths of
 * the binaries come from CMake (SUMCACHE_BIN, ORIGIN_BIN).
 */
#define _GNU_SOURCE /* memmem */
#include "harness.h"
#include "testrun.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
harness_free_port(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	close(fd);
	return ntohs(sin.sin_port);
}

pid_t
harness_spawn(char *const argv[], const char *out_path)
{
	return harness_spawn_nofile(argv, out_path, 0);
}

pid_t
harness_spawn_nofile(char *const argv[], const char *out_path, int nofile)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {(rlim_t)nofile, (rlim_t)nofile};
		if (nofile > 0 && setrlimit(RLIMIT_NOFILE, &rl) < 0)
			_exit(126);
		int fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

bool
harness_wait_port(int port, int ms)
{
	return harness_wait_addr("127.0.0.1", port, ms);
}

bool
harness_wait_addr(const char *host, int port, int ms)
{
	for (int waited = 0; waited < ms; waited += 10) {
		struct sockaddr_in sin = {.sin_family = AF_INET,
		    .sin_port = htons((uint16_t)port)};
		inet_pton(AF_INET, host, &sin.sin_addr);
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		int rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		close(fd);
		if (rc == 0)
			return true;
		usleep(10000);
	}
	return false;
}

int
harness_stop(pid_t pid, int sig, int ms)
{
	int status;

	if (pid <= 0)
		return -1;
	kill(pid, sig);
	for (int waited = 0; waited < ms; waited += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

void
origin_dir(struct env *e)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "%s", scratch_dir());
}

void
origin_start_tls(struct env *e, const char *cert, const char *key)
{
	char port[16], tport[16], out[300];

	if (e->dir[0] == '\0')
		origin_dir(e);
	e->oport = harness_free_port();
	snprintf(port, sizeof(port), "%d", e->oport);
	snprintf(out, sizeof(out), "%s/origin.out", e->dir);
	if (cert != NULL) {
		e->tport = harness_free_port();
		snprintf(tport, sizeof(tport), "%d", e->tport);
	}
	char *oargv[] = {ORIGIN_BIN, port, tport, (char *)cert, (char *)key,
	    NULL};
	if (cert == NULL)
		oargv[2] = NULL;
	e->origin = harness_spawn(oargv, out);
	cr_assert(harness_wait_port(e->oport, 5000), "origin did not start");
	if (cert != NULL)
		cr_assert(harness_wait_port(e->tport, 5000), "origin did not "
		    "start its TLS port");
}

void
origin_start(struct env *e)
{
	origin_dir(e);
	origin_start_tls(e, NULL, NULL);
}

void
env_start(struct env *e, const char *const *opts)
{
	env_start_nofile(e, opts, 0);
}

/* The proxy of e on e->pport with opts; its output goes to out_name in
 * e->dir. */
const char *
harness_sumcache(void)
{
	const char *bin = getenv("SUMCACHE_UNDER_TEST");

	return bin != NULL && *bin != '\0' ? bin : SUMCACHE_BIN;
}

const char *
harness_workers_opt(void)
{
	static char opt[32];
	const char *n = getenv("SUMCACHE_TEST_WORKERS");

	/* the default is auto: the suites run at exactly 1 unless told */
	snprintf(opt, sizeof(opt), "workers=%s", n != NULL && *n != '\0' ?
	    n : "1");
	return opt;
}

int
harness_workers(void)
{
	const char *n = getenv("SUMCACHE_TEST_WORKERS");

	return n != NULL && atoi(n) > 0 ? atoi(n) : 1;
}

static void
proxy_spawn(struct env *e, const char *const *opts, const char *out_name)
{
	char out[300], *argv[64];
	int n = 0;
	static char listen[64], logopt[320], portopt[64];

	snprintf(listen, sizeof(listen), "http_listen=127.0.0.1:%d", e->pport);
	snprintf(e->log, sizeof(e->log), "%s/access.log", e->dir);
	snprintf(logopt, sizeof(logopt), "access_log=%s", e->log);
	snprintf(portopt, sizeof(portopt), "node_name=test-node");
	argv[n++] = (char *)harness_sumcache();
	argv[n++] = "-o";
	argv[n++] = (char *)harness_workers_opt();
	if (e->conf_file != NULL) {
		argv[n++] = "-c";
		argv[n++] = (char *)e->conf_file;
	}
	argv[n++] = "-o";
	argv[n++] = listen;
	argv[n++] = "-o";
	argv[n++] = logopt;
	argv[n++] = "-o";
	argv[n++] = portopt;
	for (; opts && *opts && n < 60; opts++) {
		argv[n++] = "-o";
		argv[n++] = (char *)*opts;
	}
	argv[n] = NULL;
	snprintf(out, sizeof(out), "%s/%s", e->dir, out_name);
	e->proxy = harness_spawn_nofile(argv, out, e->nofile);
	cr_assert(harness_wait_port(e->pport, 10000), "sumcache did not start");
}

void
env_start_nofile(struct env *e, const char *const *opts, int nofile)
{
	origin_start(e);
	e->nofile = nofile;
	proxy_start(e, opts);
}

void
proxy_start(struct env *e, const char *const *opts)
{
	e->pport = harness_free_port();
	proxy_spawn(e, opts, "sumcache.out");
}

void
proxy_restart(struct env *e, const char *const *opts, int sig)
{
	static int restarts;
	char out[64];

	int st = harness_stop(e->proxy, sig, 15000);
	if (sig == SIGTERM)
		cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		    "sumcache exited badly (status %d); see %s/sumcache.out",
		    st, e->dir);
	snprintf(out, sizeof(out), "sumcache-%d.out", ++restarts);
	proxy_spawn(e, opts, out);
}

struct env E;

void
env_up(void)
{
	env_start(&E, NULL);
}

void
env_down(void)
{
	env_stop(&E);
}

void
env_stop(struct env *e)
{
	harness_stop(e->origin, SIGTERM, 5000);
	if (e->proxy == 0)
		return; /* the test stopped it and checked how */
	int st = harness_stop(e->proxy, SIGTERM, 15000);
	/* a proxy that crashed or leaked (ASan) fails the test here */
	cr_expect(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "sumcache exited badly (status %d); see %s/sumcache.out", st,
	    e->dir);
}

struct sink {
	char *p;
	size_t n, cap;
};

/* Grows by doubling: a body of tens of MB must not cost a copy of all of
 * it per piece (ASan's realloc always copies). */
static size_t
sink_write(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;

	if (s->n + len + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap < s->n + len + 1)
			cap *= 2;
		char *np = realloc(s->p, cap);
		cr_assert(np != NULL);
		s->p = np;
		s->cap = cap;
	}
	memcpy(s->p + s->n, data, len);
	s->n += len;
	s->p[s->n] = '\0';
	return len;
}

struct upload {
	const char *p;
	size_t left;
};

static size_t
upload_read(char *buf, size_t size, size_t n, void *arg)
{
	struct upload *u = arg;
	size_t len = size * n;

	if (len > u->left)
		len = u->left;
	/* small pieces so a chunked upload has several chunks */
	if (len > 1000)
		len = 1000;
	memcpy(buf, u->p, len);
	u->p += len;
	u->left -= len;
	return len;
}

void
proxy_request(const struct env *e, const char *method, const char *url,
    const char *const *extra, const char *body, size_t blen, bool chunked,
    struct resp *r)
{
	http_request(e->pport, method, url, extra, body, blen, chunked, r);
}

void
http_request(int via_port, const char *method, const char *url,
    const char *const *extra, const char *body, size_t blen, bool chunked,
    struct resp *r)
{
	http_request_at("127.0.0.1", via_port, method, url, extra, body, blen,
	    chunked, r);
}

/* One exchange on c (its connection kept for the next, if any). */
static void
request_on(CURL *c, const char *host, int via_port, const char *method,
    const char *url, const char *const *extra, const char *body,
    size_t blen, bool chunked, struct resp *r)
{
	struct curl_slist *h = NULL;
	struct sink b = {0}, hd = {0};
	char proxy[64];
	struct upload up = {body, blen};

	memset(r, 0, sizeof(*r));
	snprintf(proxy, sizeof(proxy), "http://%s:%d", host, via_port);
	for (; extra && *extra; extra++)
		h = curl_slist_append(h, *extra);
	if (chunked)
		h = curl_slist_append(h, "Transfer-Encoding: chunked");
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (via_port > 0)
		curl_easy_setopt(c, CURLOPT_PROXY, proxy);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_write);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &hd);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") != 0)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(c, CURLOPT_READFUNCTION, upload_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &up);
		curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
		    chunked ? (curl_off_t)-1 : (curl_off_t)blen);
	}
	CURLcode rc = curl_easy_perform(c);
	cr_assert(rc == CURLE_OK, "%s %s: %s", method, url,
	    curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	r->body = b.p ? b.p : calloc(1, 1);
	r->len = b.n;
	r->head = hd.p ? hd.p : calloc(1, 1);
	curl_slist_free_all(h);
}

void
http_request_at(const char *host, int via_port, const char *method,
    const char *url, const char *const *extra, const char *body,
    size_t blen, bool chunked, struct resp *r)
{
	CURL *c = curl_easy_init();

	cr_assert_not_null(c);
	request_on(c, host, via_port, method, url, extra, body, blen, chunked,
	    r);
	curl_easy_cleanup(c);
}

struct keepalive {
	CURL *c;
};

struct keepalive *
keepalive_new(void)
{
	struct keepalive *k = calloc(1, sizeof(*k));

	cr_assert_not_null(k);
	k->c = curl_easy_init();
	cr_assert_not_null(k->c);
	return k;
}

void
keepalive_get(struct keepalive *k, const struct env *e, const char *url,
    struct resp *r)
{
	/* the options go, the connection stays */
	curl_easy_reset(k->c);
	request_on(k->c, "127.0.0.1", e->pport, "GET", url, NULL, NULL, 0,
	    false, r);
}

void
keepalive_free(struct keepalive **kp)
{
	if (*kp == NULL)
		return;
	curl_easy_cleanup((*kp)->c);
	free(*kp);
	*kp = NULL;
}

void
proxy_get(const struct env *e, const char *url, const char *const *extra,
    struct resp *r)
{
	proxy_request(e, "GET", url, extra, NULL, 0, false, r);
}

void
resp_free(struct resp *r)
{
	free(r->body);
	free(r->head);
	memset(r, 0, sizeof(*r));
}

const char *
resp_header(const struct resp *r, const char *name)
{
	static char val[1024];
	size_t nl = strlen(name);

	/* the last head wins (after 1xx interim heads) */
	const char *last = r->head, *p;
	while ((p = strstr(last + 1, "\r\n\r\nHTTP/")) != NULL)
		last = p + 4;
	for (p = last; p && *p; p = strstr(p, "\r\n")) {
		if (p[0] == '\r')
			p += 2;
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (*v == ' ')
				v++;
			size_t n = strcspn(v, "\r\n");
			snprintf(val, sizeof(val), "%.*s", (int)n, v);
			return val;
		}
	}
	return NULL;
}

static char *
direct_get(const char *host, int port, const char *path)
{
	char req[256];
	bool closed;

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "Connection: close\r\n\r\n", path, host);
	return raw_exchange_at(host, port, req, strlen(req), 5000, &closed);
}

int
origin_count(const struct env *e, const char *needle, int *conditional)
{
	char *log = direct_get("127.0.0.1", e->oport, "/__log");
	int n = 0, cond = 0;
	char *save, *line = strstr(log, "\r\n\r\n");

	for (line = line ? strtok_r(line + 4, "\n", &save) : NULL; line;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "/__log") || !strstr(line, needle))
			continue;
		n++;
		if (line[strlen(line) - 1] == '1')
			cond++;
	}
	free(log);
	if (conditional)
		*conditional = cond;
	return n;
}

int
harness_connect(int port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
	cr_assert(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	return fd;
}

char *
raw_exchange(int port, const char *req, size_t len, int ms, bool *closed)
{
	return raw_exchange_at("127.0.0.1", port, req, len, ms, closed);
}

char *
raw_exchange_at(const char *host, int port, const char *req, size_t len,
    int ms, bool *closed)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);

	inet_pton(AF_INET, host, &sin.sin_addr);
	cr_assert(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	*closed = false;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		long spent = (t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= ms)
			break;
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, (int)(ms - spent)) <= 0)
			break;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		ssize_t r = recv(fd, buf + n, cap - n, 0);
		if (r <= 0) {
			*closed = true;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return buf;
}

double
proxy_metric(const struct env *e, const char *series)
{
	return port_metric(e->pport, series);
}

double
port_metric(int port, const char *series)
{
	return metric_at("127.0.0.1", port, series);
}

double
metric_at(const char *host, int port, const char *series)
{
	char *m = direct_get(host, port, "/metrics");
	double v = -1;
	size_t sl = strlen(series);

	for (char *p = m; (p = strstr(p, series)) != NULL; p += sl) {
		if ((p == m || p[-1] == '\n') && p[sl] == ' ') {
			v = strtod(p + sl + 1, NULL);
			break;
		}
	}
	free(m);
	return v;
}

bool
harness_file_has(const char *path, const char *n1, const char *n2, int ms)
{
	char line[2048];

	for (int waited = 0;; waited += 50) {
		FILE *f = fopen(path, "r");
		while (f != NULL && fgets(line, sizeof(line), f))
			if (strstr(line, n1) && (n2 == NULL ||
			    strstr(line, n2))) {
				fclose(f);
				return true;
			}
		if (f != NULL)
			fclose(f);
		if (waited >= ms)
			return false;
		usleep(50000);
	}
}

char *
env_url(const struct env *e, const char *path)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "http://127.0.0.1:%d%s", e->oport,
	    path);
	return buf[i];
}

long
harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long
proc_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

pid_t
harness_echo_server(int port)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		struct sockaddr_in sin = {.sin_family = AF_INET,
		    .sin_port = htons((uint16_t)port)};
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
		    listen(ls, 8) < 0)
			_exit(1);
		for (;;) {
			int fd = accept(ls, NULL, NULL);
			char buf[4096];
			ssize_t n;
			while ((n = read(fd, buf, sizeof(buf))) > 0)
				if (write(fd, buf, (size_t)n) != n)
					break;
			close(fd);
		}
	}
	cr_assert(harness_wait_port(port, 3000), "echo server did not start");
	return pid;
}

double
metric_wait_at(const char *host, int port, const char *series, double want,
    int ms)
{
	double v = -1;

	for (int waited = 0; waited <= ms; waited += 20) {
		v = metric_at(host, port, series);
		if (v >= want)
			break;
		usleep(20000);
	}
	return v;
}

double
proxy_wait_metric(const struct env *e, const char *series, double want,
    int ms)
{
	return metric_wait_at("127.0.0.1", e->pport, series, want, ms);
}

bool
harness_find_in_segments(const char *cache, const char *name, char *path,
    size_t plen, off_t *at)
{
	char pattern[256] = "";
	DIR *dir;
	struct dirent *de;
	bool found = false;

	while (strlen(pattern) + strlen(name) < 64)
		strcat(pattern, name);
	cr_assert_not_null(dir = opendir(cache));
	while (!found && (de = readdir(dir)) != NULL) {
		if (strncmp(de->d_name, "seg-", 4) != 0)
			continue;
		snprintf(path, plen, "%s/%s", cache, de->d_name);
		int fd = open(path, O_RDONLY);
		struct stat st;
		cr_assert(fd >= 0 && fstat(fd, &st) == 0);
		char *p = malloc((size_t)st.st_size + 1);
		cr_assert_eq(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
		char *hit = memmem(p, (size_t)st.st_size, pattern,
		    strlen(pattern));
		if (hit != NULL) {
			*at = hit - p;
			found = true;
		}
		free(p);
		close(fd);
	}
	closedir(dir);
	return found;
}

void
harness_raise_nofile(void)
{
	struct rlimit rl;

	cr_assert(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
		rl.rlim_cur = 4096;
		cr_assert(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	}
}

double
harness_cpu_seconds(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	cr_assert_not_null(p);
	/* fields 14 and 15, counted after the command's closing paren */
	sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}
