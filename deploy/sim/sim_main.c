/*
 * sumcache-sim's command line (sim.c says what it simulates): options,
 * the policy line, and the table or CSV rows of each run.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbf.h"
#include "peers.h"
#include "sim.h"

#define MAX_LIST 16

/* ---- output ---- */

static double
pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

/* share of probes that said yes wrongly, and what the formula expected */
struct fp_rates {
	double absent, absent_theory, probe, probe_theory;
};

static struct fp_rates
fp_rates(const struct stats *st)
{
	struct fp_rates r = {0};
	uint64_t neg = st->probes - st->true_positives;

	if (st->absent_probes > 0) {
		r.absent = (double)st->absent_fp / (double)st->absent_probes;
		r.absent_theory = st->absent_theory /
		    (double)st->absent_probes;
	}
	if (neg > 0) {
		r.probe = (double)st->bloom_fp / (double)neg;
		r.probe_theory = st->fp_theory / (double)neg;
	}
	return r;
}

static void
print_row(const struct params *p, const struct stats *st, bool csv)
{
	double req = (double)st->requests;
	double entries = st->mean_entries_n ? (double)st->mean_entries_sum /
	    (double)st->mean_entries_n : 0;
	struct fp_rates fp = fp_rates(st);
	bool sum = mode_summaries(p->mode);
	double dups = st->samples ? st->duplicates_sum / (double)st->samples :
	    0, copies = st->samples ? st->copies_sum / (double)st->samples : 0;

	/* the threshold: a number in the CSV, "auto" or "N%" in the table */
	bool thr_auto = sum && p->threshold == PUB_THRESHOLD_AUTO;
	char thr[16], thr_pct[16];
	snprintf(thr, sizeof(thr), thr_auto ? "auto" : "%g",
	    sum ? p->threshold * 100 : 0);
	snprintf(thr_pct, sizeof(thr_pct), thr_auto ? "auto" : "%g%%",
	    p->threshold * 100);
	if (csv) {
		printf("%s,%u,%s,%u,%u,%" PRIu64 ",%.4f,%.4f,%.4f,%.4f,%.4f,"
		    "%.5f,%.2f,%.5f,%" PRIu64 ",%" PRIu64 ",%.0f,%.6f,%.6f,"
		    "%.6f,%.6f,%.2f,%.4f,%.1f,%" PRIu64 ",%g,%" PRIu64 ",%"
		    PRIu64 ",%.4f,%.4f,%.0f,%.0f,%" PRIu64 ",%" PRIu64 ",%d,%d,%s,"
		    "%.0f,%.2f\n",
		    mode_names[p->mode], p->proxies, thr, sum ? p->bits : 0,
		    sum ? p->k : 0, st->requests,
		    pct(st->local_hits, st->requests),
		    pct(st->remote_hits, st->requests),
		    pct(st->local_hits + st->remote_hits, st->requests),
		    pct(st->false_hits, st->requests),
		    pct(st->false_misses, st->requests),
		    (double)st->messages / req, (double)st->bytes / req,
		    (double)st->peer_fetches / req, st->publications,
		    st->fulls, entries, fp.absent * 100,
		    fp.absent_theory * 100, fp.probe * 100,
		    fp.probe_theory * 100, st->seconds,
		    pct(st->stale_false_hits, st->requests),
		    st->mean_entries_sum ? st->bits_sum /
		    (double)st->mean_entries_sum : 0,
		    st->rebuilds, sum ? p->delay : 0,
		    st->origin_fetches + st->revalidations,
		    st->capacity_misses,
		    (double)st->owner_requests / req,
		    pct(st->owner_hits, st->requests), dups, copies,
		    st->origin_after[0], st->origin_after[1],
		    mode_hashed(p->mode) ? (int)p->admit_hits : -1,
		    p->membership, sum ? pub_claims_name(p->claims) : "",
		    /* a node holds the other proxies' summaries */
		    st->mean_entries_n ? st->view_bytes_sum /
		    (double)st->mean_entries_n * (p->proxies - 1) : 0,
		    st->mean_entries_sum ? st->view_bytes_sum /
		    (double)st->mean_entries_sum : 0);
		return;
	}
	char what[64];
	const char *name = p->mode == MODE_SUMMARY ? "summary" : "sum+hash";
	if (sum && p->delay > 0)
		snprintf(what, sizeof(what), "%s %s %s %ub +%gs", name,
		    pub_claims_name(p->claims), thr_pct, p->bits, p->delay);
	else if (sum)
		snprintf(what, sizeof(what), "%s %s %s %ub", name,
		    pub_claims_name(p->claims), thr_pct, p->bits);
	else
		snprintf(what, sizeof(what), "%s", mode_names[p->mode]);
	printf("%-26s %5u %7.2f %7.2f %7.2f %7.3f %7.3f %9.4f %9.1f %8.4f",
	    what, p->proxies, pct(st->local_hits, st->requests),
	    pct(st->remote_hits, st->requests),
	    pct(st->local_hits + st->remote_hits, st->requests),
	    pct(st->false_hits, st->requests),
	    pct(st->false_misses, st->requests),
	    (double)st->messages / req, (double)st->bytes / req,
	    (double)st->peer_fetches / req);
	if (sum)
		printf(" %8.4f %8.4f %8.4f", fp.absent * 100,
		    fp.absent_theory * 100, fp.probe * 100);
	else
		printf(" %8s %8s %8s", "-", "-", "-");
	printf(" %8" PRIu64 " %8.0f %6.1f\n", st->capacity_misses, dups,
	    st->seconds);
}

