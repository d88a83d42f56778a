// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The API's server: libwebsockets (HTTP/1.1 and WebSocket parsing, keep
 * alive, timeouts) in a thread of its own, one callback for every
 * connection. Bounds: API_MAX_CONNS connections, API_MAX_HEADER bytes of
 * request head, API_MAX_BODY of body, API_MAX_MESSAGE a WebSocket
 * message, API_IDLE_S to send a request (idle) and API_HEAD_S for its
 * head however slowly it comes (heads_sweep); a client that leaves more than
 * API_MAX_QUEUED unread is dropped. Nothing is answered without a token
 * but the page's own code at / (no data in it).
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <libwebsockets.h>
#include "api/internal.h"
#include "query/query.h"
#include "util/clock.h"
#include "util/jsonw.h"
#include "util/listen.h"
#include "util/log.h"

static unsigned char wbuf[LWS_PRE + 65536];

static void count(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/*
 * A request's head must be in within API_HEAD_S of the connection's start
 * (or of the last answer on a kept one). libwebsockets' own timeout starts
 * again with every byte that comes, so a head sent a byte at a time, by
 * anyone who reaches the port, no token needed, kept its slot for good.
 * Swept only while a head is awaited: an idle API wakes nobody.
 */
static void heads_sweep(lws_sorted_usec_list_t *sul)
{
	struct eg_api *a = lws_container_of(sul, struct eg_api, sul_heads);
	uint64_t now = eg_mono_ms(), next = 0;
	unsigned int i = 0;

	a->sweeping = false;
	while (i < a->nheads) {
		uint64_t due = a->heads[i].since_ms + API_HEAD_S * 1000ull;

		if (now >= due) {
			count(&a->st.slow_clients);
			lws_set_timeout(a->heads[i].wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
			a->heads[i] = a->heads[--a->nheads];
			continue;
		}
		if (!next || due < next)
			next = due;
		i++;
	}
	if (next) {
		a->sweeping = true;
		lws_sul_schedule(a->heads_ctx, 0, &a->sul_heads, heads_sweep, (lws_usec_t)(next - now) * 1000);
	}
}

/* wsi's next request head is awaited from now on */
static void head_wait(struct eg_api *a, struct lws *wsi)
{
	unsigned int i;

	for (i = 0; i < a->nheads && a->heads[i].wsi != wsi; i++)
		;
	if (i == a->nheads) {
		if (a->nheads >= sizeof(a->heads) / sizeof(a->heads[0]))
			return;	/* cannot be: one per connection */
		a->nheads++;
	}
	a->heads[i].wsi = wsi;
	a->heads[i].since_ms = eg_mono_ms();
	if (!a->sweeping) {
		a->sweeping = true;
		a->heads_ctx = lws_get_context(wsi);
		lws_sul_schedule(a->heads_ctx, 0, &a->sul_heads, heads_sweep, API_HEAD_S * LWS_US_PER_SEC);
	}
}

/* wsi's head is in, or wsi is gone; no head awaited, no sweep (nor one left in a context that goes) */
static void head_done(struct eg_api *a, struct lws *wsi)
{
	unsigned int i;

	for (i = 0; i < a->nheads; i++)
		if (a->heads[i].wsi == wsi) {
			a->heads[i] = a->heads[--a->nheads];
			break;
		}
	if (!a->nheads && a->sweeping) {
		lws_sul_cancel(&a->sul_heads);
		a->sweeping = false;
	}
}

/* GET /, HEAD /: the page, the one thing served without a token (it holds no data). */
static bool serve_page(struct api_conn *c)
{
	if (strcmp(c->path, "/") && strcmp(c->path, "/index.html"))
		return false;
	if (strcmp(c->method, "GET")) {
		reply_error(c, 405, "GET only");
		return true;
	}
	sbuf_reset(&c->out);
	sbuf_puts(&c->out, api_page_html);
	c->status = 200;
	c->ctype = "text/html; charset=utf-8";
	return true;
}

static const char *method_of(struct lws *wsi)
{
	if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI))
		return "GET";
	if (lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI))
		return "POST";
	return "OTHER";
}

