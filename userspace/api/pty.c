// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A run's terminal over WebSocket (GET /v1/runs/ID/pty, seed 002's
 * shape): binary messages are bytes for the terminal, typed or pasted;
 * text messages are JSON controls, {"type":"resize","rows":R,"cols":C}
 * and {"type":"signal","signal":"INT"}. The server sends the terminal's
 * output as binary messages, from the run's log (so what an earlier
 * client or `execgate log` read is not taken from it; ?offset= picks
 * where to start, the end of what is kept by default... no: its start),
 * and {"type":"exit","status":...,"exit_code":N,"signal":null} when the
 * run has ended and its output is all sent, then closes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <libwebsockets.h>
#include "api/internal.h"
#include "util/b64.h"

static json_t *call_op(struct eg_api *a, struct lws *wsi, struct api_conn *c, json_t *req, bool place)
{
	struct ctl_peer peer;
	char err[512];
	json_t *reply;

	call_peer(a, wsi, c, place, &peer);
	reply = a->call(a, &peer, req, NULL, err, sizeof(err));
	json_decref(req);
	return reply;
}

static void send_ctl(struct lws *wsi, struct api_conn *c, json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	if (s)
		ws_queue(wsi, c, true, s, strlen(s));
	free(s);
	json_decref(o);
}

int apty_open(struct eg_api *a, struct lws *wsi, struct api_conn *c, const char *id, char *err, size_t errlen)
{
	struct ctl_peer peer;
	char off[32];
	int fd;

	/* driving a terminal is driving a process: not from inside a session */
	call_peer(a, wsi, c, true, &peer);
	if (!peer.api_placed || peer.api_session) {
		__atomic_add_fetch(&a->st.in_session, 1, __ATOMIC_RELAXED);
		snprintf(err, errlen, "a process inside a supervised session (or one that cannot be placed) "
			 "cannot drive other processes");
		return -EPERM;
	}
	fd = a->pty_fd(a, id);
	if (fd < 0) {
		snprintf(err, errlen, fd == -ENOTTY ? "run %s has no terminal (start it with \"pty\":true)" :
			 "no process of yours by that id: %s", id);
		return fd;
	}
	snprintf(c->run, sizeof(c->run), "%s", id);
	c->pty = fd;
	c->log_off = 0;
	{
		const char *v = lws_get_urlarg_by_name(wsi, "offset=", off, sizeof(off));

		if (v)
			c->log_off = strtoull(v, NULL, 10);
	}
	return 0;
}

void apty_message(struct lws *wsi, struct api_conn *c)
{
	json_error_t je;
	json_t *m;
	const char *type;

	if (c->msg_binary) {
		size_t done = 0;

		/* keystrokes: straight to the terminal (a full one drops them, as a terminal would) */
		while (done < c->msg.len) {
			ssize_t n = write(c->pty, c->msg.data + done, c->msg.len - done);

			if (n <= 0)
				break;
			done += n;
		}
		return;
	}
	m = json_loadb(c->msg.data, c->msg.len, 0, &je);
	type = json_string_value(json_object_get(m, "type"));
	if (type && !strcmp(type, "resize")) {
		json_int_t r = json_integer_value(json_object_get(m, "rows")),
			   k = json_integer_value(json_object_get(m, "cols"));
		struct winsize ws = { .ws_row = (unsigned short)r, .ws_col = (unsigned short)k };

		/* the kernel tells the terminal's foreground job (SIGWINCH) */
		if (r > 0 && r < 10000 && k > 0 && k < 10000)
			ioctl(c->pty, TIOCSWINSZ, &ws);
		else
			send_ctl(wsi, c, json_pack("{s:s,s:s}", "type", "error", "error", "resize: rows and cols 1..9999"));
	} else if (type && !strcmp(type, "signal")) {
		const char *sig = json_string_value(json_object_get(m, "signal"));
		json_t *reply = call_op(c->a, wsi, c,
					json_pack("{s:s,s:s,s:s}", "op", "kill", "id", c->run, "signal", sig ? sig : "INT"),
					false);

		if (!json_is_true(json_object_get(reply, "ok")))
			send_ctl(wsi, c, json_pack("{s:s,s:s}", "type", "error", "error",
						   json_string_value(json_object_get(reply, "error")) ?: "signal refused"));
		json_decref(reply);
	} else {
		send_ctl(wsi, c, json_pack("{s:s,s:s}", "type", "error", "error",
					   "text messages are JSON controls: resize, signal (bytes go in binary messages)"));
	}
	json_decref(m);
}

/* The run's line of ps, for its exit. */
static void send_exit(struct eg_api *a, struct lws *wsi, struct api_conn *c)
{
	json_t *reply = call_op(a, wsi, c, json_pack("{s:s}", "op", "ps"), false), *p, *o = NULL;
	size_t i;

	json_array_foreach(json_object_get(reply, "processes"), i, p)
		if (!strcmp(json_string_value(json_object_get(p, "id")) ?: "", c->run))
			o = json_pack("{s:s,s:O,s:O,s:O,s:O}", "type", "exit", "status", json_object_get(p, "status"),
				      "exit_code", json_object_get(p, "exit_code") ?: json_null(),
				      "signal", json_object_get(p, "signal") ?: json_null(),
				      "timed_out", json_object_get(p, "timed_out") ?: json_false());
	if (!o)
		o = json_pack("{s:s,s:s}", "type", "exit", "status", "unknown");
	send_ctl(wsi, c, o);
	json_decref(reply);
	c->done = true;
}

void apty_tick(struct lws *wsi, struct api_conn *c)
{
	struct eg_api *a = c->a;
	json_t *reply;
	int rounds;

	if (c->done || c->out.len - c->out_off > API_MAX_QUEUED / 2)
		return;
	for (rounds = 0; rounds < 4; rounds++) {
		const char *b64;
		unsigned char *data = NULL;
		size_t n = 0;
		bool running;

		reply = call_op(a, wsi, c, json_pack("{s:s,s:s,s:I,s:i}", "op", "log", "id", c->run, "offset",
						      (json_int_t)c->log_off, "max", 65536), false);
		if (!json_is_true(json_object_get(reply, "ok"))) {
			send_ctl(wsi, c, json_pack("{s:s,s:s}", "type", "error", "error",
						   json_string_value(json_object_get(reply, "error")) ?: "log refused"));
			json_decref(reply);
			c->done = true;
			return;
		}
		b64 = json_string_value(json_object_get(reply, "data_b64"));
		running = json_is_true(json_object_get(reply, "running"));
		c->log_off = json_integer_value(json_object_get(reply, "next_offset"));
		if (b64 && *b64 && !b64_decode(b64, strlen(b64), &data, &n) && n)
			ws_queue(wsi, c, false, data, n);
		free(data);
		json_decref(reply);
		if (!n) {
			if (!running)
				send_exit(a, wsi, c);
			return;
		}
	}
}
