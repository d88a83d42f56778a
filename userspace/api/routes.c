// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The API's HTTP routes (docs/api.md), each one control op (docs/control.md)
 * with the API's peer: a route takes only the fields it documents from
 * the request, so a client cannot ask for what the API does not offer
 * (a foreground run, another user's processes, an op of root's). The
 * daemon's reply is the answer's body as it is; its "ok" says how it went
 * and the status follows it (400, 403 for a refusal of who asks, 404 for
 * what is not there).
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libwebsockets.h>
#include "api/internal.h"

#define ID_MAX 31

/* The status of a daemon's reply. */
static int status_of(const json_t *reply)
{
	const char *e = json_string_value(json_object_get(reply, "error"));

	if (json_is_true(json_object_get(reply, "ok")))
		return 200;
	if (!e)
		return 400;
	if (strstr(e, "no process") || strstr(e, "no pending approval") || strstr(e, "not found"))
		return 404;
	if (strstr(e, "inside a supervised session") || strstr(e, "inside a session") || strstr(e, "in a session") ||
	    strstr(e, "permission denied") || strstr(e, "refused as if"))
		return 403;
	return 400;
}

static void reply_obj(struct api_conn *c, int status, const json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	if (!s) {
		reply_error(c, 500, "out of memory");
		return;
	}
	sbuf_reset(&c->out);
	c->out_off = 0;
	sbuf_puts(&c->out, s);
	sbuf_putc(&c->out, '\n');
	free(s);
	c->status = status;
	c->ctype = "application/json";
}

/* One op as the API's peer; its reply becomes the answer. */
static void op(struct eg_api *a, struct lws *wsi, struct api_conn *c, json_t *req, bool place)
{
	struct ctl_peer peer;
	char err[512];
	json_t *reply;

	if (!req) {
		/* a value jansson refused (not UTF-8) */
		reply_error(c, 400, "the request holds a value that is not UTF-8 text");
		return;
	}
	call_peer(a, wsi, c, place, &peer);
	if (place && (!peer.api_placed || peer.api_session))
		__atomic_add_fetch(&a->st.in_session, 1, __ATOMIC_RELAXED);
	reply = a->call(a, &peer, req, NULL, err, sizeof(err));
	json_decref(req);
	if (!reply) {
		reply_error(c, 503, err);
		return;
	}
	reply_obj(c, status_of(reply), reply);
	json_decref(reply);
}

/* The request body: a JSON object, or none. NULL with a 400 queued. */
static json_t *body_object(struct api_conn *c)
{
	json_error_t je;
	json_t *o;

	if (!c->body.len)
		return json_object();
	o = json_loadb(c->body.data, c->body.len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		char msg[300];

		snprintf(msg, sizeof(msg), "the body must be a JSON object: %s", o ? "not an object" : je.text);
		json_decref(o);
		reply_error(c, 400, msg);
		return NULL;
	}
	return o;
}

/* Copies the fields named in keys (NULL-terminated) from body to req. */
static void take(json_t *req, const json_t *body, const char *const *keys)
{
	for (; *keys; keys++) {
		json_t *v = json_object_get(body, *keys);

		if (v)
			json_object_set(req, *keys, v);
	}
}

/* The environment a run through the API starts from: the run-as user's basics, nothing of the daemon's. */
static json_t *run_environ(const struct eg_api *a, bool pty)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096], kv[600];
	json_t *v = json_array();

	json_array_append_new(v, json_string("PATH=/usr/local/bin:/usr/bin:/bin"));
	json_array_append_new(v, json_string("LANG=C.UTF-8"));
	if (pty)
		json_array_append_new(v, json_string("TERM=xterm-256color"));
	if (a->o.run_as_set && !getpwuid_r(a->o.run_as_uid, &pw, buf, sizeof(buf), &pwp) && pwp) {
		snprintf(kv, sizeof(kv), "HOME=%s", pw.pw_dir);
		json_array_append_new(v, json_string(kv));
		snprintf(kv, sizeof(kv), "USER=%s", pw.pw_name);
		json_array_append_new(v, json_string(kv));
		snprintf(kv, sizeof(kv), "LOGNAME=%s", pw.pw_name);
		json_array_append_new(v, json_string(kv));
	}
	return v;
}

