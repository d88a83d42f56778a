// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A connection's answer, below everything else of the API's: an HTTP
 * reply (JSON, an error) put in c->out, WebSocket frames queued there,
 * and a connection made ready for its next request; and the request's
 * query arguments.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libwebsockets.h>
#include "api/internal.h"

void conn_reset(struct api_conn *c)
{
	sbuf_free(&c->body);
	sbuf_free(&c->out);
	sbuf_free(&c->in);
	sbuf_free(&c->msg);
	if (c->stream_fd > 0)
		close(c->stream_fd);
	if (c->pty > 0)
		close(c->pty);
	free(c->filter);
	c->filter = NULL;
	if (c->streaming)
		c->a->nstreams--;
	c->streaming = false;
	c->stream_fd = c->pty = -1;
	c->out_off = 0;
	c->frag_off = 0;
	c->hdr_sent = c->done = c->close_after = c->body_complete = false;
	c->body_too_large = false;
	c->status = 0;
}

void reply_json(struct api_conn *c, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbuf_reset(&c->out);
	c->out_off = 0;
	{
		char tmp[4096];

		vsnprintf(tmp, sizeof(tmp), fmt, ap);
		sbuf_puts(&c->out, tmp);
	}
	va_end(ap);
	sbuf_putc(&c->out, '\n');
	c->status = status;
	c->ctype = "application/json";
}

void reply_error(struct api_conn *c, int status, const char *msg)
{
	json_t *o = json_pack("{s:b,s:s}", "ok", 0, "error", msg);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	reply_json(c, status, "%s", s ? s : "{\"ok\":false}");
	free(s);
	json_decref(o);
}

void conn_drop(struct lws *wsi, struct api_conn *c)
{
	/*
	 * It does not read: it goes, counted. Not once its queue is out (a
	 * socket nobody reads never becomes writable): closed at the next
	 * service of the loop.
	 */
	if (c->dropped)
		return;
	c->dropped = c->done = c->close_after = true;
	__atomic_add_fetch(&c->a->st.slow_clients, 1, __ATOMIC_RELAXED);
	lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

void ws_queue(struct lws *wsi, struct api_conn *c, bool text, const void *data, size_t len)
{
	uint32_t l = len;
	char t = text;

	if (c->dropped)
		return;
	if (c->out.len - c->out_off + len > API_MAX_QUEUED) {
		conn_drop(wsi, c);
		return;
	}
	sbuf_put(&c->out, &t, 1);
	sbuf_put(&c->out, &l, 4);
	sbuf_put(&c->out, data, len);
	lws_callback_on_writable(wsi);
}


int urlarg(struct lws *wsi, int i, char *buf, size_t len)
{
	int n = lws_hdr_copy_fragment(wsi, buf, len, WSI_TOKEN_HTTP_URI_ARGS, i);
	char *whole;

	if (n >= 0)
		return n;
	/*
	 * -1 is both "no argument i" and "argument i does not fit": taken
	 * for the end, a long argument hid those after it (a filter, an
	 * offset) and the request went on without them.
	 */
	n = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
	if (n <= 0)
		return -ENOENT;
	buf[0] = '\0';
	whole = malloc(n + 1);
	if (whole && lws_hdr_copy_fragment(wsi, whole, n + 1, WSI_TOKEN_HTTP_URI_ARGS, i) >= 0)
		snprintf(buf, len, "%.*s", (int)strcspn(whole, "="), whole);
	free(whole);
	return -E2BIG;
}
