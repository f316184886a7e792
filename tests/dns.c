/*
 * test-dns PORT ZONE: a DNS server on 127.0.0.1:PORT (UDP) for the
 * peer_dns tests, built on libevent's evdns server. ZONE holds lines
 * "NAME IPV4"; it is read again for every query, so a test changes what
 * a name resolves to by rewriting it. A name with no line is NXDOMAIN;
 * AAAA and other types of a known name get an empty answer.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/event.h>

static void
on_query(struct evdns_server_request *req, void *arg)
{
	const char *zone = arg;
	int known = 0;

	for (int i = 0; i < req->nquestions; i++) {
		const struct evdns_server_question *q = req->questions[i];
		char line[256], name[200], ip[64];
		FILE *f = fopen(zone, "r");
		while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
			struct in_addr a;
			if (sscanf(line, "%199s %63s", name, ip) != 2 ||
			    strcasecmp(name, q->name) != 0)
				continue;
			known = 1;
			if (q->type == EVDNS_TYPE_A &&
			    inet_pton(AF_INET, ip, &a) == 1)
				evdns_server_request_add_a_reply(req, q->name,
				    1, &a, 0);
		}
		if (f != NULL)
			fclose(f);
	}
	evdns_server_request_respond(req, known ? 0 : DNS_ERR_NOTEXIST);
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: test-dns PORT ZONE\n");
		return 2;
	}
	struct sockaddr_in sin = {.sin_family = AF_INET,
	    .sin_port = htons((uint16_t)atoi(argv[1]))};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    evutil_make_socket_nonblocking(fd) < 0) {
		perror("test-dns: bind");
		return 1;
	}
	struct event_base *base = event_base_new();
	if (base == NULL || evdns_add_server_port_with_base(base, fd, 0,
	    on_query, argv[2]) == NULL) {
		fprintf(stderr, "test-dns: cannot start\n");
		return 1;
	}
	event_base_dispatch(base);
	return 0;
}
