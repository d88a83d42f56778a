// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * GET /v1/events: the daemon's records as they are written (the follow
 * op), with `execgate query`'s filters (query/filter.c) given as query
 * arguments, as Server-Sent Events (one record a "data:" line) or, on a
 * WebSocket, one text message each. ?since= first sends the records of
 * that time already in the daemon's output file (its last 16 MiB). A
 * client that does not read is not waited for: the daemon drops a
 * follower more than 4 MiB behind, and the stream ends with a last event
 * that says so.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libwebsockets.h>
#include "api/internal.h"
#include "query/query.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/severity.h"

#define BACKLOG_MAX	(16u << 20)
#define ARENA		8192

struct filter_box {
	struct query_filter f;		/* first: c->filter is the box */
	char arena[ARENA];
	size_t used;
	bool any;
};

static const char *keep(struct filter_box *b, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p;

	if (b->used + n > ARENA)
		return NULL;
	p = b->arena + b->used;
	memcpy(p, s, n);
	b->used += n;
	return p;
}

static int add(struct filter_box *b, const char **v, size_t *n, const char *s)
{
	if (*n == QUERY_MAX_LIST || !(v[*n] = keep(b, s)))
		return -E2BIG;
	(*n)++;
	b->any = true;
	return 0;
}

int stream_filter(struct lws *wsi, struct query_filter *qf, char *since, size_t sincelen, char *err, size_t errlen)
{
	struct filter_box *b = (struct filter_box *)qf;
	struct query_filter *f = &b->f;
	char arg[512];
	int i, n, rc = 0;

	since[0] = '\0';
	for (i = 0; (n = urlarg(wsi, i, arg, sizeof(arg))) != -ENOENT; i++) {
		char *v = strchr(arg, '=');

		if (n == -E2BIG) {
			snprintf(err, errlen, "query argument %.64s: too long (%zu bytes at most, the name and its value)",
				 arg, sizeof(arg) - 1);
			return -EINVAL;
		}
		if (!v) {
			snprintf(err, errlen, "query argument %.64s: want NAME=VALUE", arg);
			return -EINVAL;
		}
		*v++ = '\0';
		if (!strcmp(arg, "type"))
			rc = add(b, f->types, &f->n_types, v);
		else if (!strcmp(arg, "session"))
			rc = add(b, f->sessions, &f->n_sessions, v);
		else if (!strcmp(arg, "comm"))
			rc = add(b, f->comm, &f->n_comm, v);
		else if (!strcmp(arg, "filename"))
			rc = add(b, f->filename, &f->n_filename, v);
		else if (!strcmp(arg, "container"))
			rc = add(b, f->containers, &f->n_containers, v);
		else if (!strcmp(arg, "pod"))
			rc = add(b, f->pods, &f->n_pods, v);
		else if (!strcmp(arg, "context"))
			rc = add(b, f->contexts, &f->n_contexts, v);
		else if (!strcmp(arg, "decision"))
			rc = add(b, f->decisions, &f->n_decisions, v);
		else if (!strcmp(arg, "action"))
			rc = add(b, f->actions, &f->n_actions, v);
		else if (!strcmp(arg, "rule"))
			rc = add(b, f->rules, &f->n_rules, v);
		else if (!strcmp(arg, "uid")) {
			char *end;
			long long u = strtoll(v, &end, 10);

			if (!*v || *end || u < 0 || f->n_uids == QUERY_MAX_LIST)
				rc = -EINVAL;
			else
				f->uids[f->n_uids++] = u;
			b->any = true;
		} else if (!strcmp(arg, "min_severity")) {
			f->min_severity = eg_severity_parse(v);
			rc = f->min_severity ? 0 : -EINVAL;
			b->any = true;
		} else if (!strcmp(arg, "since") || !strcmp(arg, "until")) {
			char t[32];

			if (query_parse_time(v, eg_clock_ns(CLOCK_REALTIME), t)) {
				rc = -EINVAL;
			} else if (arg[0] == 's') {
				memcpy(f->since, t, sizeof(f->since));
				snprintf(since, sincelen, "%s", t);
			} else {
				memcpy(f->until, t, sizeof(f->until));
			}
		} else {
			snprintf(err, errlen, "unknown filter %.64s (type, session, uid, comm, filename, container, pod, "
				 "context, decision, action, rule, min_severity, since, until)", arg);
			return -EINVAL;
		}
		if (rc) {
			snprintf(err, errlen, "filter %.64s=%.128s: not a value it takes, or too many values", arg, v);
			return -EINVAL;
		}
	}
	query_filter_ready(f);
	return 0;
}