static void post_run(struct eg_api *a, struct lws *wsi, struct api_conn *c)
{
	static const char *const keys[] = { "argv", "command", "stateful", "session", "pty", "timeout_ms", "cwd", "env",
					    NULL };
	json_t *body, *req;

	if (!a->o.run_as_set) {
		reply_error(c, 403, "runs through the API are off: the daemon has no --api-run-as USER");
		return;
	}
	if (!(body = body_object(c)))
		return;
	req = json_pack("{s:s,s:b}", "op", "run", "background", 1);
	take(req, body, keys);
	if (json_object_get(body, "cwd"))
		json_object_set_new(req, "cwd_explicit", json_true());
	json_object_set_new(req, "environ", run_environ(a, json_is_true(json_object_get(body, "pty"))));
	json_decref(body);
	op(a, wsi, c, req, true);
	if (c->status == 200)
		c->status = 201;
}

/* GET /v1/runs/ID: the run's line of ps. */
static void get_run(struct eg_api *a, struct lws *wsi, struct api_conn *c, const char *id)
{
	struct ctl_peer peer;
	char err[512];
	json_t *req, *reply, *p;
	size_t i;

	call_peer(a, wsi, c, false, &peer);
	req = json_pack("{s:s}", "op", "ps");
	reply = a->call(a, &peer, req, NULL, err, sizeof(err));
	json_decref(req);
	if (!reply) {
		reply_error(c, 503, err);
		return;
	}
	json_array_foreach(json_object_get(reply, "processes"), i, p)
		if (!strcmp(json_string_value(json_object_get(p, "id")) ?: "", id)) {
			json_t *o = json_deep_copy(p);

			json_object_set_new(o, "ok", json_true());
			reply_obj(c, 200, o);
			json_decref(o);
			json_decref(reply);
			return;
		}
	json_decref(reply);
	reply_error(c, 404, "no process of yours by that id: see GET /v1/runs");
}

/*
 * ?name=N as an integer into req; false with a 400 queued when it is not
 * one. Other arguments are let be, however long (lws_get_urlarg_by_name
 * stopped at the first that did not fit its buffer, and a later ?offset=
 * was not seen).
 */
static bool int_arg(struct lws *wsi, struct api_conn *c, json_t *req, const char *name)
{
	char buf[64], *end;
	const char *val = NULL;
	size_t nl = strlen(name);
	long long v;
	int i, n;

	for (i = 0; !val && (n = urlarg(wsi, i, buf, sizeof(buf))) != -ENOENT; i++) {
		if (strncmp(buf, name, nl))
			continue;
		if (n == -E2BIG && !buf[nl])
			val = "";	/* too long for a number: refused below */
		else if (n >= 0 && buf[nl] == '=')
			val = buf + nl + 1;
	}
	if (!val)
		return true;
	errno = 0;
	v = strtoll(val, &end, 10);
	if (!*val || *end || errno || v < 0) {
		char msg[128];

		snprintf(msg, sizeof(msg), "?%s= takes a number >= 0", name);
		reply_error(c, 400, msg);
		return false;
	}
	json_object_set_new(req, name, json_integer(v));
	return true;
}