/*
 * Whether the process at the other end is outside every session (found
 * in the kernel's socket table and /proc, or on another host): a token is
 * held outside sessions, and a session's process is refused as on the
 * control socket. Counted when not.
 */
static bool placed_outside(struct eg_api *a, struct lws *wsi, struct api_conn *c)
{
	bool placed = false;
	uint32_t session = 0;

	if (a->place(a->o.tasks_fd, lws_get_socket_fd(wsi), &placed, &session))
		placed = false;
	if (c) {
		c->placed = placed;
		c->session = session;
	}
	if (placed && !session)
		return true;
	count(&a->st.in_session);
	return false;
}

/* The token of the request, or a 401 queued (and counted). */
static bool authorize(struct lws *wsi, struct api_conn *c)
{
	char h[512];
	const char *name;

	h[0] = '\0';
	if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) < (int)sizeof(h))
		lws_hdr_copy(wsi, h, sizeof(h), WSI_TOKEN_HTTP_AUTHORIZATION);
	name = auth_check(c->a, h);
	if (!name) {
		count(&c->a->st.unauthorized);
		reply_error(c, 401, "a valid token is required: Authorization: Bearer TOKEN (--api-token-file)");
		return false;
	}
	snprintf(c->token, sizeof(c->token), "%s", name);
	if (!placed_outside(c->a, wsi, c)) {
		c->token[0] = '\0';
		reply_error(c, 403, "a process inside a supervised session (or one that cannot be placed) cannot use "
			    "the API");
		return false;
	}
	count(&c->a->st.requests);
	return true;
}

static int write_http(struct lws *wsi, struct api_conn *c)
{
	unsigned char *start = wbuf + LWS_PRE, *p = start, *end = wbuf + sizeof(wbuf) - 1;
	size_t left, n;
	bool final;

	if (c->dropped)
		return -1;
	if (!c->status)
		return 0;
	if (!c->hdr_sent) {
		static const struct { const char *k, *v; } hdrs[] = {
			{ "cache-control:", "no-store" },
			{ "x-content-type-options:", "nosniff" },
			{ "referrer-policy:", "no-referrer" },
			{ "x-frame-options:", "DENY" },
			{ "content-security-policy:", "default-src 'none'; script-src 'unsafe-inline'; "
			  "style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'" },
		};
		size_t i;

		if (lws_add_http_common_headers(wsi, c->status, c->ctype,
						c->kind == CONN_SSE ? LWS_ILLEGAL_HTTP_CONTENT_LEN : c->out.len, &p, end))
			return -1;
		for (i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++)
			if (lws_add_http_header_by_name(wsi, (const unsigned char *)hdrs[i].k,
							(const unsigned char *)hdrs[i].v, strlen(hdrs[i].v), &p, end))
				return -1;
		if (c->status == 401 &&
		    lws_add_http_header_by_name(wsi, (const unsigned char *)"www-authenticate:",
						(const unsigned char *)"Bearer realm=\"execgate\"", 23, &p, end))
			return -1;
		if (lws_finalize_write_http_header(wsi, start, &p, end))
			return -1;
		c->hdr_sent = true;
		/* a stream: no idle timeout, unless it already ended (API_END_GRACE_S to read the rest) */
		if (c->kind == CONN_SSE)
			lws_set_timeout(wsi, c->done ? PENDING_TIMEOUT_USER_OK : NO_PENDING_TIMEOUT,
					c->done ? API_END_GRACE_S : 0);
		if (c->out.len > c->out_off || (c->kind != CONN_SSE))
			lws_callback_on_writable(wsi);
		return 0;
	}
	left = c->out.len - c->out_off;
	n = left < 65536 ? left : 65536;
	final = c->kind != CONN_SSE && n == left;
	if (n || final) {
		memcpy(wbuf + LWS_PRE, c->out.data + c->out_off, n);
		if (lws_write(wsi, wbuf + LWS_PRE, n, final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) < (int)n)
			return -1;
		c->out_off += n;
	}
	if (c->kind == CONN_SSE) {
		if (c->out_off == c->out.len) {
			sbuf_reset(&c->out);
			c->out_off = 0;
			if (c->done)
				return -1;	/* the stream ended: so does the response */
		} else {
			lws_callback_on_writable(wsi);
		}
		return 0;
	}
	if (!final) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	{
		/*
		 * An error ends the connection: what the client sent after a
		 * refused request (its body, pipelined requests) is not read on
		 * (libwebsockets could spin on a refused request's unread body).
		 */
		bool close_after = c->close_after || c->status >= 400;
		struct eg_api *a = c->a;	/* c may be freed by the completion */

		conn_reset(c);
		if (close_after || lws_http_transaction_completed(wsi))
			return -1;
		head_wait(a, wsi);	/* kept: the next request's head */
	}
	return 0;
}

