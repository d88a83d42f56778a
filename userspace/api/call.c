// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Calls from the API's thread to the daemon: each is a control-socket
 * request (docs/control.md) on a socketpair whose other end the control
 * server serves as a connection of the API's peer (ctl_server_adopt,
 * under the loop's lock). So every op, its checks and its bounds are the
 * socket's own; a stream (follow) stays open and is read as it comes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <libwebsockets.h>
#include "api/internal.h"
#include "util/json.h"
#include "loop/loop.h"
#include "procs/procs.h"
#include "util/clock.h"

/*
 * Reads one line from fd within ms (the API's stop ends the wait). exact:
 * nothing past its '\n' is taken (a stream's lines that follow stay in
 * the socket for their reader).
 */
static int read_line(struct eg_api *a, int fd, struct sbuf *b, size_t max, int ms, bool exact)
{
	uint64_t end = eg_mono_ms() + ms;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		char *nl = b->len ? memchr(b->data, '\n', b->len) : NULL;
		ssize_t n;

		if (nl)
			return (int)(nl - b->data);
		if (b->len > max)
			return -E2BIG;
		if (a->stop || eg_mono_ms() >= end)
			return -ETIMEDOUT;
		if (poll(&pf, 1, 200) <= 0)
			continue;
		if (sbuf_reserve(b, 65536))
			return -ENOMEM;
		n = recv(fd, b->data + b->len, 65536, exact ? MSG_PEEK : 0);
		if (n > 0 && exact) {
			char *e = memchr(b->data + b->len, '\n', n);

			n = recv(fd, b->data + b->len, e ? (size_t)(e + 1 - (b->data + b->len)) : (size_t)n, 0);
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		b->len += n;
	}
}

json_t *call_ctl(struct eg_api *a, const struct ctl_peer *peer, const json_t *req, int *ret_fd,
		 char *err, size_t errlen)
{
	struct sbuf in = {};
	json_t *reply = NULL;
	char *line;
	int sv[2], rc, n;
	size_t len;

	line = json_dumps(req, JSON_COMPACT);
	if (!line || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		snprintf(err, errlen, "cannot reach the daemon: %s", line ? strerror(errno) : "out of memory");
		free(line);
		return NULL;
	}
	loop_lock(a->o.loop);
	rc = ctl_server_adopt(a->o.ctl, sv[0], peer);
	loop_unlock(a->o.loop);
	if (rc) {
		snprintf(err, errlen, "the daemon takes no more connections (%s)", strerror(-rc));
		goto fail;
	}
	len = strlen(line);
	line[len] = '\n';
	if (write(sv[1], line, len + 1) != (ssize_t)len + 1) {
		snprintf(err, errlen, "cannot reach the daemon: %s", strerror(errno));
		goto fail;
	}
	/* one answer: the daemon closes after it */
	if (!ret_fd)
		shutdown(sv[1], SHUT_WR);
	n = read_line(a, sv[1], &in, 16u << 20, API_CALL_MS, ret_fd != NULL);
	if (n < 0) {
		snprintf(err, errlen, "the daemon did not answer: %s", strerror(-n));
		goto fail;
	}
	/*
	 * Records and approvals carry bytes that are not UTF-8 as \udcXX,
	 * which jansson refuses: read as U+FFFD, as `query` reads them (one
	 * such approval made the whole listing fail, and the page showed
	 * none of them).
	 */
	reply = json_load_record(in.data, n);
	if (!json_is_object(reply)) {
		snprintf(err, errlen, "the daemon's answer is not a JSON object");
		json_decref(reply);
		reply = NULL;
		goto fail;
	}
	if (ret_fd) {
		/* what came after the first line is the stream's: kept for its reader */
		fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
		*ret_fd = sv[1];
		sv[1] = -1;
	}
fail:
	if (sv[1] >= 0)
		close(sv[1]);
	free(line);
	sbuf_free(&in);
	return reply;
}

int call_pty_fd(struct eg_api *a, const char *id)
{
	int fd;

	if (!a->o.procs)
		return -ENOTTY;
	loop_lock(a->o.loop);
	fd = procs_pty_fd(a->o.procs, id, a->o.run_as_set ? a->o.run_as_uid : 65534);
	loop_unlock(a->o.loop);
	return fd;
}

void call_peer(struct eg_api *a, struct lws *wsi, const struct api_conn *c, bool place, struct ctl_peer *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->pid = getpid();
	/* never root: without --api-run-as, nobody's (who has no runs) */
	ret->uid = a->o.run_as_set ? a->o.run_as_uid : 65534;
	ret->gid = a->o.run_as_set ? a->o.run_as_gid : 65534;
	ret->admin = true;	/* approvals and follow; the routes offer nothing else of admin's */
	ret->api = true;
	snprintf(ret->name, sizeof(ret->name), "%s", c->token);
	/* placed once, when the request's token was checked (server.c: a peer in a session got 403) */
	(void)place;
	(void)wsi;
	ret->api_placed = c->placed;
	ret->api_session = c->session;
}

int call_stream_read(struct api_conn *c, void (*fn)(struct api_conn *c, const char *line, size_t len))
{
	int reads;

	if (c->stream_fd < 0)
		return 1;
	for (reads = 0; reads < 16; reads++) {
		ssize_t n;
		size_t off = 0;
		char *nl;

		if (sbuf_reserve(&c->in, 65536))
			return -ENOMEM;
		n = read(c->stream_fd, c->in.data + c->in.len, 65536);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0) {
			close(c->stream_fd);
			c->stream_fd = -1;
			return 1;
		}
		c->in.len += n;
		while ((nl = memchr(c->in.data + off, '\n', c->in.len - off))) {
			fn(c, c->in.data + off, nl - (c->in.data + off));
			off = nl + 1 - c->in.data;
		}
		memmove(c->in.data, c->in.data + off, c->in.len - off);
		c->in.len -= off;
		/* a client that does not read makes us stop reading; the daemon then drops the stream */
		if (c->out.len - c->out_off > API_MAX_QUEUED / 2)
			return 0;
	}
	return 0;
}
