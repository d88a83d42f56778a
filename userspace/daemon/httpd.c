// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "daemon/httpd.h"
#include "util/clock.h"
#include "util/listen.h"
#include "util/log.h"
#include "util/prom.h"

/* Out of fds: how long the listening socket is left alone before accepting again. */
#define ACCEPT_PAUSE_MS		100

struct hconn {
	struct eg_httpd *h;
	int fd;
	struct eg_watch *w;
	char in[HTTPD_MAX_REQUEST];
	size_t inlen;
	struct sbuf out;
	size_t off;
	uint64_t deadline;
	bool replied;
	bool draining;			/* answered: reading what is left until the peer closes */
	size_t drained;
	struct hconn *prev, *next;
};

struct eg_httpd {
	struct eg_loop *loop;
	int fd;
	struct eg_watch *w, *tick;
	bool warned_fds;
	httpd_render_fn render;
	void *arg;
	struct hconn *conns;
	unsigned int nconns;
	uint64_t requests, rejected;
};

/* ---- addresses ------------------------------------------------------------ */

int httpd_parse_addr(const char *spec, struct httpd_addr *ret, char *err, size_t errlen)
{
	char host[64];
	const char *colon, *port;
	unsigned long p;
	char *end;

	memset(ret, 0, sizeof(*ret));
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb || rb[1] != ':' || (size_t)(rb - spec - 1) >= sizeof(host)) {
			snprintf(err, errlen, "'%s': an IPv6 address is written [ADDR]:PORT", spec);
			return -EINVAL;
		}
		memcpy(host, spec + 1, rb - spec - 1);
		host[rb - spec - 1] = '\0';
		port = rb + 2;
	} else {
		colon = strrchr(spec, ':');
		if (!colon) {
			snprintf(err, errlen, "'%s': give ADDR:PORT, e.g. 127.0.0.1:9464", spec);
			return -EINVAL;
		}
		if ((size_t)(colon - spec) >= sizeof(host)) {
			snprintf(err, errlen, "'%s': the address is too long", spec);
			return -EINVAL;
		}
		memcpy(host, spec, colon - spec);
		host[colon - spec] = '\0';
		port = colon + 1;
		if (strchr(host, ':')) {
			snprintf(err, errlen, "'%s': an IPv6 address is written [ADDR]:PORT", spec);
			return -EINVAL;
		}
	}
	if (!host[0] || !strcmp(host, "*")) {
		snprintf(err, errlen, "'%s': spell the address (127.0.0.1:PORT for this host only; "
			 "0.0.0.0:PORT if every interface is really meant)", spec);
		return -EINVAL;
	}
	errno = 0;
	p = strtoul(port, &end, 10);
	if (!*port || *end || errno || p == 0 || p > 65535) {
		snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535", spec);
		return -EINVAL;
	}
	if (!strcmp(host, "localhost"))
		snprintf(host, sizeof(host), "127.0.0.1");
	if (strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ret->ss;

		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto not_ip;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(p);
		ret->len = sizeof(*s6);
		ret->loopback = IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
				(IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && s6->sin6_addr.s6_addr[12] == 127);
		snprintf(ret->text, sizeof(ret->text), "[%s]:%lu", host, p);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ret->ss;

		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			goto not_ip;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(p);
		ret->len = sizeof(*s4);
		ret->loopback = (ntohl(s4->sin_addr.s_addr) >> 24) == 127;
		snprintf(ret->text, sizeof(ret->text), "%s:%lu", host, p);
	}
	return 0;
not_ip:
	snprintf(err, errlen, "'%s': '%s' is not an IP address (names other than localhost are not looked up)",
		 spec, host);
	return -EINVAL;
}

/* ---- connections ------------------------------------------------------- */

static void conn_close(struct hconn *c)
{
	struct eg_httpd *h = c->h;

	loop_del(c->w);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		h->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	h->nconns--;
	sbuf_free(&c->out);
	free(c);
}