static int write_ws(struct lws *wsi, struct api_conn *c)
{
	int sent = 0;

	if (c->dropped)
		return -1;
	/* a message longer than the buffer (a record with a long argv) goes in fragments */
	while (c->out.len - c->out_off >= 5 && sent++ < 8) {
		char t = c->out.data[c->out_off];
		uint32_t l, left, n;

		memcpy(&l, c->out.data + c->out_off + 1, 4);
		left = l - c->frag_off;
		n = left < sizeof(wbuf) - LWS_PRE ? left : sizeof(wbuf) - LWS_PRE;
		memcpy(wbuf + LWS_PRE, c->out.data + c->out_off + 5 + c->frag_off, n);
		if (lws_write(wsi, wbuf + LWS_PRE, n,
			      lws_write_ws_flags(t ? LWS_WRITE_TEXT : LWS_WRITE_BINARY, c->frag_off == 0,
						 n == left)) < (int)n)
			return -1;
		if (n == left) {
			c->out_off += 5 + l;
			c->frag_off = 0;
		} else {
			c->frag_off += n;
		}
		if (lws_send_pipe_choked(wsi))
			break;
	}
	if (c->out_off == c->out.len) {
		sbuf_reset(&c->out);
		c->out_off = 0;
		if (c->done) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
			return -1;
		}
	} else {
		lws_callback_on_writable(wsi);
	}
	return 0;
}

/* A request line and headers are in: the method, the path, the token. */
static int on_http(struct lws *wsi, struct api_conn *c, const char *uri)
{
	char cl[32];

	head_done(c->a, wsi);
	conn_reset(c);
	c->kind = CONN_HTTP;
	snprintf(c->method, sizeof(c->method), "%s", method_of(wsi));
	snprintf(c->path, sizeof(c->path), "%s", uri ? uri : "/");
	/*
	 * A body only with POST, and read only then. Any other request that
	 * announces one is refused and its connection ends: libwebsockets
	 * would wait for the body nobody reads, each byte of it putting off
	 * the timeout, so a client with no token, fed a byte now and then,
	 * held its slot for good and enough of them every slot.
	 */
	if (strcmp(c->method, "POST")) {
		cl[0] = '\0';
		lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH);
		if ((cl[0] && strcmp(cl, "0")) || lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING)) {
			reply_error(c, 400, "a request body is taken with POST only");
			c->close_after = true;
			lws_callback_on_writable(wsi);
			return 0;
		}
	}
	if (serve_page(c)) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	if (!authorize(wsi, c)) {
		lws_callback_on_writable(wsi);
		return 0;
	}
	if (!strcmp(c->method, "POST")) {
		cl[0] = '\0';
		lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH);
		if (cl[0] && strtoull(cl, NULL, 10) > API_MAX_BODY) {
			count(&c->a->st.too_large);
			reply_error(c, 413, "the request body is too large (256 KiB at most)");
			c->close_after = true;
			lws_callback_on_writable(wsi);
			return 0;
		}
		if (!cl[0] || !strcmp(cl, "0")) {
			routes_http(c->a, wsi, c);
			lws_callback_on_writable(wsi);
		}
		return 0;	/* the body comes (LWS_CALLBACK_HTTP_BODY) */
	}
	routes_http(c->a, wsi, c);
	if (c->kind == CONN_SSE)
		lws_set_timer_usecs(wsi, API_TICK_US);
	lws_callback_on_writable(wsi);
	return 0;
}