static const char csv_header[] =
    "mode,proxies,threshold_pct,bits_per_entry,hash_functions,requests,"
    "local_hit_pct,remote_hit_pct,total_hit_pct,false_hit_pct,"
    "false_miss_pct,messages_per_request,bytes_per_request,"
    "peer_fetches_per_request,publications,full_publications,"
    "mean_published_entries,bloom_fp_pct,bloom_fp_theory_pct,"
    "probe_fp_pct,probe_fp_theory_pct,seconds,stale_false_hit_pct,"
    "effective_bits_per_entry,rebuilds,delay_s,origin_requests,"
    "capacity_misses,owner_requests_per_request,owner_hit_pct,"
    "duplicate_copies,copies,origin_after_join,origin_after_leave,admit,"
    "membership,claims,peer_memory_per_node_bytes,peer_bytes_per_key\n";

/* percentages of requests, except the three false-positive rates, which
 * are of summary probes */
static const char table_header[] =
    "                                             hit %            "
    "                per request            false positive %\n"
    "run                        proxies   local  remote   total  falseh  falsem"
    "  messages     bytes  fetches   absent  formula   trace  capmiss"
    "     dups      s\n";

/* ---- options ---- */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: sumcache-sim [options] TRACE\n"
	    "  --proxies N          proxies; client c uses proxy c mod N (4)\n"
	    "  --modes LIST         none,icp,summary,carp,summary+hash\n"
	    "                       (none,icp,summary)\n"
	    "  --thresholds LIST    summary update thresholds in %% or auto,\n"
	    "                       publisher.h's rule (the daemon's\n"
	    "                       default: auto, 10 under summary+hash)\n"
	    "  --bits LIST          summary bits per entry, claims fresh or\n"
	    "                       evicted (16)\n"
	    "  --hash-functions K   (4)\n"
	    "  --cache SIZE         per proxy: P%% of its infinite cache, or bytes\n"
	    "                       with K, M or G (10%%)\n"
	    "  --max-interval S     publish pending changes at least every S\n"
	    "                       trace seconds; 0: never (60)\n"
	    "  --filter-for BYTES   size each filter for cache / BYTES objects,\n"
	    "                       and grow it, as sumcache does (%d); mean:\n"
	    "                       once, for the proxy's mean object size\n"
	    "  --claims LIST        what a summary claims: timed (the\n"
	    "                       daemon's: a cuckoo table, each slot a\n"
	    "                       key and its deadline), fresh\n"
	    "                       (lapses published), evicted (until the\n"
	    "                       copy is evicted) (timed)\n"
	    "  --peers-asked N      claimants asked on a miss, at most (%d)\n"
	    "  --delay S            a summary arrives S trace seconds after\n"
	    "                       it is sent (0)\n"
	    "  --admit-hits N       with carp and summary+hash, a node keeps\n"
	    "                       its own copy of an object it does not own\n"
	    "                       at its clients' Nth request; 1: always,\n"
	    "                       0: never (%u)\n"
	    "  --membership         a node joins at a third of the trace and\n"
	    "                       leaves at two thirds\n"
	    "  --csv                CSV rows instead of the table\n"
	    "  --policy             print the publishing policy of one proxy\n"
	    "                       (as sumcache --policy does) and exit\n",
	    PUB_OBJECT_BYTES, PEERS_ASKED_DEFAULT, ADMIT_HITS_DEFAULT);
	exit(2);
}

static void
bad_option(const char *name, const char *value, const char *want)
{
	fprintf(stderr, "sumcache-sim: --%s %s: want %s\n", name, value, want);
	exit(2);
}

