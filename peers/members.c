/*
 * Who the peers are: peer lines checked and resolved (at start and at a
 * reload, which adds, keeps and retires them), peers found through
 * peer_dns (known by their address until a signed message names them;
 * the one that is this node left out), and which peer a message's
 * sender is. table.c keeps the table these change, and its rules and
 * lock (every peers_* here takes it).
 */
#include "peers_impl.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/util.h>

/* host, port, addr and proxy_url from a resolved address. */
void
set_endpoint(struct peer *p, const struct sockaddr *sa, socklen_t len)
{
	memcpy(&p->addr, sa, len);
	p->addrlen = len;
	bool v6 = sa->sa_family == AF_INET6;
	if (p->spec.host[0] == '\0')
		evutil_inet_ntop(sa->sa_family, v6 ?
		    (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr :
		    (const void *)&((const struct sockaddr_in *)sa)->sin_addr,
		    p->spec.host, sizeof(p->spec.host));
	p->spec.port = addr_port(&p->addr);
	v6 = strchr(p->spec.host, ':') != NULL;
	snprintf(p->proxy_url, sizeof(p->proxy_url), PEER_URL_SCHEME
	    "%s%s%s:%u", v6 ? "[" : "", p->spec.host, v6 ? "]" : "",
	    p->spec.port);
}

/* A found peer is called by its address until it names itself (node
 * names cannot hold ':' or '[', so this is never somebody's name). */
static void
unname(struct peer *p)
{
	bool v6 = strchr(p->spec.host, ':') != NULL;

	snprintf(p->spec.name, sizeof(p->spec.name), "%s%.46s%s:%u",
	    v6 ? "[" : "", p->spec.host, v6 ? "]" : "", p->spec.port);
	p->named = false;
}

void
retire(struct peers *ps, size_t i, const char *why)
{
	struct peer *p = ps->v[i];

	if (!p->self)
		fprintf(stderr, "sumcache: peer %s (%s:%u) leaves: %s\n",
		    p->spec.name, p->spec.host, p->spec.port, why);
	memmove(&ps->v[i], &ps->v[i + 1], (ps->n - i - 1) * sizeof(*ps->v));
	ps->n--;
	p->retired = true;
	p->up = false;
	exchange_drop_queue(p);
	psum_free(&p->sum);
	fold_traffic(ps, p);
	peer_put(&p);
}

/* Whether p is the found peer at a (address and port). */
static bool
found_at(const struct peer *p, const struct sockaddr_storage *a)
{
	return p->found && same_addr((const struct sockaddr *)a, &p->addr) &&
	    addr_port(a) == p->spec.port;
}

static void found(struct peers *ps, const struct peer_spec *tmpl,
    const struct sockaddr_storage *addrs, size_t n);

void
peers_found(struct peers *ps, const struct peer_spec *tmpl,
    const struct sockaddr_storage *addrs, size_t n)
{
	peers_enter(ps);
	found(ps, tmpl, addrs, n);
	peers_leave(ps);
}

static void
found(struct peers *ps, const struct peer_spec *tmpl,
    const struct sockaddr_storage *addrs, size_t n)
{
	/* leavers first, so their places go to newcomers */
	for (size_t i = ps->n; i-- > 0;) {
		bool listed = false;
		for (size_t j = 0; j < n && !listed; j++)
			listed = found_at(ps->v[i], &addrs[j]);
		if (ps->v[i]->found && !listed)
			retire(ps, i, "no longer in DNS");
	}
	for (size_t j = 0; j < n; j++) {
		struct peer *known = NULL;
		for (size_t i = 0; i < ps->n && known == NULL; i++)
			if (found_at(ps->v[i], &addrs[j]))
				known = ps->v[i];
		if (known != NULL) {
			/* a reload may have changed the line's options */
			known->spec.proxy_only = tmpl->proxy_only;
			known->spec.weight = tmpl->weight;
			continue;
		}
		if (ps->n == PEERS_MAX) {
			fprintf(stderr, "sumcache: peer_dns: %zu addresses, "
			    "room for %d peers; the rest are left out\n", n,
			    PEERS_MAX);
			return;
		}
		struct peer *p = table_add(ps);
		if (p == NULL)
			return;
		p->spec = *tmpl;
		p->spec.host[0] = '\0';
		p->found = true;
		set_endpoint(p, (const struct sockaddr *)&addrs[j],
		    addrs[j].ss_family == AF_INET6 ?
		    sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
		unname(p);
		fprintf(stderr, "sumcache: peer %s found through DNS\n",
		    p->spec.name);
		/* pulled on the next probe */
	}
}

/*
 * A found peer's signed message says who it is: this node itself (DNS
 * lists every member, us included), or a name it keeps from now on. A
 * name held by another found peer moves here: the node behind it has a
 * new address. A configured peer's name is refused. False when p is not
 * a peer to use under that name.
 */
bool
name_found(struct peers *ps, struct peer *p, const char *sender)
{
	if (strcmp(sender, ps->conf.node_name) == 0) {
		if (!p->self)
			fprintf(stderr, "sumcache: peer %s is this node; left "
			    "out\n", p->spec.name);
		p->self = true;
		p->up = false;
		exchange_drop_queue(p);
		return false;
	}
	if (p->named && strcmp(p->spec.name, sender) == 0)
		return true;
	struct peer *holder = by_name(ps, sender);
	if (holder != NULL && !holder->found)
		return false;
	if (holder != NULL)
		unname(holder);
	fprintf(stderr, "sumcache: peer %s is %s\n", p->spec.name, sender);
	snprintf(p->spec.name, sizeof(p->spec.name), "%s", sender);
	p->named = true;
	return true;
}

/*
 * The peer at from that signed as sender. A configured peer must use its
 * peer line's name (peers on one host share an address, so the name
 * decides); a found one is known by its address and names itself.
 */
struct peer *
sender_peer(struct peers *ps, const struct sockaddr *from,
    const char *sender)
{
	struct peer *p = by_name(ps, sender);

	if (p != NULL && same_addr(from, &p->addr))
		return p->spec.type == PEER_SUMCACHE ? p : NULL;
	for (size_t i = 0; i < ps->n; i++) {
		p = ps->v[i];
		if (p->found && same_addr(from, &p->addr))
			return name_found(ps, p, sender) ? p : NULL;
	}
	return NULL;
}

/* The rules between peer lines: none takes this node's name or another
 * line's. */
int
check_specs(const char *node_name, const struct peer_spec *specs, size_t n,
    char *err, size_t elen)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(specs[i].name, node_name) == 0) {
			snprintf(err, elen, "peer %s has this node's own name",
			    specs[i].name);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(specs[j].name, specs[i].name) == 0) {
				snprintf(err, elen, "peer %s listed twice",
				    specs[i].name);
				return -1;
			}
	}
	return 0;
}