static int on_ws_established(struct eg_api *a, struct lws *wsi, struct api_conn *c)
{
	char uri[API_MAX_PATH], err[512];
	int rc = -EINVAL;

	conn_reset(c);
	memset(c, 0, sizeof(*c));
	c->a = a;
	c->stream_fd = c->pty = -1;
	/* refused before the upgrade when in a session; placed again for the ops that act */
	if (!placed_outside(a, wsi, c))
		c->placed = false;
	uri[0] = '\0';
	lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI);
	{
		char h[512];
		const char *name;

		h[0] = '\0';
		if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) < (int)sizeof(h))
			lws_hdr_copy(wsi, h, sizeof(h), WSI_TOKEN_HTTP_AUTHORIZATION);
		name = auth_check(c->a, h);
		if (!name)
			return -1;	/* refused with 401 before the upgrade */
		snprintf(c->token, sizeof(c->token), "%s", name);
	}
	snprintf(c->path, sizeof(c->path), "%s", uri);
	snprintf(err, sizeof(err), "no WebSocket at %.200s (/v1/events, /v1/runs/ID/pty)", uri);
	if (!strcmp(uri, "/v1/events")) {
		c->kind = CONN_WS_EVENTS;
		rc = stream_events(c->a, wsi, c, err, sizeof(err));
	} else if (!strncmp(uri, "/v1/runs/", 9) && strlen(uri) > 13 && !strcmp(uri + strlen(uri) - 4, "/pty")) {
		char id[32];
		size_t n = strlen(uri) - 13;

		c->kind = CONN_WS_PTY;
		snprintf(id, sizeof(id), "%.*s", (int)(n < 31 ? n : 31), uri + 9);
		rc = apty_open(c->a, wsi, c, id, err, sizeof(err));
	}
	if (rc) {
		/* jsonw, not jansson: the message may quote bytes of the URL that are not UTF-8 */
		struct sbuf b = {};
		struct jsonw w;

		jsonw_init(&w, &b);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "type", "error");
		jsonw_string_field(&w, "error", err);
		jsonw_end_object(&w);
		if (b.oom) {
			sbuf_free(&b);
			return -1;	/* nothing to say: the connection ends now, not never */
		}
		ws_queue(wsi, c, true, b.data, b.len);
		sbuf_free(&b);
		c->done = true;
		/* and ends once it is sent, or at the grace's end if the client reads nothing */
		lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, API_END_GRACE_S);
		return 0;
	}
	lws_set_timer_usecs(wsi, API_TICK_US);
	return 0;
}

/*
 * Full: the oldest connection that has not sent a whole request head
 * makes room, closed now and counted (as daemon/httpd.c does for the
 * metrics). Anyone who reaches the port, no token needed, could hold
 * every slot by connecting faster than heads_sweep ends the silent ones;
 * a client with a token sends its head at once and is never the oldest
 * of those for long. Connections past their head (a request being
 * answered, a stream, a terminal) are kept: then the newcomer is refused.
 */
static bool make_room(struct eg_api *a)
{
	unsigned int i, oldest = 0;
	struct lws *victim;

	if (a->nconns < API_MAX_CONNS + 1)	/* the listener's own connection apart */
		return true;
	if (!a->nheads)
		return false;
	for (i = 1; i < a->nheads; i++)
		if (a->heads[i].since_ms < a->heads[oldest].since_ms)
			oldest = i;
	victim = a->heads[oldest].wsi;
	/* out of heads first: should lws put off the close (output to flush), the next newcomer takes another */
	head_done(a, victim);
	count(&a->st.refused);
	/* not the connection being serviced (the listener's): closed before this returns, nconns with it */
	lws_set_timeout(victim, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_SYNC);
	return a->nconns < API_MAX_CONNS + 1;
}

/*
 * Accepts every connection waiting on the listener and hands it to
 * libwebsockets as a served socket; past API_MAX_CONNS (the listener's
 * own connection apart) one waiting for its head makes room (make_room),
 * else the newcomer is closed at once and counted.
 */
