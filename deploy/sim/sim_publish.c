/*
 * Each simulated proxy's publisher (summary/publisher.c, the daemon's):
 * its publications in the real Signed envelope, their flight to the
 * others (--delay), and the view the others hold of the proxy, with the
 * objects evicted but not yet said to be (ghosts).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "sim_impl.h"


/* The publisher's configuration for a proxy with a cache of cap bytes:
 * the daemon's defaults unless the options change them. */
struct pub_conf
sim_pub_conf(const struct params *p, uint64_t cap)
{
	double per = p->filter_object_bytes;

	return (struct pub_conf){
		.claims = p->claims,
		.scheme = SUM_XXH3,
		.bits_per_entry = p->bits,
		.k = p->k,
		.threshold = p->threshold,
		.max_interval_ms = (uint64_t)(p->max_interval * 1000),
		.expected_objects = per > 0 ? pub_expected_objects(cap,
		    (uint64_t)per) : 0,
		.max_bits = WIRE_MAX_BITS,
		.fixed_size = per == 0,
	};
}

/*
 * The trace's own probes repeat: a popular uncacheable object is probed at
 * every request, so one false position counts many times. The formula is
 * checked on independent samples: after each publication, the view is
 * probed for URLs that no trace holds.
 */
#define ABSENT_PROBES 64

static void
probe_absent(struct sim *s, const struct proxy *x)
{
	char url[64];
	struct sumkey k;

	for (int i = 0; i < ABSENT_PROBES; i++) {
		int n = snprintf(url, sizeof(url), "http://absent.invalid/%"
		    PRIu64, s->st.absent_probes++);
		if (sumkey_make(s->hasher, SUM_METHOD_GET, url, (size_t)n,
		    &k) < 0)
			die("cannot hash a URL");
		s->st.absent_fp += psum_contains(x->view, &k,
		    x->view->clock.local_ms);
		s->st.absent_theory += x->pub_fpr;
	}
}

/* Trace time in the publisher's milliseconds and microseconds. */
uint64_t
trace_ms(double t)
{
	return t > 0 ? (uint64_t)(t * 1000) : 0;
}

/* Publication pub of proxy i arrives at trace time `at`: what the
 * others hold of i is updated, and the ghosts it removes leave the
 * view. */
static void
arrive(struct sim *s, unsigned i, const struct publication *pub, double at)
{
	struct proxy *x = &s->px[i];
	struct sum_msg msg = pub_msg(pub);

	if (psum_take(&x->view, &msg, trace_ms(at)) != 0)
		die("a summary did not decode to what was published");
	x->arrived++;
	x->pub_fpr = pub_fpr(pub);
	s->st.view_bytes_sum += (double)psum_bytes(x->view);
	probe_absent(s, x);
	const struct ghost *g;
	for (; (g = fifo_head(&x->ghosts)) != NULL && g->pubs < x->arrived;
	    fifo_pop(&x->ghosts)) {
		uint64_t gk = map_key(i, g->obj);
		if (map_get(&s->ghost, gk) == g->pubs)
			map_del(&s->ghost, gk);
	}
}

/* The publications whose time has come arrive. */
void
deliver(struct sim *s, double now)
{
	struct flight *f;

	for (; (f = fifo_head(&s->flights)) != NULL && f->at <= now;
	    fifo_pop(&s->flights)) {
		arrive(s, f->from, &f->pub, f->at);
		sum_buf_free(&f->pub.payload);
	}
}

size_t
node_name(unsigned i, char *buf, size_t len)
{
	int n = snprintf(buf, len, "node%u", i);

	return n < 0 ? 0 : (size_t)n;
}

/* Sends publication pub of proxy i to each of the other live proxies, in the
 * real Signed envelope; it arrives after the delay. */
static void
send_summary(struct sim *s, unsigned i, struct publication *pub,
    double now)
{
	char sender[16];

	s->msg.len = 0;
	node_name(i, sender, sizeof(sender));
	if (wire_encode_publication(pub, sender, s->wire_key,
	    sizeof(s->wire_key), &s->msg) < 0)
		die("out of memory");
	s->px[i].pubs++;
	if (s->p.delay <= 0) {
		arrive(s, i, pub, now);
	} else {
		struct flight *f = fifo_push(&s->flights);
		*f = (struct flight){.at = now + s->p.delay, .from = i,
		    .pub = *pub};
		f->pub.payload = (struct sum_buf){0};
		if (sum_buf_put(&f->pub.payload, pub->payload.p,
		    pub->payload.len) < 0)
			die("out of memory");
	}
	pub->payload.len = 0;   /* the buffer is the sim's, reused */
	s->st.publications++;
	s->st.fulls += pub->full;
	s->st.messages += s->nlive - 1;
	s->st.bytes += (uint64_t)(s->nlive - 1) * s->msg.len;
	s->st.mean_entries_sum += pub->entries;
	s->st.bits_sum += (double)pub->m;
	s->st.mean_entries_n++;
}

void
publish(struct sim *s, unsigned i, double now)
{
	struct publication pub = {.payload = s->payload};

	if (pub_publish(s->px[i].pub, trace_ms(now), &pub) < 0)
		die("out of memory");
	send_summary(s, i, &pub, now);
	s->payload = pub.payload;
}

/* More objects than the filter was sized for, or (timed) a new base: the
 * publisher's rebuild,
 * with the walk over the whole cache done at once (the daemon spreads it
 * over loop turns; nothing arrives meanwhile here). */
void
rebuild(struct sim *s, unsigned i, double now)
{
	struct proxy *x = &s->px[i];
	struct publication pub = {.payload = s->payload};

	pub_rebuild_begin(x->pub, trace_ms(now) * 1000, trace_ms(now));
	while (!pub_rebuild_step(x->pub, SIZE_MAX))
		;
	int rc = pub_rebuild_end(x->pub, trace_ms(now), &pub);
	if (rc <= 0)
		die("out of memory");
	s->st.rebuilds++;
	send_summary(s, i, &pub, now);
	s->payload = pub.payload;
}

/* Was obj in what proxy i last published? */
bool
in_view(const struct sim *s, unsigned i, uint32_t obj)
{
	uint32_t e = map_get(&s->cache, map_key(i, obj));

	if (e != NIL && s->e[e].pub_seq < s->px[i].arrived)
		return true;
	/* evicted, or stored again since, with the removal not arrived */
	uint32_t g = map_get(&s->ghost, map_key(i, obj));
	return g != NIL && s->px[i].arrived <= g;
}
