/*
 * A client's output: what a reply appends to it and how that is counted,
 * the class of work a long reply is for the loop, when every byte of it
 * has left this host, and the close after it (under TLS, once the
 * layer's last records are written). client.c is the rest of the
 * connection.
 */
#include "client.h"

#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "client_impl.h"
#include "clock.h"
#include "loop.h"
#include "sc_assert.h"
#include "tls.h"

struct evbuffer *
client_out(struct client *c)
{
	return bufferevent_get_output(c->bev);
}

void
client_set_bulk(struct client *c, bool bulk)
{
	/* refused while the event is active; the class is then the old one
	 * for this response, which costs fairness, not correctness */
	/* under TLS the class is the socket's (the layer's underlying
	 * bufferevent): the layer's own callbacks stay in the default one,
	 * or the socket's ready events would starve them for good */
	struct bufferevent *under = bufferevent_get_underlying(c->bev);

	if (c->bulk != bulk && bufferevent_priority_set(under != NULL ? under :
	    c->bev, bulk ? LOOP_PRIO_BULK : LOOP_PRIO_DEFAULT) == 0)
		c->bulk = bulk;
}

void
client_response_begins(struct client *c, long long length)
{
	if (length < 0 || length > CLIENT_BULK_MIN)
		client_set_bulk(c, true);
}

uint64_t
client_out_mark(struct client *c)
{
	/* the output drains only from the loop (a socket's writes, and a
	 * TLS layer's deferred callback), so between two marks taken in
	 * one callback it grew by what was appended */
	return evbuffer_get_length(client_out(c));
}

void
client_sent(struct txn *t, size_t n)
{
	t->bytes_out += n;
	METRIC_ADD(t->w->m.client_bytes_out, n);
}

static void
on_socket_drained(struct evbuffer *out, const struct evbuffer_cb_info *info,
    void *arg)
{
	(void)info;
	if (evbuffer_get_length(out) == 0)
		client_free(arg);
}

void
client_free_when_written(struct client *c, struct evbuffer *out)
{
	struct bufferevent *sock = bufferevent_get_underlying(c->bev);
	struct timeval wto = tv_ms(c->w->node->conf.idle_timeout_ms);

	/* deferred: the callback frees the socket, which must not happen
	 * inside libevent's write to it */
	evbuffer_defer_callbacks(out, c->w->base);
	if (evbuffer_get_length(out) == 0 ||
	    (c->linger = evbuffer_add_cb(out, on_socket_drained, c)) == NULL) {
		client_free(c);
		return;
	}
	/* the layer's timeouts watch its own output, which is empty */
	bufferevent_set_timeouts(sock, NULL, &wto);
}

/*
 * c is closing and everything it had to say is through its bufferevent.
 * A plain connection has then written it to the socket: it closes. A TLS
 * layer has only encrypted it into the socket's output, which a close
 * now would throw away (the reply of a "Connection: close" request was
 * lost so). The session ends with close_notify, without which a client
 * cannot tell a whole reply from a cut one (RFC 8446 6.1), and the socket
 * closes once its output is out, or at the write timeout.
 */
void
client_close_now(struct client *c)
{
	if (c->tls == NULL || c->bev == NULL) {
		client_free(c);
		return;
	}
	if (c->linger == NULL)
		client_free_when_written(c, tls_conn_close(c->bev));
}

/* Flush what is queued, then close. */
void
client_close_after_output(struct client *c)
{
	c->closing = true;
	evtimer_del(c->timer);
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
	/* inside the parse loop, the loop closes it on the way out */
	if (evbuffer_get_length(client_out(c)) == 0 && !c->in_loop)
		client_close_now(c);
}

bool
client_all_sent(struct client *c)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	int unsent = 0;

	/* no socket (the unit tests' pair): nothing but the buffer */
	return evbuffer_get_length(client_out(c)) == 0 && (fd < 0 ||
	    ioctl(fd, SIOCOUTQNSD, &unsent) < 0 || unsent == 0);
}

/* The socket has sent all it held (TCP_NOTSENT_LOWAT of 1 made it
 * writable only then), or failed (libevent reports an error or a hang-up
 * as writable, and the bytes stay unsent): back to the kernel's own
 * mark; the transaction goes on as at a drain, or the connection ends. */
static void
on_all_sent(evutil_socket_t fd, short what, void *arg)
{
	struct client *c = SC_CAST(struct client, arg, CLIENT_MAGIC);
	int dflt = 0, unsent = 0;

	(void)what;
	setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &dflt, sizeof(dflt));
	if (c->txn == NULL || c->closing)
		return;
	if (ioctl(fd, SIOCOUTQNSD, &unsent) < 0 || unsent > 0) {
		client_fail(c, CUT_ABORTED);
		return;
	}
	c->w->node->client_ops->drained(c->txn);
}

void
client_wait_all_sent(struct client *c)
{
	evutil_socket_t fd = bufferevent_getfd(c->bev);
	int one = 1;

	if (c->all_sent == NULL && (c->all_sent = event_new(c->w->base, fd,
	    EV_WRITE, on_all_sent, c)) == NULL) {
		client_fail(c, CUT_ABORTED);
		return;
	}
	/* the socket's own class: above it, a wait that is woken again and
	 * again would starve the socket's reads (its error, or hang-up) */
	(void)event_priority_set(c->all_sent, c->bulk ? LOOP_PRIO_BULK :
	    LOOP_PRIO_DEFAULT);
	setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &one, sizeof(one));
	event_add(c->all_sent, NULL);
	/* with its output empty the socket's write timeout is not armed: a
	 * client that stops reading is cut at idle_timeout (on_timer) */
	struct timeval tv = tv_ms(c->w->node->conf.idle_timeout_ms);
	evtimer_add(c->timer, &tv);
}