static void accept_all(struct eg_api *a, struct lws_vhost *vh)
{
	int i, fd;

	for (i = 0; i < API_MAX_CONNS; i++) {
		fd = accept4(a->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		if (!make_room(a)) {
			count(&a->st.refused);
			close(fd);
			continue;
		}
		{
			struct lws *wsi = lws_adopt_socket_vhost(vh, fd);

			if (!wsi)
				count(&a->st.refused);	/* lws closed it */
			else
				head_wait(a, wsi);
		}
	}
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct lws_context *ctx = lws_get_context(wsi);
	struct eg_api *a = ctx ? lws_context_user(ctx) : NULL;
	struct api_conn *c = user;

	switch (reason) {
	case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
		if (a->nconns >= API_MAX_CONNS) {
			count(&a->st.refused);
			return 1;
		}
		return 0;
	case LWS_CALLBACK_RAW_ADOPT_FILE:
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		return 0;
	case LWS_CALLBACK_RAW_RX_FILE:
		/* the listener (eg_listen's socket) is readable: take what waits */
		if (lws_get_socket_fd(wsi) == a->listen_fd)
			accept_all(a, lws_get_vhost(wsi));
		return 0;
	case LWS_CALLBACK_WSI_CREATE:
		a->nconns++;
		return 0;
	case LWS_CALLBACK_HTTP_BIND_PROTOCOL:
		if (c && !c->a) {
			c->a = a;
			c->stream_fd = c->pty = -1;
		}
		return 0;
	case LWS_CALLBACK_HTTP:
		c->a = a;
		return on_http(wsi, c, in);
	case LWS_CALLBACK_HTTP_BODY:
		/* a body only after a request whose token held (on_http answered any other) */
		if (c->status || !c->token[0])
			return 0;
		if (c->body.len + len > API_MAX_BODY) {
			count(&a->st.too_large);
			return -1;
		}
		sbuf_put(&c->body, in, len);
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		/*
		 * A second completion of one request: libwebsockets 4.1 does
		 * that for a request with a body (a GET with a Content-Length)
		 * followed by pipelined bytes, again and again within one
		 * lws_service() call, so the answer is never written and the
		 * thread spins (found by fuzz_api: "GET /" then such a request,
		 * no token needed). The connection ends instead.
		 */
		if (c->body_complete)
			return -1;
		c->body_complete = true;
		if (!c->status && !c->token[0])
			reply_error(c, 401, "a valid token is required: Authorization: Bearer TOKEN (--api-token-file)");
		else if (!c->status)
			routes_http(a, wsi, c);
		lws_callback_on_writable(wsi);
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return write_http(wsi, c);
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
		char h[512];

		head_done(a, wsi);
		h[0] = '\0';
		if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION) < (int)sizeof(h))
			lws_hdr_copy(wsi, h, sizeof(h), WSI_TOKEN_HTTP_AUTHORIZATION);
		if (!auth_check(a, h)) {
			count(&a->st.unauthorized);
			lws_return_http_status(wsi, 401, "a valid token is required: Authorization: Bearer TOKEN");
			return 1;
		}
		if (!placed_outside(a, wsi, c)) {
			lws_return_http_status(wsi, 403, "a process inside a supervised session cannot use the API");
			return 1;
		}
		count(&a->st.requests);
		return 0;
	}
	case LWS_CALLBACK_ESTABLISHED: {
		int rc;

		rc = on_ws_established(a, wsi, c);
		return rc;
	}
	case LWS_CALLBACK_RECEIVE:
		if (lws_is_first_fragment(wsi)) {
			sbuf_reset(&c->msg);
			c->msg_too_large = false;
			c->msg_binary = lws_frame_is_binary(wsi);
		}
		if (c->msg.len + len > API_MAX_MESSAGE) {
			if (!c->msg_too_large)
				count(&a->st.too_large);
			c->msg_too_large = true;
			lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, NULL, 0);
			return -1;
		}
		sbuf_put(&c->msg, in, len);
		if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi))
			return 0;
		if (c->kind == CONN_WS_PTY)
			apty_message(wsi, c);
		sbuf_reset(&c->msg);
		return 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return write_ws(wsi, c);
	case LWS_CALLBACK_TIMER:
		if (c->kind == CONN_WS_PTY)
			apty_tick(wsi, c);
		else if (c->kind == CONN_SSE || c->kind == CONN_WS_EVENTS)
			stream_tick(wsi, c);
		if (!c->done)
			lws_set_timer_usecs(wsi, API_TICK_US);
		return 0;
	case LWS_CALLBACK_CLOSED:
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (c && c->a)
			conn_reset(c);
		return 0;
	case LWS_CALLBACK_WSI_DESTROY:
		head_done(a, wsi);
		if (a->nconns)
			a->nconns--;
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

