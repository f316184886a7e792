/*
 * leaf-bench: what interception's certificates cost (proxy/cert/). Mints
 * a leaf for each of N distinct hosts through the leaf cache, as the
 * first CONNECT to each host does, then asks for each again (the cache's
 * hit), and prints the time per mint, per reuse, and the memory each
 * cached leaf holds (resident set growth over the N leaves).
 *
 *   build/leaf-bench [N]          (default 2000; at most TLS_LEAVES_MAX
 *                                  are held, as the node holds them)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ca.h"
#include "leaves.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident set in KiB, from /proc/self/statm. */
static long
rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f == NULL || fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = -1;
	if (f != NULL)
		fclose(f);
	return rss * 4;
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	char dir[] = "/tmp/leaf-bench-XXXXXX", sub[64], crt[96], key[96];
	char err[512], host[64];

	if (n <= 0 || mkdtemp(dir) == NULL)
		return 2;
	snprintf(sub, sizeof(sub), "%s/ca", dir);
	snprintf(crt, sizeof(crt), "%s/%s", sub, CA_CERT_FILE);
	snprintf(key, sizeof(key), "%s/%s", sub, CA_KEY_FILE);
	struct ca *ca;
	struct leaves *l;
	if (ca_make(sub, "bench", NULL, err, sizeof(err)) < 0 ||
	    (ca = ca_load(crt, key, err, sizeof(err))) == NULL ||
	    (l = leaves_new(ca, (size_t)n, err, sizeof(err))) == NULL) {
		fprintf(stderr, "leaf-bench: %s\n", err);
		return 1;
	}
	long rss0 = rss_kib();
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		snprintf(host, sizeof(host), "host%d.bench.example", i);
		if (leaves_get(l, host, err, sizeof(err)) == NULL) {
			fprintf(stderr, "leaf-bench: %s\n", err);
			return 1;
		}
	}
	double t1 = now_s();
	long rss1 = rss_kib();
	for (int i = 0; i < n; i++) {
		snprintf(host, sizeof(host), "host%d.bench.example", i);
		leaves_get(l, host, err, sizeof(err));
	}
	double t2 = now_s();
	const struct leaves_stats *st = leaves_stats(l);
	printf("leaf-bench: %d hosts: mint %.1f us per leaf, reuse %.2f us, "
	    "%.1f KiB resident per cached leaf (%llu minted, %llu reused)\n",
	    n, (t1 - t0) * 1e6 / n, (t2 - t1) * 1e6 / n,
	    (double)(rss1 - rss0) / n, (unsigned long long)st->minted,
	    (unsigned long long)st->reused);
	leaves_free(&l);
	ca_free(&ca);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
