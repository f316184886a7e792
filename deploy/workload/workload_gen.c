/*
 * workload-gen: a synthetic web workload, written as a Squid native
 * access.log that deploy/workload/replay.c (or any Squid log tool) reads.
 *
 * The model, after the Summary Cache paper's traces:
 *   - N sites (one per proxy). Client c belongs to site c mod N, which is
 *     also the proxy the replayer sends it to.
 *   - Half the objects are a shared set every site asks for; the other
 *     half is split into one local set per site. A request is from the
 *     client's local set with probability --locality, else from the
 *     shared set. Within a set, popularity is Zipf-like (rank r has weight
 *     1 / r^alpha).
 *   - Each object's properties follow from its name: a heavy-tailed size
 *     (lognormal body around 4 KB, a Pareto tail for a tenth of them), a
 *     share that is uncacheable (no-store), and a share that changes every
 *     --change-period seconds (a new version; cached for half that).
 *
 * URLs are on the demo origin (deploy/workload/demo.h), so every response
 * can be checked byte for byte when the log is replayed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
	uint64_t requests;
	uint64_t objects;
	double alpha;
	unsigned clients;
	unsigned proxies;
	double locality;
	double uncacheable;
	double changing;
	unsigned change_period;
	unsigned max_age;
	uint64_t max_size;
	double rate;
	uint64_t seed;
	const char *host;
};

static uint64_t rng_state;

/* splitmix64's finalizer */
static uint64_t
mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* 64 random bits mapped to (0, 1) */
static double
to_unit(uint64_t bits)
{
	return ((double)(bits >> 11) + 0.5) / 9007199254740992.0;
}

static uint64_t
rng(void)
{
	return mix(rng_state += 0x9E3779B97F4A7C15ull);
}

static double
uniform(void)
{
	return to_unit(rng());
}

/* A deterministic uniform (0, 1) for (object, what): an object keeps its
 * properties wherever and whenever it is asked for. */
static double
object_uniform(uint64_t object, uint64_t what)
{
	return to_unit(mix(object * 0xD1B54A32D192ED03ull +
	    what * 0x8CB92BA72F3D8DD7ull + 0x9E3779B97F4A7C15ull));
}

/* Cumulative Zipf weights of ranks 1..n, normalized to end at 1. */
static double *
zipf_cdf(uint64_t n, double alpha)
{
	double *cdf = malloc(n * sizeof(*cdf)), sum = 0;

	if (cdf == NULL)
		return NULL;
	for (uint64_t r = 0; r < n; r++) {
		sum += 1.0 / pow((double)(r + 1), alpha);
		cdf[r] = sum;
	}
	for (uint64_t r = 0; r < n; r++)
		cdf[r] /= sum;
	return cdf;
}