static const struct lws_protocols protocols[] = {
	{ "execgate", callback, sizeof(struct api_conn), API_MAX_MESSAGE, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 },
};

static void *run(void *arg)
{
	struct eg_api *a = arg;
	sigset_t all;

	/* signals are the loop's (signalfd) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!a->stop)
		if (lws_service(a->ctx, 0) < 0)
			break;
	return NULL;
}

static void lws_log(int level, const char *line)
{
	if (level & LLL_ERR)
		p_warn("api: %.*s", (int)strcspn(line, "\n"), line);
}

int api_parse_listen(const char *s, char *addr, size_t addrlen, int *ret_port, char *err, size_t errlen)
{
	const char *colon = strrchr(s, ':');
	char host[64];
	unsigned char tmp[16];
	char *end;
	long port;

	if (!colon) {
		snprintf(host, sizeof(host), "127.0.0.1");
		colon = s - 1;
	} else if (s[0] == '[') {
		if (colon < s + 2 || colon[-1] != ']' || (size_t)(colon - s - 2) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s - 2), s + 1);
		if (inet_pton(AF_INET6, host, tmp) != 1)
			goto bad;
	} else {
		if ((size_t)(colon - s) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof(host), "127.0.0.1");
		if (inet_pton(AF_INET, host, tmp) != 1)
			goto bad;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port < 0 || port > 65535)
		goto bad;
	snprintf(addr, addrlen, "%s", host);
	*ret_port = (int)port;
	return 0;
bad:
	snprintf(err, errlen, "--api-listen %s: want PORT (on 127.0.0.1), ADDR:PORT or [ADDR6]:PORT, "
		 "with a numeric address", s);
	return -EINVAL;
}

struct lws_context *api_context_new(struct eg_api *a, bool listen)
{
	struct lws_context_creation_info info;

	lws_set_log_level(LLL_ERR, lws_log);
	memset(&info, 0, sizeof(info));
	(void)listen;
	/* lws listens on nothing: eg_listen's socket is adopted (api_start) */
	info.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	info.iface = NULL;
	info.protocols = protocols;
	info.options = strchr(a->addr, ':') ? 0 : LWS_SERVER_OPTION_DISABLE_IPV6;
	info.max_http_header_data = API_MAX_HEADER;
	info.max_http_header_pool = API_MAX_CONNS;
	info.fd_limit_per_thread = API_MAX_CONNS + 32;
	info.timeout_secs = API_IDLE_S;
	info.keepalive_timeout = API_IDLE_S;
	info.count_threads = 1;
	info.user = a;
	info.vhost_name = "execgate";
	info.server_string = "execgate";
	info.pt_serv_buf_size = 65536;
	return lws_create_context(&info);
}