static void respond(struct hconn *c, int code, const char *reason, const char *extra_headers,
		    const char *body, size_t len, bool head_only)
{
	sbuf_printf(&c->out, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n%s\r\n", code, reason,
		    code == 200 ? PROM_CONTENT_TYPE : "text/plain; charset=utf-8", len,
		    extra_headers ? extra_headers : "");
	if (!head_only)
		sbuf_put(&c->out, body, len);
	c->replied = true;
	if (code == 200)
		c->h->requests++;
	else
		c->h->rejected++;
	loop_mod_fd(c->w, EPOLLOUT);
}

static void error_reply(struct hconn *c, int code, const char *reason, const char *extra)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "%d %s\n", code, reason);

	respond(c, code, reason, extra, body, n, false);
}

static bool head_complete(const char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n'))
			return true;
	}
	return false;
}

static bool word_is(const char *p, size_t n, const char *w)
{
	return n == strlen(w) && !memcmp(p, w, n);
}

int httpd_parse_request(const char *buf, size_t len, bool *ret_head)
{
	const char *eol, *sp1, *sp2, *target, *version;
	size_t n, tlen;

	*ret_head = false;
	if (!head_complete(buf, len))
		return len >= HTTPD_MAX_REQUEST ? 431 : 0;
	/* the request line: METHOD SP TARGET SP HTTP/1.x */
	eol = memchr(buf, '\n', len);
	n = eol - buf;
	if (n && buf[n - 1] == '\r')
		n--;
	if (memchr(buf, '\0', n))
		return 400;
	sp1 = memchr(buf, ' ', n);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (sp1 + 1 - buf)) : NULL;
	if (!sp1 || !sp2)
		return 400;
	version = sp2 + 1;
	if ((size_t)(buf + n - version) != 8 || memcmp(version, "HTTP/1.", 7) ||
	    (version[7] != '0' && version[7] != '1'))
		return 400;
	target = sp1 + 1;
	tlen = sp2 - target;
	*ret_head = word_is(buf, sp1 - buf, "HEAD");
	if (!*ret_head && !word_is(buf, sp1 - buf, "GET"))
		return 405;
	if (!word_is(target, tlen, "/metrics") && !(tlen > 9 && !memcmp(target, "/metrics?", 9)))
		return 404;
	return 200;
}