/* "/v1/runs/ID/rest" -> ID and rest ("" when none); false when it is not that shape. */
static bool split_id(const char *p, const char *prefix, char id[ID_MAX + 1], const char **rest)
{
	size_t n = strlen(prefix), l;

	if (strncmp(p, prefix, n))
		return false;
	p += n;
	l = strcspn(p, "/");
	/* ids are the daemon's (p-7, a-3f09...): anything else is no route */
	if (!l || l > ID_MAX || strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") < l)
		return false;
	memcpy(id, p, l);
	id[l] = '\0';
	*rest = p + l;
	return true;
}

void routes_http(struct eg_api *a, struct lws *wsi, struct api_conn *c)
{
	const char *rest, *p = c->path;
	bool get = !strcmp(c->method, "GET"), post = !strcmp(c->method, "POST");
	char id[ID_MAX + 1];
	json_t *body, *req;

	if (get && !strcmp(p, "/v1/whoami")) {
		reply_json(c, 200, "{\"ok\":true,\"token\":\"%s\",\"run_as_uid\":%d}", c->token,
			   a->o.run_as_set ? (int)a->o.run_as_uid : -1);
		return;
	}
	if (!strcmp(p, "/v1/runs")) {
		if (get)
			op(a, wsi, c, json_pack("{s:s}", "op", "ps"), false);
		else if (post)
			post_run(a, wsi, c);
		else
			reply_error(c, 405, "GET or POST");
		return;
	}
	if (split_id(p, "/v1/runs/", id, &rest)) {
		if (get && !*rest) {
			get_run(a, wsi, c, id);
		} else if (get && !strcmp(rest, "/poll")) {
			op(a, wsi, c, json_pack("{s:s,s:s}", "op", "poll", "id", id), false);
		} else if (get && !strcmp(rest, "/log")) {
			req = json_pack("{s:s,s:s}", "op", "log", "id", id);
			if (int_arg(wsi, c, req, "offset") && int_arg(wsi, c, req, "tail") && int_arg(wsi, c, req, "max"))
				op(a, wsi, c, req, false);
			else
				json_decref(req);
		} else if (post && (!strcmp(rest, "/write") || !strcmp(rest, "/keys") || !strcmp(rest, "/kill"))) {
			static const char *const wk[] = { "data", "eof", NULL }, *const kk[] = { "keys", NULL },
						 *const sk[] = { "signal", NULL };
			bool w = !strcmp(rest, "/write"), k = !strcmp(rest, "/keys");

			if (!(body = body_object(c)))
				return;
			req = json_pack("{s:s,s:s}", "op", w ? "write" : k ? "send_keys" : "kill", "id", id);
			take(req, body, w ? wk : k ? kk : sk);
			json_decref(body);
			op(a, wsi, c, req, true);
		} else if (get && !strcmp(rest, "/pty")) {
			reply_error(c, 426, "a run's terminal is a WebSocket: GET with Upgrade: websocket");
		} else {
			reply_error(c, 404, "no such route: see docs/api.md");
		}
		return;
	}
	if (get && !strcmp(p, "/v1/approvals")) {
		op(a, wsi, c, json_pack("{s:s}", "op", "approvals"), false);
		return;
	}
	if (split_id(p, "/v1/approvals/", id, &rest)) {
		if (get && !*rest) {
			op(a, wsi, c, json_pack("{s:s,s:s}", "op", "approvals", "id", id), false);
		} else if (post && (!strcmp(rest, "/approve") || !strcmp(rest, "/deny"))) {
			static const char *const rk[] = { "reason", NULL };

			if (!(body = body_object(c)))
				return;
			req = json_pack("{s:s,s:s}", "op", rest + 1, "id", id);
			take(req, body, rk);
			json_decref(body);
			op(a, wsi, c, req, true);
		} else {
			reply_error(c, 404, "no such route: see docs/api.md");
		}
		return;
	}
	if (get && !strcmp(p, "/v1/sessions")) {
		op(a, wsi, c, json_pack("{s:s}", "op", "sessions"), false);
		return;
	}
	if (get && !strcmp(p, "/v1/events")) {
		char err[512];
		int rc;

		c->kind = CONN_SSE;
		rc = stream_events(a, wsi, c, err, sizeof(err));
		if (rc) {
			c->kind = CONN_HTTP;
			conn_reset(c);
			reply_error(c, rc == -EBUSY ? 503 : 400, err);
		}
		return;
	}
	reply_error(c, 404, "no such route: see docs/api.md");
}