/* Comma-separated positive numbers; the count, or 0 when malformed. */
static unsigned
parse_list(const char *s, double *v)
{
	unsigned n = 0;

	for (;;) {
		char *end;
		errno = 0;
		double x = strtod(s, &end);
		if (end == s || errno != 0 || !(x > 0) || n == MAX_LIST)
			return 0;
		v[n++] = x;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
}

/* --thresholds: percentages over 0 and at most 100, or auto (0). */
static unsigned
parse_thresholds(const char *s, double *v)
{
	unsigned n = 0;

	for (;;) {
		char *end;
		if (n == MAX_LIST)
			return 0;
		if (strncmp(s, "auto", 4) == 0) {
			v[n++] = PUB_THRESHOLD_AUTO;
			end = (char *)s + 4;
		} else {
			errno = 0;
			double x = strtod(s, &end);
			if (end == s || errno != 0 || !(x > 0) || x > 100)
				return 0;
			v[n++] = x / 100;
		}
		if (*end == '\0')
			return n;
		if (*end != ',')
			return 0;
		s = end + 1;
	}
}

static int
parse_cache(const char *s, struct params *p)
{
	char *end;
	double x = strtod(s, &end);

	if (end == s || !(x > 0))
		return -1;
	p->cache_bytes = 0;
	p->cache_share = 0;
	if (strcmp(end, "%") == 0 && x <= 100) {
		p->cache_share = x / 100;
		return 0;
	}
	double mult = strcmp(end, "") == 0 ? 1 : strcmp(end, "K") == 0 ?
	    1024 : strcmp(end, "M") == 0 || strcmp(end, "MB") == 0 ?
	    1048576 : strcmp(end, "G") == 0 || strcmp(end, "GB") == 0 ?
	    1073741824.0 : 0;
	if (mult == 0)
		return -1;
	p->cache_bytes = (uint64_t)(x * mult);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longs[] = {
		{"proxies", 1, 0, 'n'}, {"modes", 1, 0, 'm'},
		{"thresholds", 1, 0, 't'}, {"bits", 1, 0, 'b'},
		{"hash-functions", 1, 0, 'k'}, {"cache", 1, 0, 'c'},
		{"max-interval", 1, 0, 'i'}, {"csv", 0, 0, 'v'},
		{"filter-for", 1, 0, 'f'}, {"policy", 0, 0, 'p'},
		{"peers-asked", 1, 0, 'a'}, {"delay", 1, 0, 'd'},
		{"admit-hits", 1, 0, 'A'}, {"membership", 0, 0, 'M'},
		{"claims", 1, 0, 'C'},
		{0, 0, 0, 0},
	};
	struct params p = {.proxies = 4, .k = 4, .cache_share = 0.1,
	    .max_interval = 60, .filter_object_bytes = PUB_OBJECT_BYTES,
	    .peers_asked = PEERS_ASKED_DEFAULT,
	    .admit_hits = ADMIT_HITS_DEFAULT};
	double thresholds[MAX_LIST] = {PUB_THRESHOLD_AUTO}, bits[MAX_LIST] = {16};
	unsigned nthr = 1, nbits = 1, nclaims = 1;
	bool thr_auto = true;  /* no --thresholds: the daemon's default */
	enum pub_claims claims[PUB_CLAIMS_COUNT] = {PUB_CLAIMS_TIMED};
	bool modes[MODE_COUNT] = {true, true, true}, csv = false;
	bool policy = false;
	int c, li = 0;

	while ((c = getopt_long(argc, argv, "", longs, &li)) != -1) {
		const char *name = longs[li].name;
		char *end;
		switch (c) {
		case 'n':
			p.proxies = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || p.proxies < 2 ||
			    p.proxies > MAX_PROXIES)
				bad_option(name, optarg, "2 to 1024 proxies");
			break;
		case 'm':
			memset(modes, 0, sizeof(modes));
			for (char *m = strtok(optarg, ","); m != NULL;
			    m = strtok(NULL, ",")) {
				int i = 0;
				while (i < MODE_COUNT &&
				    strcmp(m, mode_names[i]) != 0)
					i++;
				if (i == MODE_COUNT)
					bad_option(name, m, "none, icp, summary, "
					    "carp or summary+hash");
				modes[i] = true;
			}
			break;
		case 't':
			nthr = parse_thresholds(optarg, thresholds);
			thr_auto = false;
			if (nthr == 0)
				bad_option(name, optarg, "auto or percentages "
				    "over 0, at most 100, comma-separated");
			break;
		case 'b':
			nbits = parse_list(optarg, bits);
			for (unsigned i = 0; i < nbits; i++)
				if (bits[i] < 4 || bits[i] > 64 ||
				    bits[i] != floor(bits[i]))
					nbits = 0;
			if (nbits == 0)
				bad_option(name, optarg, "whole numbers 4 to 64, "
				    "comma-separated");
			break;
		case 'k':
			p.k = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || p.k < 1 || p.k > CBF_MAX_K)
				bad_option(name, optarg, "1 to 16");
			break;
		case 'c':
			if (parse_cache(optarg, &p) < 0)
				bad_option(name, optarg, "a share (10%) or a "
				    "size (64MB)");
			break;
		case 'i':
			p.max_interval = strtod(optarg, &end);
			if (*end != '\0' || !(p.max_interval >= 0))
				bad_option(name, optarg, "seconds, 0 or more");
			break;
		case 'f':
			if (strcmp(optarg, "mean") == 0) {
				p.filter_object_bytes = 0;
				break;
			}
			p.filter_object_bytes = strtod(optarg, &end);
			if (*end != '\0' || !(p.filter_object_bytes >= 64))
				bad_option(name, optarg, "bytes (64 or more), "
				    "or mean");
			break;
		case 'a':
			p.peers_asked = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || p.peers_asked < 1 ||
			    p.peers_asked > PEERS_ASKED_MAX)
				bad_option(name, optarg, "1 to 16");
			break;
		case 'd':
			p.delay = strtod(optarg, &end);
			if (*end != '\0' || !(p.delay >= 0) || p.delay > 86400)
				bad_option(name, optarg, "seconds, 0 to 86400");
			break;
		case 'A':
			p.admit_hits = (unsigned)strtoul(optarg, &end, 10);
			if (*end != '\0' || p.admit_hits > ADMIT_HITS_MAX)
				bad_option(name, optarg, "0 to 15");
			break;
		case 'C':
			nclaims = 0;
			for (char *m = strtok(optarg, ","); m != NULL;
			    m = strtok(NULL, ",")) {
				if (nclaims == PUB_CLAIMS_COUNT ||
				    !pub_claims_parse(m, &claims[nclaims++]))
					bad_option(name, m, "timed, fresh or "
					    "evicted, each once at most");
			}
			if (nclaims == 0)
				bad_option(name, optarg, "a policy");
			break;
		case 'M': p.membership = true; break;
		case 'v': csv = true; break;
		case 'p': policy = true; break;
		default: usage();
		}
	}
	if (policy) {
		/* what one proxy of this run publishes by: --cache must be
		 * a size, as cache_mem is */
		char line[512];
		if (p.cache_bytes == 0 || p.filter_object_bytes == 0)
			bad_option("policy", "", "--cache SIZE in bytes and "
			    "--filter-for BYTES");
		p.threshold = thr_auto ? pub_threshold_default(false) :
		    thresholds[0];
		p.bits = (unsigned)bits[0];
		struct pub_conf pc = sim_pub_conf(&p, p.cache_bytes);
		peers_policy_line(&pc, p.peers_asked, line, sizeof(line));
		printf("%s\n", line);
		return 0;
	}
	if (optind != argc - 1)
		usage();

	struct trace t = {0};
	trace_load(&t, argv[optind]);
	if (t.nclients < p.proxies)
		fprintf(stderr, "sumcache-sim: warning: %zu clients for %u "
		    "proxies: some proxies get no requests\n", t.nclients,
		    p.proxies);
	if (!csv)
		printf("sumcache-sim: %s: %zu requests, %zu objects, %zu "
		    "clients, %u proxies, k = %u\n\n%s", argv[optind],
		    t.nreq, t.nobj, t.nclients, p.proxies, p.k,
		    table_header);
	else
		fputs(csv_header, stdout);
	for (int m = 0; m < MODE_COUNT; m++) {
		if (!modes[m])
			continue;
		p.mode = (enum mode)m;
		bool sum = mode_summaries(p.mode);
		for (unsigned a = 0; a < (sum ? nthr : 1); a++)
			for (unsigned b = 0; b < (sum ? nbits : 1); b++)
			for (unsigned q = 0; q < (sum ? nclaims : 1); q++) {
				struct stats st;
				p.threshold = thr_auto ?
				    pub_threshold_default(p.mode ==
				    MODE_SUMMARY_HASH) : thresholds[a];
				p.bits = (unsigned)bits[b];
				p.claims = claims[q];
				run(&t, &p, &st);
				print_row(&p, &st, csv);
				fflush(stdout);
			}
	}
	sumkey_hasher_free(&t.hasher);
	free(t.obj);
	free(t.req);
	return 0;
}