static void handle(struct hconn *c, int code, bool head)
{
	switch (code) {
	case 200: {
		struct sbuf body = {};

		c->h->render(&body, c->h->arg);
		if (body.oom)
			error_reply(c, 500, "Internal Server Error", NULL);
		else
			respond(c, 200, "OK", NULL, body.data, body.len, head);
		sbuf_free(&body);
		break;
	}
	case 404: error_reply(c, 404, "Not Found", NULL); break;
	case 405: error_reply(c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n"); break;
	case 431: error_reply(c, 431, "Request Header Fields Too Large", NULL); break;
	default: error_reply(c, 400, "Bad Request", NULL); break;
	}
}

static void on_conn(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct hconn *c = arg;
	bool head;
	int code;

	(void)w;
	if (!c->replied && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		ssize_t n = recv(fd, c->in + c->inlen, sizeof(c->in) - c->inlen, MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			c->h->rejected++;
			conn_close(c);
			return;
		}
		c->inlen += n;
		code = httpd_parse_request(c->in, c->inlen, &head);
		if (code)
			handle(c, code, head);
		return;
	}
	if (c->draining) {
		/*
		 * Closing with unread bytes would reset the connection and could
		 * destroy the answer on its way: read (a bounded amount) until the
		 * peer closes, or the connection's deadline.
		 */
		char sink[4096];
		ssize_t n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		c->drained += n > 0 ? n : 0;
		if (n <= 0 || c->drained > 65536)
			conn_close(c);
		return;
	}
	if (c->replied && (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
		while (c->off < c->out.len) {
			ssize_t n = send(fd, c->out.data + c->off, c->out.len - c->off,
					 MSG_NOSIGNAL | MSG_DONTWAIT);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return;
			if (n <= 0) {
				conn_close(c);
				return;
			}
			c->off += n;
		}
		/* all sent: the end of our side, then wait for the peer's */
		shutdown(fd, SHUT_WR);
		c->draining = true;
		loop_mod_fd(c->w, EPOLLIN | EPOLLRDHUP);
	}
}

/* Out of fds: the listening socket stays readable; leave it alone for a while. */
static void pause_accept(struct eg_httpd *h)
{
	if (!h->warned_fds) {
		p_warn("--metrics-listen: %s; accepting again every %d ms until fds are closed "
		       "(raise RLIMIT_NOFILE, LimitNOFILE= in the unit)", strerror(errno), ACCEPT_PAUSE_MS);
		h->warned_fds = true;
	}
	loop_pause_fd(h->w, EPOLLIN, ACCEPT_PAUSE_MS);
}

/*
 * Full: the oldest connection that has not sent its request, or whose
 * answer is all sent, makes room (a peer that connects and waits, or does
 * not close, does not lock the scrapes out); one still being sent its
 * answer is kept.
 */
static bool make_room(struct eg_httpd *h)
{
	struct hconn *c, *victim = NULL;

	if (h->nconns < HTTPD_MAX_CONNS)
		return true;
	for (c = h->conns; c; c = c->next)	/* the newest first */
		if (!c->replied || c->draining)
			victim = c;
	if (!victim)
		return false;
	if (!victim->replied)
		h->rejected++;
	conn_close(victim);
	return true;
}

static void on_listen(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct eg_httpd *h = arg;
	int i;

	(void)w;
	(void)events;
	for (i = 0; i < 16; i++) {
		struct hconn *c;
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pause_accept(h);
			return;
		}
		if (!make_room(h) || !(c = calloc(1, sizeof(*c)))) {
			h->rejected++;
			close(cfd);
			continue;
		}
		c->h = h;
		c->fd = cfd;
		c->deadline = eg_mono_ms() + HTTPD_TIMEOUT_MS;
		if (loop_add_fd(h->loop, cfd, EPOLLIN | EPOLLRDHUP, on_conn, c, &c->w)) {
			close(cfd);
			free(c);
			continue;
		}
		c->next = h->conns;
		if (h->conns)
			h->conns->prev = c;
		h->conns = c;
		h->nconns++;
	}
}

static void on_tick(struct eg_watch *w, uint64_t n, void *arg)
{
	struct eg_httpd *h = arg;
	struct hconn *c, *next;
	uint64_t now = eg_mono_ms();

	(void)w;
	(void)n;
	for (c = h->conns; c; c = next) {
		next = c->next;
		if (now > c->deadline) {
			if (!c->replied)
				h->rejected++;
			conn_close(c);
		}
	}
}

int httpd_new(struct eg_loop *loop, const struct httpd_addr *a, httpd_render_fn render, void *arg,
	      struct eg_httpd **ret)
{
	struct eg_httpd *h = calloc(1, sizeof(*h));
	int err;

	if (!h)
		return -ENOMEM;
	h->loop = loop;
	h->render = render;
	h->arg = arg;
	h->fd = eg_listen((const struct sockaddr *)&a->ss, a->len, 16, 0);
	if (h->fd < 0) {
		err = h->fd;
		free(h);
		return err;
	}
	err = loop_add_fd(loop, h->fd, EPOLLIN, on_listen, h, &h->w);
	if (!err)
		err = loop_pausable(h->w);
	if (!err)
		err = loop_add_timer(loop, 1000, 1000, on_tick, h, &h->tick);
	if (err)
		goto fail;
	*ret = h;
	return 0;
fail:
	loop_del(h->w);
	loop_del(h->tick);
	close(h->fd);
	free(h);
	return err;
}

void httpd_free(struct eg_httpd *h)
{
	if (!h)
		return;
	while (h->conns)
		conn_close(h->conns);
	loop_del(h->w);
	loop_del(h->tick);
	close(h->fd);
	free(h);
}

void httpd_stats(const struct eg_httpd *h, uint64_t *ret_requests, uint64_t *ret_rejected)
{
	*ret_requests = h->requests;
	*ret_rejected = h->rejected;
}