/* A Squid peer's digest is keyed by Squid's MD5: its hasher, made once
 * the first such peer is listed, unless our own summaries use it. -1 on
 * ENOMEM. */
int
want_md5(struct peers *ps, const struct peer_spec *specs, size_t n)
{
	for (size_t i = 0; i < n && ps->md5 == NULL &&
	    ps->conf.publish.scheme != SUM_SQUID_MD5; i++)
		if (specs[i].type == PEER_SQUID_DIGEST &&
		    (ps->md5 = sumkey_hasher_new(SUM_SQUID_MD5)) == NULL)
			return -1;
	return 0;
}

int
resolve(struct peer *p, char *err, size_t elen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
	char port[8];

	snprintf(port, sizeof(port), "%u", p->spec.port);
	int rc = getaddrinfo(p->spec.host, port, &hints, &res);
	if (rc != 0) {
		snprintf(err, elen, "peer %s: cannot resolve %s: %s",
		    p->spec.name, p->spec.host, gai_strerror(rc));
		return -1;
	}
	set_endpoint(p, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static bool
same_spec(const struct peer_spec *a, const struct peer_spec *b)
{
	return strcmp(a->name, b->name) == 0 && strcmp(a->host, b->host) ==
	    0 && a->port == b->port && a->icp_port == b->icp_port &&
	    a->type == b->type && a->proxy_only == b->proxy_only;
}

static int reconfigure(struct peers *ps, const struct peers_conf *conf,
    const struct peer_spec *specs, size_t n, char *err, size_t elen);

int
peers_reconfigure(struct peers *ps, const struct peers_conf *conf,
    const struct peer_spec *specs, size_t n, char *err, size_t elen)
{
	peers_enter(ps);
	int rc = reconfigure(ps, conf, specs, n, err, elen);
	peers_leave(ps);
	return rc;
}

static int
reconfigure(struct peers *ps, const struct peers_conf *conf,
    const struct peer_spec *specs, size_t n, char *err, size_t elen)
{
	struct peer **fresh = calloc(n ? n : 1, sizeof(*fresh));
	size_t nfresh = 0;

	if (fresh == NULL)
		goto nomem;
	/* checked and resolved before anything changes: a refusal leaves
	 * the table as it was */
	if (check_specs(ps->conf.node_name, specs, n, err, elen) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		bool kept = false;
		for (size_t j = 0; j < ps->n && !kept; j++)
			kept = !ps->v[j]->found &&
			    same_spec(&ps->v[j]->spec, &specs[i]);
		if (kept)
			continue;  /* a new weight is taken below */
		struct peer *p = peer_alloc(ps);
		if (p == NULL)
			goto nomem;
		fresh[nfresh++] = p;
		p->spec = specs[i];
		if (resolve(p, err, elen) < 0)
			goto fail;
	}
	if (want_md5(ps, specs, n) < 0)
		goto nomem;
	for (size_t i = ps->n; i-- > 0;) {
		bool listed = ps->v[i]->found;
		for (size_t j = 0; j < n && !listed; j++)
			listed = same_spec(&ps->v[i]->spec, &specs[j]);
		if (!listed)
			retire(ps, i, "no longer configured");
	}
	if (table_reserve(ps, nfresh) < 0)
		goto nomem;
	for (size_t i = 0; i < nfresh; i++) {
		struct peer *p = fresh[i];
		/* as at start: a Squid is up until a fetch from it fails, a
		 * sumcache once its summary arrives (pulled at the next
		 * probe); under ICP, up until it stops answering */
		p->up = !ps->conf.summaries || p->spec.type ==
		    PEER_SQUID_DIGEST;
		table_insert(ps, p);
		fprintf(stderr, "sumcache: peer %s (%s:%u) joins\n",
		    p->spec.name, p->spec.host, p->spec.port);
	}
	free(fresh);
	/* a kept peer's weight is the line's: same_spec leaves it out, so
	 * a new weight keeps the peer's summary and counts */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ps->n; j++)
			if (!ps->v[j]->found && same_spec(&ps->v[j]->spec,
			    &specs[i]))
				ps->v[j]->spec.weight = specs[i].weight;
	ps->conf.connect_timeout_ms = conf->connect_timeout_ms;
	ps->conf.timeout_ms = conf->timeout_ms;
	exchange_set_pace(ps, conf->publish.threshold,
	    conf->publish.max_interval_ms);
	return 0;
nomem:
	snprintf(err, elen, "out of memory");
fail:
	for (size_t i = 0; i < nfresh; i++)
		free(fresh[i]);
	free(fresh);
	return -1;
}
