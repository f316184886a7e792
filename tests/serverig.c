/* The socketless node of the serve/ unit tests; see serverig.h. */
#include "serverig.h"

#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "accept.h"
#include "busy.h"
#include "client.h"
#include "reload.h"
#include "server.h"
#include "store.h"
#include "url.h"

/* A port nobody listens on now: the node binds it but is never asked. */
static int
free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	cr_assert(fd >= 0);
	cr_assert(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	close(fd);
	return ntohs(a.sin_port);
}

void
srig_start(struct srig *r, const char *const *ovr)
{
	static char listen[64];
	static char *argv[32];
	int n = 0;
	char err[1024];

	memset(r, 0, sizeof(*r));
	snprintf(listen, sizeof(listen), "http_listen=127.0.0.1:%d",
	    free_port());
	argv[n++] = listen;
	argv[n++] = "access_log=none";
	for (; ovr != NULL && *ovr != NULL && n < 31; ovr++)
		argv[n++] = (char *)*ovr;
	r->s.conf_src = (struct server_conf_src){NULL, argv, n};
	cr_assert(reload_read_conf(&r->s.conf, &r->s.conf_src, NULL, err,
	    sizeof(err)) >= 0, "%s", err);
	cr_assert(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK);
	cr_assert(accept_plan(&r->s, 1) == 0);
	cr_assert(server_init(&r->s, 1) == 0);

	struct bufferevent *pair[2];
	cr_assert(bufferevent_pair_new(r->s.home->base, 0, pair) == 0);
	struct sockaddr_in from = {.sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert(accept_slot_take(&r->s));
	cr_assert(client_attach(r->s.home, pair[1], (struct sockaddr *)&from));
	r->user = pair[0];
	bufferevent_enable(r->user, EV_READ | EV_WRITE);
}

void
srig_stop(struct srig *r)
{
	bufferevent_free(r->user);
	srig_run(r, 5);
	server_fini(&r->s);
	curl_global_cleanup();
}

void
srig_send(struct srig *r, const char *text)
{
	cr_assert(bufferevent_write(r->user, text, strlen(text)) == 0);
}

void
srig_run(struct srig *r, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	event_base_loopexit(r->s.home->base, &tv);
	event_base_dispatch(r->s.home->base);
}

/* Whether in holds a whole answer; it is then taken into a. */
static bool
take_answer(struct evbuffer *in, struct srig_answer *a, bool head_only)
{
	struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);

	if (end.pos < 0)
		return false;
	size_t hlen = (size_t)end.pos + 4;
	cr_assert(hlen < sizeof(a->head));
	evbuffer_copyout(in, a->head, hlen);
	a->head[hlen] = '\0';
	cr_assert(sscanf(a->head, "HTTP/1.1 %d", &a->status) == 1);
	char v[32];
	size_t blen = 0;
	if (!head_only && a->status != 304 && a->status != 204 &&
	    srig_field(a, "content-length", v, sizeof(v)))
		blen = (size_t)strtoull(v, NULL, 10);
	if (evbuffer_get_length(in) < hlen + blen)
		return false;
	cr_assert(blen < sizeof(a->body));
	evbuffer_drain(in, hlen);
	evbuffer_remove(in, a->body, blen);
	a->body[blen] = '\0';
	a->body_len = blen;
	return true;
}

bool
srig_answer(struct srig *r, struct srig_answer *a, bool head_only)
{
	struct evbuffer *in = bufferevent_get_input(r->user);

	memset(a, 0, sizeof(*a));
	for (int i = 0; i < 400; i++) {
		if (take_answer(in, a, head_only))
			return true;
		srig_run(r, 5);
	}
	return false;
}

bool
srig_field(const struct srig_answer *a, const char *name, char *v,
    size_t vlen)
{
	size_t nl = strlen(name);

	for (const char *p = strstr(a->head, "\r\n"); p != NULL;
	    p = strstr(p + 2, "\r\n")) {
		const char *f = p + 2;
		if (strncasecmp(f, name, nl) != 0 || f[nl] != ':')
			continue;
		f += nl + 1;
		while (*f == ' ')
			f++;
		const char *e = strstr(f, "\r\n");
		snprintf(v, vlen, "%.*s", (int)(e - f), f);
		return true;
	}
	return false;
}

struct store_obj *
srig_object(const char *url, const char *head, const char *body,
    int64_t age, int64_t lifetime)
{
	struct url u;
	const char *why;
	struct store_meta m = {.status = 200, .lifetime = lifetime,
	    .response_time = time(NULL) - age, .initial_age = 0};
	struct store_body *b = store_body_new(strlen(body));

	cr_assert(url_parse_absolute(url, strlen(url), &u, &why) == 0, "%s",
	    why);
	cr_assert(b != NULL && store_body_append(&b, body, strlen(body)) == 0);
	struct store_obj *o = store_obj_new(u.norm, u.len, head, strlen(head),
	    "", 0, &m, b);
	cr_assert(o != NULL);
	store_body_unref(&b);
	url_clear(&u);
	return o;
}

struct busy *
srig_busy(struct srig *r, const char *url)
{
	struct txn leader;
	const char *why;

	memset(&leader, 0, sizeof(leader));
	leader.w = r->s.home;
	leader.is_get = true;
	leader.req.content_length = -1;
	cr_assert(url_parse_absolute(url, strlen(url), &leader.url, &why) ==
	    0);
	struct busy *b = busy_open(r->s.home, &leader);
	url_clear(&leader.url);
	cr_assert(b != NULL);
	return b;
}