static bool matches(const struct query_filter *f, const char *line, size_t len)
{
	json_t *r;
	bool ok;

	if (!query_prefilter(f, line, len))
		return false;
	if (!f->needs_parse && !f->until[0])
		return query_line_whole(line, len);	/* a cut line in the file is no record */
	/* a record with bytes that are not UTF-8 (\udcXX) is matched too, as `query` matches it */
	r = json_load_record(line, len);
	ok = r && query_match(f, r);
	json_decref(r);
	return ok;
}

static void send_line(struct lws *wsi, struct api_conn *c, const char *line, size_t len)
{
	if (c->kind == CONN_WS_EVENTS) {
		ws_queue(wsi, c, true, line, len);
		return;
	}
	if (c->dropped)
		return;
	if (c->out.len - c->out_off + len > API_MAX_QUEUED) {
		conn_drop(wsi, c);
		return;
	}
	sbuf_puts(&c->out, "data: ");
	sbuf_put(&c->out, line, len);
	sbuf_puts(&c->out, "\n\n");
	lws_callback_on_writable(wsi);
}

static struct lws *tick_wsi;	/* the connection being ticked (one thread) */

/* The stream's last word: an end event (SSE) or message (WebSocket); the client has 10 s to read the rest. */
static void send_end(struct lws *wsi, struct api_conn *c, const char *line, size_t len)
{
	lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, API_END_GRACE_S);
	if (c->kind == CONN_SSE) {
		sbuf_puts(&c->out, "event: end\ndata: ");
		sbuf_put(&c->out, line, len);
		sbuf_puts(&c->out, "\n\n");
		lws_callback_on_writable(wsi);
	} else {
		ws_queue(wsi, c, true, line, len);
	}
	c->done = true;
}

static void on_line(struct api_conn *c, const char *line, size_t len)
{
	if (c->dropped)
		return;
	if (len > 9 && !memcmp(line, "{\"event\":", 9)) {
		/*
		 * The daemon's last word on this stream. Dropped, too slow: we
		 * stopped reading for a client that did not read, counted
		 * (unless queueing it dropped the client, counted there).
		 */
		send_end(tick_wsi, c, line, len);
		if (len > 18 && !memcmp(line, "{\"event\":\"dropped\"", 18) && !c->dropped)
			__atomic_add_fetch(&c->a->st.slow_clients, 1, __ATOMIC_RELAXED);
		return;
	}
	if (c->filter && matches(c->filter, line, len))
		send_line(tick_wsi, c, line, len);
}

/* The records of the output file at or after since (the file's last BACKLOG_MAX bytes). */
static void backlog(struct eg_api *a, struct lws *wsi, struct api_conn *c)
{
	struct stat st;
	char *buf, *p, *end;
	off_t from;
	ssize_t n;
	int fd;

	if (!a->o.output_path)
		return;
	fd = open(a->o.output_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(buf = malloc(BACKLOG_MAX + 1))) {
		close(fd);
		return;
	}
	from = st.st_size > (off_t)BACKLOG_MAX ? st.st_size - BACKLOG_MAX : 0;
	n = pread(fd, buf, BACKLOG_MAX, from);
	close(fd);
	if (n <= 0) {
		free(buf);
		return;
	}
	p = buf;
	end = buf + n;
	if (from) {
		/* the first line may be cut */
		p = memchr(p, '\n', end - p);
		p = p ? p + 1 : end;
	}
	while (p < end && !c->done) {
		char *nl = memchr(p, '\n', end - p);

		if (!nl)
			break;
		if (matches(c->filter, p, nl - p)) {
			/* what fits in what a client may leave unread: then the stream ends, saying so */
			if (c->out.len - c->out_off + (nl - p) + 512 > API_MAX_QUEUED) {
				static const char full[] = "{\"event\":\"closed\",\"reason\":\"the records since then "
							   "are more than a client may leave unread (4 MiB): ask for "
							   "a later since\"}";

				send_end(wsi, c, full, sizeof(full) - 1);
				break;
			}
			send_line(wsi, c, p, nl - p);
		}
		p = nl + 1;
	}
	free(buf);
}

