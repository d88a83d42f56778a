// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The datagram socket both sinks share: connect lazily, send without waiting, count. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "events/sinks.h"
#include "loop/loop.h"
#include "util/clock.h"

#define RECONNECT_MS	1000	/* no listener: try again at most this often */
#define BACKLOG_MAX	(4u << 20)	/* datagrams the listener's queue had no room for yet */

struct eg_sink {
	struct eg_tap tap;
	const char *kind;
	char *path;
	bool journal;
	int fd;
	uint64_t next_connect_ms;
	struct sbuf msg;
	struct sbuf cut;		/* a record cut to max */
	size_t max;			/* syslog: the longest datagram; 0: any */
	char host[256];
	int pid;
	struct eg_sink_stats st;
	/* a listener's queue is short (net.unix.max_dgram_qlen, 10 by default): the rest waits here */
	struct sbuf q;			/* [u32 length][datagram]... */
	size_t q_off;
	struct eg_loop *loop;
	struct eg_watch *w;		/* EPOLLOUT while the backlog waits */
};

static int sink_connect(struct eg_sink *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (s->fd >= 0)
		return 0;
	if (eg_mono_ms() < s->next_connect_ms)
		return -EAGAIN;
	s->next_connect_ms = eg_mono_ms() + RECONNECT_MS;
	if (strlen(s->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, s->path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	s->fd = fd;
	return 0;
}

/* journald takes a datagram too large for the socket as a sealed memfd (its native protocol) */
static int send_memfd(struct eg_sink *s)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct msghdr mh = { .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = memfd_create("execgate-journal", MFD_CLOEXEC | MFD_ALLOW_SEALING), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s->msg.data, s->msg.len) != (ssize_t)s->msg.len ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		close(fd);
		return -EIO;
	}
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(s->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static void failed(struct eg_sink *s, int rc)
{
	s->st.dropped++;
	s->st.last_error = rc;
	if (rc == -ECONNREFUSED || rc == -ENOTCONN || rc == -ENOENT) {
		/* the listener went away (restarted): connect again later */
		if (s->w) {
			loop_del(s->w);
			s->w = NULL;
		}
		close(s->fd);
		s->fd = -1;
	}
}

/* 0 sent, -EAGAIN the listener's queue is full, else why it cannot go */
static int send_one(struct eg_sink *s, const char *msg, size_t len)
{
	int rc;

	if (send(s->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
		return 0;
	rc = -errno;
	if (rc == -EWOULDBLOCK)
		rc = -EAGAIN;
	if (rc == -EMSGSIZE && s->journal) {
		sbuf_reset(&s->msg);
		sbuf_put(&s->msg, msg, len);
		rc = send_memfd(s);
	}
	return rc;
}

static void on_writable(struct eg_watch *w, int fd, uint32_t events, void *arg);

static void arm(struct eg_sink *s, bool on)
{
	if (on && !s->w && s->loop && s->fd >= 0)
		loop_add_fd(s->loop, s->fd, EPOLLOUT, on_writable, s, &s->w);
	if (!on && s->w) {
		loop_del(s->w);
		s->w = NULL;
	}
}

/* What waits goes out, as far as the listener takes it. */
static void pump(struct eg_sink *s)
{
	uint32_t len;
	int rc;

	while (s->q_off < s->q.len && s->fd >= 0) {
		memcpy(&len, s->q.data + s->q_off, 4);
		rc = send_one(s, s->q.data + s->q_off + 4, len);
		if (rc == -EAGAIN) {
			arm(s, true);
			return;
		}
		if (rc)
			failed(s, rc);
		else
			s->st.sent++;
		s->q_off += 4 + len;
	}
	if (s->q_off < s->q.len) {
		/* no listener any more: what waited for it is lost, counted */
		for (; s->q_off < s->q.len; s->q_off += 4 + len) {
			memcpy(&len, s->q.data + s->q_off, 4);
			s->st.dropped++;
		}
	}
	/* emptied: a buffer a burst grew goes back (doubling made it up to twice what it held) */
	if (s->q.cap > BACKLOG_MAX / 8)
		sbuf_free(&s->q);
	else
		sbuf_reset(&s->q);
	s->q_off = 0;
	arm(s, false);
}

static void on_writable(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	(void)w;
	(void)fd;
	(void)events;
	pump(arg);
}

static void on_flushed(struct eg_tap *t)
{
	pump((struct eg_sink *)t);
}

/* The datagram in msg behind what waits; false: dropped (counted). */
static bool enqueue(struct eg_sink *s)
{
	uint32_t len = s->msg.len;
	size_t before;

	if (s->q.len - s->q_off + 4 + len > BACKLOG_MAX) {
		s->st.dropped++;
		s->st.last_error = -ENOBUFS;
		return false;
	}
	/*
	 * A listener that keeps up, but never with all of it, never empties
	 * the queue: what it took leaves the front once it is an eighth of
	 * the backlog, so the buffer stays under BACKLOG_MAX and that eighth,
	 * and each byte is moved at most eight times.
	 */
	if (s->q_off >= BACKLOG_MAX / 8) {
		memmove(s->q.data, s->q.data + s->q_off, s->q.len - s->q_off);
		s->q.len -= s->q_off;
		s->q_off = 0;
	}
	before = s->q.len;
	sbuf_put(&s->q, (const char *)&len, 4);
	sbuf_put(&s->q, s->msg.data, len);
	if (s->q.oom) {
		/* nothing half queued stays (a length with no datagram behind it would be read past) */
		s->q.len = before;
		s->q.oom = false;
		s->st.dropped++;
		s->st.last_error = -ENOMEM;
		return false;
	}
	arm(s, true);
	return true;
}

static void on_record(struct eg_tap *t, const char *line, size_t len, enum eg_rec_kind kind, int severity)
{
	struct eg_sink *s = (struct eg_sink *)t;
	bool cut = false, queued;
	int rc;

	(void)kind;
	if (len && line[len - 1] == '\n')
		len--;
	sbuf_reset(&s->msg);
	rc = s->journal ? sink_format_journal(&s->msg, line, len, severity)
			: sink_format_syslog(&s->msg, line, len, severity, s->host, s->pid);
	/* longer than the listener takes (rsyslog cuts at its message size): argv cut to fit */
	if (!rc && !s->msg.oom && !s->journal && s->max && s->msg.len > s->max) {
		size_t header = s->msg.len - len;

		sbuf_reset(&s->cut);
		rc = header < s->max ? sink_cut_argv(&s->cut, line, len, s->max - header) : -E2BIG;
		if (rc) {
			/* its path and working directory alone are too long: what it was, where the file has it */
			sbuf_reset(&s->cut);
			rc = sink_stub_record(&s->cut, line, len);
			if (!rc && header + s->cut.len > s->max)
				rc = -EMSGSIZE;
		}
		if (!rc) {
			sbuf_reset(&s->msg);
			rc = sink_format_syslog(&s->msg, s->cut.data, s->cut.len, severity, s->host, s->pid);
			cut = true;
		} else {
			rc = -EMSGSIZE;
		}
	}
	if (!rc && s->msg.oom)
		rc = -ENOMEM;
	if (!rc)
		rc = sink_connect(s);
	if (!rc && s->q_off < s->q.len) {
		queued = enqueue(s);	/* in order, behind what waits */
		s->st.cut += cut && queued;
		return;
	}
	if (!rc)
		rc = send_one(s, s->msg.data, s->msg.len);
	if (rc == -EAGAIN) {
		queued = enqueue(s);
		s->st.cut += cut && queued;
		return;
	}
	if (rc)
		failed(s, rc);
	else {
		s->st.sent++;
		s->st.cut += cut;
		s->st.last_error = 0;
	}
}

int sink_new(const char *kind, const char *path, int min_severity, struct eg_loop *loop, struct eg_sink **ret)
{
	struct eg_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->journal = !strcmp(kind, "journal");
	s->kind = s->journal ? "journal" : "syslog";
	s->path = strdup(path ? path : s->journal ? JOURNAL_DEFAULT_SOCKET : SYSLOG_DEFAULT_SOCKET);
	if (!s->path) {
		free(s);
		return -ENOMEM;
	}
	s->fd = -1;
	s->tap.fn = on_record;
	s->tap.flushed = on_flushed;
	s->loop = loop;
	s->tap.min_severity = min_severity;
	if (gethostname(s->host, sizeof(s->host)) || !s->host[0])
		strcpy(s->host, "-");
	s->host[sizeof(s->host) - 1] = '\0';
	s->pid = getpid();
	sink_connect(s);	/* a first try; a missing listener is counted per record */
	*ret = s;
	return 0;
}

#define FINAL_DRAIN_MS	1000	/* at the stop: what waits, the stop record with it, gets this long */

void sink_drain(struct eg_sink *s, unsigned int ms)
{
	uint64_t deadline = eg_mono_ms() + ms;
	struct eg_loop *loop;

	if (!s)
		return;
	loop = s->loop;
	arm(s, false);
	s->loop = NULL;
	while (s->q_off < s->q.len && s->fd >= 0 && eg_mono_ms() < deadline) {
		struct pollfd p = { .fd = s->fd, .events = POLLOUT };

		if (poll(&p, 1, (int)(deadline - eg_mono_ms())) <= 0)
			break;
		pump(s);
	}
	s->loop = loop;
	if (s->q_off < s->q.len)
		arm(s, true);
}

void sink_drop_backlog(struct eg_sink *s)
{
	uint32_t len;

	if (!s)
		return;
	for (; s->q_off < s->q.len; s->q_off += 4 + len) {
		memcpy(&len, s->q.data + s->q_off, 4);
		s->st.dropped++;
	}
	sbuf_reset(&s->q);
	s->q_off = 0;
	arm(s, false);
}

void sink_free(struct eg_sink *s)
{
	if (!s)
		return;
	sink_drain(s, FINAL_DRAIN_MS);
	arm(s, false);
	s->loop = NULL;
	if (s->fd >= 0)
		close(s->fd);
	sbuf_free(&s->msg);
	sbuf_free(&s->cut);
	sbuf_free(&s->q);
	free(s->path);
	free(s);
}

void sink_set_max_bytes(struct eg_sink *s, size_t max)
{
	s->max = max;
}

void sink_set_host(struct eg_sink *s, const char *host)
{
	snprintf(s->host, sizeof(s->host), "%s", host);
}

struct eg_tap *sink_tap(struct eg_sink *s)
{
	return &s->tap;
}

const struct eg_sink_stats *sink_stats(const struct eg_sink *s)
{
	return &s->st;
}

size_t sink_backlog_held(const struct eg_sink *s)
{
	return s->q.len;
}

size_t sink_backlog_allocated(const struct eg_sink *s)
{
	return s->q.cap;
}

const char *sink_path(const struct eg_sink *s)
{
	return s->path;
}

const char *sink_kind(const struct eg_sink *s)
{
	return s->kind;
}

void sink_restore_stats(struct eg_sink *s, const struct eg_sink_stats *st)
{
	s->st.sent = st->sent;
	s->st.dropped = st->dropped;
	s->st.cut = st->cut;
}