/* A rank in [0, n) drawn from cdf. */
static uint64_t
zipf_draw(const double *cdf, uint64_t n)
{
	double u = uniform();
	uint64_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Heavy-tailed: lognormal (median 4 KB, sigma 1.3) for 90 % of objects,
 * Pareto (from 16 KB, shape 1.2) for the rest. */
static uint64_t
object_size(uint64_t object, uint64_t max)
{
	double u1 = object_uniform(object, 1), u2 = object_uniform(object, 2);
	double size;

	if (object_uniform(object, 3) < 0.9)
		size = 4096 * exp(1.3 * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
	else
		size = 16384 / pow(u1, 1 / 1.2);
	if (size < 64)
		size = 64;
	return size > (double)max ? max : (uint64_t)size;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: workload-gen [options] > trace.log\n"
	    "  --requests N        requests (20000)\n"
	    "  --objects N         distinct objects, half shared (20000)\n"
	    "  --alpha A           Zipf exponent (0.75)\n"
	    "  --clients N         clients (32)\n"
	    "  --proxies N         sites = proxies; client c is at c mod N (4)\n"
	    "  --locality F        share of requests from the client's site set (0.4)\n"
	    "  --uncacheable F     share of objects served no-store (0.05)\n"
	    "  --changing F        share of objects that change over time (0.05)\n"
	    "  --change-period S   seconds between their versions (120)\n"
	    "  --max-age S         freshness of the others (3600)\n"
	    "  --max-size BYTES    largest object (1048576)\n"
	    "  --rate R            requests per second in the log's times (200)\n"
	    "  --seed N            (1)\n"
	    "  --host HOST         origin host in the URLs (origin.demo)\n");
	exit(2);
}

static void
parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{"requests", 1, 0, 'r'}, {"objects", 1, 0, 'o'},
		{"alpha", 1, 0, 'a'}, {"clients", 1, 0, 'c'},
		{"proxies", 1, 0, 'p'}, {"locality", 1, 0, 'l'},
		{"uncacheable", 1, 0, 'u'}, {"changing", 1, 0, 'g'},
		{"change-period", 1, 0, 'P'}, {"max-age", 1, 0, 'm'},
		{"max-size", 1, 0, 'M'}, {"rate", 1, 0, 'R'},
		{"seed", 1, 0, 's'}, {"host", 1, 0, 'H'}, {0, 0, 0, 0},
	};
	int c;

	*o = (struct opts){20000, 20000, 0.75, 32, 4, 0.4, 0.05, 0.05, 120,
	    3600, 1 << 20, 200, 1, "origin.demo"};
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'r': o->requests = strtoull(optarg, NULL, 10); break;
		case 'o': o->objects = strtoull(optarg, NULL, 10); break;
		case 'a': o->alpha = strtod(optarg, NULL); break;
		case 'c': o->clients = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': o->proxies = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l': o->locality = strtod(optarg, NULL); break;
		case 'u': o->uncacheable = strtod(optarg, NULL); break;
		case 'g': o->changing = strtod(optarg, NULL); break;
		case 'P': o->change_period = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'm': o->max_age = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'M': o->max_size = strtoull(optarg, NULL, 10); break;
		case 'R': o->rate = strtod(optarg, NULL); break;
		case 's': o->seed = strtoull(optarg, NULL, 10); break;
		case 'H': o->host = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || o->objects < 2 * o->proxies || o->proxies == 0 ||
	    o->clients < o->proxies || o->alpha < 0 || o->rate <= 0 ||
	    o->locality < 0 || o->locality > 1 || o->change_period < 2 ||
	    o->max_size < 64)
		usage();
}

int
main(int argc, char **argv)
{
	struct opts o;

	parse(argc, argv, &o);
	rng_state = o.seed;
	uint64_t shared = o.objects / 2;
	uint64_t local = (o.objects - shared) / o.proxies;
	double *shared_cdf = zipf_cdf(shared, o.alpha);
	double *local_cdf = zipf_cdf(local, o.alpha);
	if (shared_cdf == NULL || local_cdf == NULL) {
		fprintf(stderr, "workload-gen: out of memory\n");
		return 1;
	}
	double t = 1700000000.0;
	for (uint64_t i = 0; i < o.requests; i++) {
		unsigned client = (unsigned)(rng() % o.clients);
		unsigned site = client % o.proxies;
		int is_local = uniform() < o.locality;
		uint64_t rank = is_local ? zipf_draw(local_cdf, local) :
		    zipf_draw(shared_cdf, shared);
		/* objects numbered across sets, for their properties */
		uint64_t object = is_local ? shared + site * local + rank : rank;
		uint64_t size = object_size(object, o.max_size);
		int nostore = object_uniform(object, 4) < o.uncacheable;
		int changes = !nostore &&
		    object_uniform(object, 5) < o.changing;
		char path[64], query[128];
		if (is_local)
			snprintf(path, sizeof(path), "/demo/site%u/%" PRIu64, site,
			    rank);
		else
			snprintf(path, sizeof(path), "/demo/shared/%" PRIu64, rank);
		if (nostore)
			snprintf(query, sizeof(query), "size=%" PRIu64 "&nostore=1",
			    size);
		else if (changes)
			snprintf(query, sizeof(query), "size=%" PRIu64 "&max_age=%u"
			    "&change=%u", size, o.change_period / 2,
			    o.change_period);
		else
			snprintf(query, sizeof(query), "size=%" PRIu64 "&max_age=%u",
			    size, o.max_age);
		/* Squid native: time elapsed client code/status bytes method
		 * URL ident hierarchy/host type */
		printf("%.3f %6d 10.1.%u.%u TCP_MISS/200 %" PRIu64 " GET "
		    "http://%s%s?%s - HIER_DIRECT/%s application/octet-stream\n",
		    t, 0, client / 256, client % 256, size, o.host, path, query,
		    o.host);
		t += -log(uniform()) / o.rate;  /* Poisson arrivals */
	}
	free(shared_cdf);
	free(local_cdf);
	fprintf(stderr, "workload-gen: %" PRIu64 " requests, %" PRIu64
	    " shared objects, %u sites of %" PRIu64 " local objects, alpha "
	    "%.2f, locality %.2f\n", o.requests, shared, o.proxies, local,
	    o.alpha, o.locality);
	return 0;
}
