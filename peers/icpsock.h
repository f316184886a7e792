/*
 * ICP on one UDP socket, both ways (PROTOCOLS.md section 3).
 *
 *   - Server: a QUERY from a peer's address is answered HIT when the
 *     caller's lookup says the object stays fresh for the next 30 s, MISS
 *     otherwise, ERR for a URL it cannot parse; a sender that is no peer
 *     gets DENIED. Datagrams that do not decode are dropped and counted.
 *   - Client: on a miss, every live peer is asked; the first HIT wins, and
 *     when every live peer said no or the timeout passed the answer is "no
 *     peer". A peer that leaves three queries in a row unanswered is down;
 *     a down peer gets one query per 10 s and is up again when it answers.
 *
 * Queries are sent from the server's socket, so peers see them come from
 * the address they know us by (Squid does the same).
 */
#ifndef ICPSOCK_H
#define ICPSOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "icp.h"
#include "peers.h"

struct event_base;
struct evbuffer;
struct icpsock;
struct icp_ask;
struct inbox;

/* The server's question to the cache: ICP_OP_HIT, _MISS or _ERR. */
typedef enum icp_op icp_lookup_f(void *arg, const char *url, size_t len);

/*
 * Binds addr (UDP) on base's loop (home's), whose inbox is home: the
 * socket and the queries are that loop's. timeout_ms 0: 2 x the mean ICP
 * round trip of the live peers, clamped to [5 ms, 2 s], as Squid does.
 * NULL with the reason in err.
 */
struct icpsock *icpsock_new(struct event_base *base, struct inbox *home,
    struct peers *ps,
    const struct sockaddr *addr, socklen_t addrlen, uint32_t timeout_ms,
    icp_lookup_f *lookup, void *lookup_arg, char *err, size_t elen);
void icpsock_free(struct icpsock **is);
/* A reload's icp_timeout (0: from the peers' round trips). */
void icpsock_set_timeout(struct icpsock *is, uint32_t timeout_ms);

/* The peer that said HIT (held: peers_put it), or NULL. */
typedef void icp_answer_f(void *arg, struct peer *hit);

/*
 * Asks every live peer about url, from any worker's loop: the question
 * goes to home's, which sends the query, and answer(arg, hit) runs once
 * on the asker's loop, later (hit NULL too when no peer was live), unless
 * cancelled first. NULL (out of memory): go to the origin now.
 */
struct icp_ask *icpsock_ask(struct icpsock *is, const char *url, size_t len,
    icp_answer_f *answer, void *arg);
/* The asker's loop: no answer will run. Accepts NULL; clears *a. */
void icpsock_cancel(struct icp_ask **a);

/* sumcache_icp_* series. */
void icpsock_render_metrics(const struct icpsock *is, struct evbuffer *out);

#endif