int stream_events(struct eg_api *a, struct lws *wsi, struct api_conn *c, char *err, size_t errlen)
{
	struct filter_box *b = calloc(1, sizeof(*b));
	struct ctl_peer peer;
	char since[64];
	json_t *req, *reply;
	int fd = -1;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->filter = &b->f;
	/*
	 * A stream has no idle timeout and holds one of the daemon's
	 * followers for as long as it is open: a token holder opening
	 * stream after stream would take them all, and `execgate query
	 * --follow` on the control socket would find none left.
	 */
	if (a->nstreams >= API_MAX_STREAMS) {
		__atomic_add_fetch(&a->st.refused, 1, __ATOMIC_RELAXED);
		snprintf(err, errlen, "%d event streams are open already, the most the API serves at once: "
			 "close one, or try again later", API_MAX_STREAMS);
		return -EBUSY;
	}
	if (stream_filter(wsi, &b->f, since, sizeof(since), err, errlen))
		return -EINVAL;
	req = json_pack("{s:s}", "op", "follow");
	call_peer(a, wsi, c, false, &peer);
	reply = a->call(a, &peer, req, &fd, err, errlen);
	json_decref(req);
	if (!reply)
		return -EIO;
	if (!json_is_true(json_object_get(reply, "ok"))) {
		snprintf(err, errlen, "%s", json_string_value(json_object_get(reply, "error")) ?: "refused");
		json_decref(reply);
		if (fd >= 0)
			close(fd);
		return -EPERM;
	}
	json_decref(reply);
	c->stream_fd = fd;
	c->streaming = true;
	a->nstreams++;
	if (c->kind == CONN_SSE) {
		c->status = 200;
		c->ctype = "text/event-stream";
		sbuf_puts(&c->out, ": execgate records\n\n");
	}
	if (since[0])
		backlog(a, wsi, c);
	return 0;
}

/*
 * Whether an SSE client has closed its end. libwebsockets reads nothing
 * of an HTTP connection while it sends the answer, so it saw the end only
 * when a write failed: a stream whose filter matches seldom kept its slot
 * and the daemon's follower for good after its client had gone.
 */
static bool sse_client_gone(struct lws *wsi)
{
	/*
	 * The peer's end shut (POLLRDHUP), or the connection broken: a byte
	 * the client sent before it closed (a stray CRLF) does not hide it, as
	 * a peek at the next byte would. An SSE client reads until it closes
	 * and sends nothing after its request: one that shut its writing half
	 * and still reads is taken for gone.
	 */
	struct pollfd p = { .fd = lws_get_socket_fd(wsi), .events = POLLIN | POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

void stream_tick(struct lws *wsi, struct api_conn *c)
{
	int rc;

	if (c->done)
		return;
	if (c->kind == CONN_SSE && sse_client_gone(wsi)) {
		/* nobody to tell: closed at the next service, nothing more written */
		c->dropped = c->done = true;
		lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
		return;
	}
	tick_wsi = wsi;
	rc = call_stream_read(c, on_line);
	/*
	 * The stream ended (the daemon stopped, or dropped it for falling
	 * behind: on_line counted that). The client has 10 s to take the
	 * rest: a socket nobody reads never drains, and would hold its slot
	 * for ever.
	 */
	if (rc && !c->dropped)
		lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, API_END_GRACE_S);
	if (rc && !c->done) {
		static const char gone[] = "{\"event\":\"closed\",\"reason\":\"the daemon closed the stream\"}";

		on_line(c, gone, sizeof(gone) - 1);
	}
	if (c->done)
		lws_callback_on_writable(wsi);
}