int api_start(const struct eg_api_opts *o, struct eg_api **ret, char *err, size_t errlen)
{
	bool lws_owns_listener = false;
	struct eg_api *a;
	int rc;

	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->listen_fd = -1;
	a->o = *o;
	a->call = call_ctl;
	a->pty_fd = call_pty_fd;
	a->place = peer_place;
	rc = api_parse_listen(o->listen, a->addr, sizeof(a->addr), &a->port, err, errlen);
	if (!rc)
		rc = auth_load(a, o->token_file, err, errlen);
	if (rc)
		goto fail;
	a->output_path = o->output_path ? strdup(o->output_path) : NULL;
	a->o.output_path = a->output_path;
	a->o.listen = a->o.token_file = NULL;
	{
		struct sockaddr_storage ss = {};
		socklen_t sl;

		if (strchr(a->addr, ':')) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			s6->sin6_family = AF_INET6;
			s6->sin6_port = htons(a->port);
			inet_pton(AF_INET6, a->addr, &s6->sin6_addr);
			sl = sizeof(*s6);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			s4->sin_family = AF_INET;
			s4->sin_port = htons(a->port);
			inet_pton(AF_INET, a->addr, &s4->sin_addr);
			sl = sizeof(*s4);
		}
		a->listen_fd = eg_listen((struct sockaddr *)&ss, sl, API_MAX_CONNS, 0);
		if (a->listen_fd < 0) {
			rc = a->listen_fd;
			snprintf(err, errlen, "--api-listen %s:%d: %s", a->addr, a->port, strerror(-rc));
			goto fail;
		}
		/* port 0: the kernel's pick, for tests */
		sl = sizeof(ss);
		if (!getsockname(a->listen_fd, (struct sockaddr *)&ss, &sl))
			a->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
					((struct sockaddr_in *)&ss)->sin_port);
	}
	a->ctx = api_context_new(a, true);
	if (!a->ctx) {
		snprintf(err, errlen, "--api-listen %s:%d: libwebsockets did not start (see the lines above)",
			 a->addr, a->port);
		rc = -ENOMEM;
		goto fail;
	}
	{
		lws_sock_file_fd_type u = { .filefd = a->listen_fd };

		if (!lws_adopt_descriptor_vhost(lws_get_vhost_by_name(a->ctx, "execgate"), LWS_ADOPT_RAW_FILE_DESC, u,
						"execgate", NULL)) {
			snprintf(err, errlen, "--api-listen %s:%d: libwebsockets did not take the listener", a->addr,
				 a->port);
			rc = -ENOMEM;
			goto fail;
		}
		/* lws's now: lws_context_destroy closes it (and accept_all still reads a->listen_fd) */
		lws_owns_listener = true;
	}
	rc = -pthread_create(&a->thread, NULL, run, a);
	if (rc) {
		snprintf(err, errlen, "cannot start the API's thread: %s", strerror(-rc));
		goto fail;
	}
	a->started = true;
	*ret = a;
	return 0;
fail:
	if (a->ctx)
		lws_context_destroy(a->ctx);
	if (a->listen_fd >= 0 && !lws_owns_listener)
		close(a->listen_fd);
	free(a->output_path);
	free(a);
	return rc;
}

int api_check(const struct eg_api_opts *o, char *err, size_t errlen)
{
	struct eg_api *a = calloc(1, sizeof(*a));
	int port, rc;

	if (!a)
		return -ENOMEM;
	rc = api_parse_listen(o->listen, a->addr, sizeof(a->addr), &port, err, errlen);
	if (!rc)
		rc = auth_load(a, o->token_file, err, errlen);
	OPENSSL_cleanse(a, sizeof(*a));	/* the tokens' digests */
	free(a);
	return rc;
}

void api_stop(struct eg_api *a)
{
	if (!a)
		return;
	if (a->started) {
		a->stop = 1;
		lws_cancel_service(a->ctx);
		pthread_join(a->thread, NULL);
	}
	lws_context_destroy(a->ctx);
	free(a->output_path);
	free(a);
}

void api_get_stats(const struct eg_api *a, struct eg_api_stats *ret)
{
	ret->requests = __atomic_load_n(&a->st.requests, __ATOMIC_RELAXED);
	ret->unauthorized = __atomic_load_n(&a->st.unauthorized, __ATOMIC_RELAXED);
	ret->refused = __atomic_load_n(&a->st.refused, __ATOMIC_RELAXED);
	ret->too_large = __atomic_load_n(&a->st.too_large, __ATOMIC_RELAXED);
	ret->slow_clients = __atomic_load_n(&a->st.slow_clients, __ATOMIC_RELAXED);
	ret->in_session = __atomic_load_n(&a->st.in_session, __ATOMIC_RELAXED);
}

int api_port(const struct eg_api *a)
{
	return a->port;
}
