// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the HTTP API (userspace/api/): any bytes as a
 * client's, through libwebsockets' HTTP/1.1 and WebSocket parsing into the
 * API's callbacks, routes, token check, query filters, body and message
 * bounds and terminal controls. A connection is one end of a socketpair
 * adopted with the input waiting in it to be read; the daemon is a stub that
 * answers every call (a follow with two records, then its end).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <libwebsockets.h>
#include "api/internal.h"
#include "util/digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TOKEN "fuzz-token-0123456789"

static struct eg_api *a;
static struct lws_context *ctx;
static struct lws_vhost *vh;

static json_t *stub_call(struct eg_api *api, const struct ctl_peer *peer, const json_t *req, int *ret_fd,
			 char *err, size_t errlen)
{
	const char *op = json_string_value(json_object_get(req, "op"));

	(void)api;
	(void)err;
	(void)errlen;
	/* the API never speaks as root, and always names its token */
	if (!peer->api || !peer->uid || !peer->name[0])
		abort();
	if (!op)
		abort();
	if (ret_fd) {
		static const char lines[] = "{\"v\":1,\"type\":\"exec\",\"comm\":\"true\",\"session\":\"s-1\"}\n"
					    "{\"v\":1,\"type\":\"exec_failed\",\"comm\":\"x\"}\n";
		int p[2];

		if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
			return NULL;
		if (write(p[1], lines, sizeof(lines) - 1) < 0) {
			close(p[0]);
			close(p[1]);
			return NULL;
		}
		close(p[1]);
		*ret_fd = p[0];
		return json_pack("{s:b}", "ok", 1);
	}
	if (!strcmp(op, "ps"))
		return json_pack("{s:b,s:[{s:s,s:s,s:i}]}", "ok", 1, "processes", "id", "p-1", "status", "exited 0",
				 "exit_code", 0);
	if (!strcmp(op, "log"))
		return json_pack("{s:b,s:s,s:i,s:b}", "ok", 1, "data_b64", "aGkK", "next_offset", 3, "running", 0);
	if (!strcmp(op, "approve"))
		return json_pack("{s:b,s:s}", "ok", 0, "error", "no pending approval a-1");
	return json_pack("{s:b}", "ok", 1);
}

static int stub_pty_fd(struct eg_api *api, const char *id)
{
	(void)api;
	if (strcmp(id, "p-1"))
		return -ESRCH;
	return open("/dev/null", O_RDWR | O_CLOEXEC);
}

static int stub_place(int tasks_fd, int sockfd, bool *ret_placed, uint32_t *ret_session)
{
	(void)tasks_fd;
	(void)sockfd;
	*ret_placed = true;	/* outside every session: the routes are reached */
	*ret_session = 0;
	return 0;
}

static int init(void)
{
	a = calloc(1, sizeof(*a));
	if (!a)
		return -1;
	a->call = stub_call;
	a->pty_fd = stub_pty_fd;
	a->place = stub_place;
	a->o.run_as_set = true;
	a->o.run_as_uid = a->o.run_as_gid = 65534;
	a->o.tasks_fd = -1;
	a->listen_fd = -1;
	snprintf(a->addr, sizeof(a->addr), "127.0.0.1");
	snprintf(a->tok[0].name, sizeof(a->tok[0].name), "fuzz");
	eg_sha256(TOKEN, strlen(TOKEN), a->tok[0].sha);
	a->ntok = 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[65536];
	int sv[2], i;

	if (!a && init())
		abort();
	if (size > 2 * API_MAX_HEADER)
		size = 2 * API_MAX_HEADER;
	/* a context each input: a stream still open at its end goes with it */
	ctx = api_context_new(a, false);
	vh = ctx ? lws_get_vhost_by_name(ctx, "execgate") : NULL;
	if (!vh)
		abort();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv)) {
		lws_context_destroy(ctx);
		return 0;
	}
	/* what the client sent waits in the socket, as it would on TCP */
	if ((size && write(sv[1], data, size) != (ssize_t)size) || !lws_adopt_socket_vhost(vh, sv[0])) {
		close(sv[1]);
		lws_context_destroy(ctx);
		return 0;
	}
	for (i = 0; i < 16; i++) {
		lws_service(ctx, -1);
		while (read(sv[1], buf, sizeof(buf)) > 0)
			;
	}
	close(sv[1]);
	for (i = 0; i < 4 && a->nconns; i++)
		lws_service(ctx, -1);
	lws_context_destroy(ctx);
	/* every connection went, and with it what it held (LeakSanitizer checks) */
	if (a->nconns)
		abort();
	return 0;
}
