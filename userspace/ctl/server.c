// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "util/clock.h"
#include "util/jsonw.h"
#include "util/listen.h"
#include "util/log.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* Linux 6.5; the system headers may be older */
#endif

#define READ_CHUNK		65536
#define READS_PER_WAKEUP	4
/*
 * A connection is served this many requests a round: the loop that answers
 * them also drains the ring buffer and answers seccomp notifications, and
 * a 64 KiB read holds thousands of small requests.
 */
#define REQUESTS_PER_WAKEUP	32
/*
 * Connections with requests left over are served this many a round, so a
 * round stays short however many wait; a peer that just sent a request
 * is served in the round its request arrives.
 */
#define READY_PER_ROUND		8
/* Out of fds: how long the listening socket is left alone before accepting again. */
#define ACCEPT_PAUSE_MS		100
/* Replies the peer has not read yet, past which its requests wait. */
#define OUT_PAUSE		65536

struct handler {
	char op[CTL_MAX_OP + 1];
	enum ctl_access access;
	ctl_handler fn;
	void *arg;
};

struct ctl_fd {
	int fd;
	uint64_t at;			/* the stream offset of the last byte read with it */
};

struct ctl_conn {
	struct ctl_server *s;
	int fd;
	struct eg_watch *w;
	uint32_t events;		/* what the watch waits for now */
	struct sbuf in;
	size_t in_off;			/* in.data[0..in_off) is answered */
	uint64_t in_pos;		/* the stream offset of in.data[0] */
	uint64_t line_end;		/* ... of the '\n' of the request being dispatched */
	struct sbuf out;
	size_t out_off;
	uint64_t deadline;
	struct ctl_peer peer;
	bool in_session;		/* its process was in a session at accept (or could not be placed) */
	uint32_t session;		/* which (UINT32_MAX: not placed) */
	struct ctl_fd fds[CTL_MAX_FDS * 4];
	int nfds;
	bool held;
	bool closing;			/* flush what is queued, then close */
	bool dead;
	bool ready;			/* on the ready queue: requests read and waiting */
	bool paused;			/* requests wait until the peer reads its replies */
	int in_dispatch;
	void (*on_close)(struct ctl_conn *c, void *arg);
	void *close_arg;
	struct ctl_conn *prev, *next;
	struct ctl_conn *rnext;		/* the ready queue */
	uint64_t queued;		/* the round it was put on it */
};

struct ctl_server {
	struct eg_loop *loop;
	int fd;
	char path[108];
	gid_t ctl_gid;
	struct eg_watch *w, *tick;
	bool ticking;			/* tick is set: while a connection is open */
	bool warned_fds;
	struct handler *h;
	size_t nh;
	struct ctl_conn *conns;
	unsigned int nconns;
	struct ctl_conn *ready, **ready_tail;	/* served in turn, after the loop's events */
	int (*placer)(void *arg, const struct ctl_conn *c, uint32_t *ret_session);
	void *placer_arg;
	uint64_t round;				/* serve_ready() calls */
	struct ctl_server_stats st;
};

static void serve_ready(void *arg);

static void ready_add(struct ctl_conn *c)
{
	struct ctl_server *s = c->s;

	if (c->ready)
		return;
	c->ready = true;
	c->rnext = NULL;
	c->queued = s->round;
	if (!s->ready)
		s->ready_tail = &s->ready;
	*s->ready_tail = c;
	s->ready_tail = &c->rnext;
	loop_set_pending(s->loop, serve_ready, s);
}

static void ready_del(struct ctl_conn *c)
{
	struct ctl_server *s = c->s;
	struct ctl_conn **pp;

	if (!c->ready)
		return;
	for (pp = &s->ready; *pp != c; pp = &(*pp)->rnext)
		;
	*pp = c->rnext;
	if (s->ready_tail == &c->rnext)
		s->ready_tail = pp;
	c->ready = false;
}

static void conn_free(struct ctl_conn *c)
{
	struct ctl_server *s = c->s;
	int i;

	if (c->dead)
		return;
	c->dead = true;
	if (c->on_close) {
		void (*fn)(struct ctl_conn *, void *) = c->on_close;

		c->on_close = NULL;
		fn(c, c->close_arg);
	}
	ready_del(c);
	loop_del(c->w);
	close(c->fd);
	for (i = 0; i < c->nfds; i++)
		close(c->fds[i].fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	sbuf_free(&c->in);
	sbuf_free(&c->out);
	/* A handler higher up the stack may still hold c: free when it returns. */
	if (!c->in_dispatch)
		free(c);
}

void ctl_close(struct ctl_conn *c)
{
	if (c && !c->dead) {
		c->on_close = NULL;
		conn_free(c);
	}
}

/* Replies the peer does not read hold up its next requests (and our memory). */
static bool backed_up(const struct ctl_conn *c)
{
	return c->out.len - c->out_off > OUT_PAUSE;
}

static void update_events(struct ctl_conn *c)
{
	uint32_t ev = 0;

	if (c->out.len > c->out_off)
		ev |= EPOLLOUT;
	/*
	 * Read only what can be answered now. EPOLLRDHUP goes with EPOLLIN:
	 * it is level triggered, and a peer that half-closed would wake us
	 * at once, again and again, for nothing to do (EPOLLHUP and EPOLLERR
	 * are reported anyway).
	 */
	if (!c->closing && !c->ready && !backed_up(c))
		ev |= EPOLLIN | EPOLLRDHUP;
	if (ev != c->events && !loop_mod_fd(c->w, ev))
		c->events = ev;
}

/* Writes what it can without blocking; drops the connection on error (false: c is gone). */
static bool flush_out(struct ctl_conn *c)
{
	while (c->out.len > c->out_off) {
		ssize_t n = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			conn_free(c);
			return false;
		}
		c->out_off += n;
	}
	if (c->out_off == c->out.len) {
		sbuf_reset(&c->out);
		c->out_off = 0;
		if (c->closing) {
			conn_free(c);
			return false;
		}
	} else if (c->out_off >= OUT_PAUSE) {
		/* a peer that reads slowly but never all: keep only what is unsent */
		memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	if (c->paused && !backed_up(c)) {
		c->paused = false;
		ready_add(c);
	}
	update_events(c);
	return true;
}

bool ctl_send(struct ctl_conn *c, const char *json, size_t len)
{
	if (!c || c->dead)
		return false;
	if (c->out.len - c->out_off + len + 1 > CTL_MAX_OUTPUT || c->out.oom) {
		/* a peer that does not read its replies loses its connection */
		c->s->st.slow_reader++;
		conn_free(c);
		return false;
	}
	sbuf_put(&c->out, json, len);
	sbuf_putc(&c->out, '\n');
	return c->in_dispatch || flush_out(c);
}

size_t ctl_conn_unsent(const struct ctl_conn *c)
{
	return c && !c->dead ? c->out.len - c->out_off : 0;
}

void ctl_send_last(struct ctl_conn *c, const char *json, size_t len)
{
	const char *nl;

	if (!c || c->dead)
		return;
	/* keep the line under way whole: the peer reads whole lines, then this one */
	nl = c->out.len > c->out_off ? memchr(c->out.data + c->out_off, '\n', c->out.len - c->out_off) : NULL;
	c->out.len = nl ? (size_t)(nl + 1 - c->out.data) : c->out_off;
	c->out.oom = false;
	sbuf_put(&c->out, json, len);
	sbuf_putc(&c->out, '\n');
	c->closing = true;
	/* its last line has this long to go out: a peer that reads nothing more is not kept for good */
	c->deadline = eg_mono_ms() + CTL_IDLE_MS;
	if (!c->in_dispatch)
		flush_out(c);
	else
		update_events(c);
}

void ctl_reply_open(struct jsonw *w, struct sbuf *b)
{
	jsonw_init(w, b);
	jsonw_start_object(w);
	jsonw_bool_field(w, "ok", true);
}

void ctl_reply_send(struct ctl_conn *c, struct jsonw *w, struct sbuf *b)
{
	jsonw_end_object(w);
	if (b->oom)
		ctl_reply_err(c, "out of memory");
	else
		ctl_send(c, b->data, b->len);
	sbuf_free(b);
}

void ctl_reply_ok(struct ctl_conn *c, const char *extra)
{
	struct sbuf b = {};

	sbuf_puts(&b, "{\"ok\":true");
	if (extra)
		sbuf_puts(&b, extra);
	sbuf_putc(&b, '}');
	ctl_send(c, b.data, b.len);
	sbuf_free(&b);
}

void ctl_reply_err(struct ctl_conn *c, const char *fmt, ...)
{
	struct sbuf b = {};
	struct jsonw w;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "ok", false);
	jsonw_string_field(&w, "error", msg);
	jsonw_end_object(&w);
	ctl_send(c, b.data, b.len);
	sbuf_free(&b);
}

/* Replies with an error and closes once it is sent. */
static void reject(struct ctl_conn *c, const char *msg)
{
	ctl_reply_err(c, "%s", msg);
	c->closing = true;
}

int ctl_take_fd(struct ctl_conn *c)
{
	int fd;

	/* those read with a later request are that request's */
	if (!c->nfds || c->fds[0].at > c->line_end)
		return -1;
	fd = c->fds[0].fd;
	memmove(c->fds, c->fds + 1, (--c->nfds) * sizeof(c->fds[0]));
	return fd;
}

const struct ctl_peer *ctl_peer(const struct ctl_conn *c)
{
	return &c->peer;
}

int ctl_conn_fd(const struct ctl_conn *c)
{
	return c->fd;
}

int ctl_conn_pidfd(const struct ctl_conn *c)
{
	socklen_t len = sizeof(int);
	int fd = -1;

	if (!getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &fd, &len))
		return fd;
	if (errno != ENOPROTOOPT)
		return -errno;		/* the peer has exited */
	/* older kernels: by number, as SO_PEERCRED gave it */
	fd = syscall(SYS_pidfd_open, c->peer.pid, 0);
	return fd < 0 ? -errno : fd;
}

void ctl_hold(struct ctl_conn *c, void (*on_close)(struct ctl_conn *c, void *arg), void *arg)
{
	c->held = true;
	c->on_close = on_close;
	c->close_arg = arg;
}

static void dispatch(struct ctl_conn *c, const char *line, size_t len)
{
	struct ctl_server *s = c->s;
	char err[256];
	json_t *req;
	const char *op;
	size_t i, queued;
	int fd, rc;

	req = ctl_parse_request(line, len, err, sizeof(err));
	if (!req) {
		s->st.bad_request++;
		reject(c, err);
		return;
	}
	op = ctl_op(req);
	for (i = 0; i < s->nh && strcmp(s->h[i].op, op); i++)
		;
	if (i == s->nh) {
		ctl_reply_err(c, "unknown op \"%s\"", op);
	} else if (s->h[i].access == CTL_ADMIN && !c->peer.admin) {
		ctl_reply_err(c, "%s: permission denied: root or the daemon's --ctl-group only", op);
	} else {
		/* replies to earlier requests may still wait in c->out */
		queued = c->out.len;
		rc = s->h[i].fn(c, req, s->h[i].arg);
		if (rc < 0 && !c->dead && c->out.len == queued)
			ctl_reply_err(c, "%s failed: %s", op, strerror(-rc));
	}
	json_decref(req);
	/* fds the handler did not take are not carried to the next request */
	while (!c->dead && (fd = ctl_take_fd(c)) >= 0)
		close(fd);
	if (!c->dead)
		c->deadline = eg_mono_ms() + CTL_IDLE_MS;
}

/*
 * Without SO_PASSCRED, one read may join the data of several sends, but
 * it ends with the first one that carries fds (unix_stream_read_generic()
 * stops after it): fds belong to the request whose line holds the last
 * byte of the read that brought them, not its first.
 */
static void take_fds(struct ctl_conn *c, struct msghdr *mh, uint64_t at)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		int *fds, n, i;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		fds = (int *)CMSG_DATA(cm);
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			if (c->nfds < (int)(sizeof(c->fds) / sizeof(c->fds[0]))) {
				c->fds[c->nfds].fd = fds[i];
				c->fds[c->nfds++].at = at;
			} else {
				close(fds[i]);
			}
		}
	}
}

/* One read; false when there is nothing more to read now, or c is closing or gone. */
static bool read_more(struct ctl_conn *c)
{
	char cbuf[CMSG_SPACE(CTL_MAX_FDS * sizeof(int))];
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	if (c->in_off) {
		memmove(c->in.data, c->in.data + c->in_off, c->in.len - c->in_off);
		c->in.len -= c->in_off;
		c->in_pos += c->in_off;
		c->in_off = 0;
	}
	if (sbuf_reserve(&c->in, READ_CHUNK)) {
		conn_free(c);
		return false;
	}
	iov.iov_base = c->in.data + c->in.len;
	iov.iov_len = READ_CHUNK;
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return false;
	if (n < 0 || (n == 0 && c->held)) {
		/* the peer is gone (a held conn tells its owner) */
		conn_free(c);
		return false;
	}
	if (n == 0) {
		/* the peer has sent all it will: answer what it asked, then close */
		c->closing = true;
		return false;
	}
	take_fds(c, &mh, c->in_pos + c->in.len + n - 1);
	c->in.len += n;
	return true;
}

/*
 * Answers at most REQUESTS_PER_WAKEUP requests, reads more (if readable)
 * only when all that was read is answered, and none while the replies wait
 * for the peer. Returns true when requests are left for a later round.
 */
static bool serve(struct ctl_conn *c, bool readable)
{
	int budget = REQUESTS_PER_WAKEUP, reads = 0;

	while (!c->dead && !c->closing && !backed_up(c)) {
		size_t avail = c->in.len - c->in_off;
		char *line = avail ? c->in.data + c->in_off : NULL;
		char *nl = avail ? memchr(line, '\n', avail) : NULL;
		size_t len = nl ? (size_t)(nl - line) : avail;

		if (len > CTL_MAX_REQUEST) {
			char msg[96];

			snprintf(msg, sizeof(msg), "request too large (more than %u bytes)", CTL_MAX_REQUEST);
			c->s->st.too_large++;
			sbuf_reset(&c->in);
			c->in_off = 0;
			reject(c, msg);
			break;
		}
		if (nl) {
			if (!budget)
				return true;
			budget--;
			c->line_end = c->in_pos + c->in_off + len;
			dispatch(c, line, len);
			if (!c->dead)
				c->in_off += len + 1;
			continue;
		}
		if (!readable || reads++ == READS_PER_WAKEUP || !read_more(c))
			break;
	}
	if (!c->dead && !c->closing && backed_up(c))
		c->paused = true;
	return false;
}

static void serve_and_flush(struct ctl_conn *c, bool readable)
{
	bool more;

	c->in_dispatch++;
	more = serve(c, readable);
	c->in_dispatch--;
	if (c->dead) {
		if (!c->in_dispatch)
			free(c);
		return;
	}
	if (more)
		ready_add(c);
	flush_out(c);
}

/* Connections with requests left over: each is served in turn, one batch a round. */
static void serve_ready(void *arg)
{
	struct ctl_server *s = arg;
	unsigned int n = READY_PER_ROUND;
	struct ctl_conn *c;

	/*
	 * One batch a connection a round: those queued since the last call
	 * (served in this round's events, or put back just now) wait.
	 */
	while (n-- && (c = s->ready) && c->queued != s->round) {
		ready_del(c);
		serve_and_flush(c, false);
	}
	s->round++;
	if (s->ready)
		loop_set_pending(s->loop, serve_ready, s);
}

static void on_conn(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct ctl_conn *c = arg;

	(void)w;
	(void)fd;
	if (events & EPOLLOUT) {
		c->in_dispatch++;
		flush_out(c);
		c->in_dispatch--;
		if (c->dead) {
			if (!c->in_dispatch)
				free(c);
			return;
		}
	}
	/* one on the ready queue is served from there */
	if (!c->ready)
		serve_and_flush(c, events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR));
}

/*
 * Root, or ctl_gid among the peer's groups: primary, or supplementary as
 * the kernel recorded them when it connected (SO_PEERGROUPS, however many).
 */
static bool peer_is_admin(const struct ctl_server *s, int fd, const struct ucred *cr)
{
	gid_t some[64], *groups = some;
	socklen_t len = sizeof(some);
	bool found = false;
	size_t i;

	if (cr->uid == 0)
		return true;
	if (s->ctl_gid == (gid_t)-1)
		return false;
	if (cr->gid == s->ctl_gid)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len)) {
		/* ERANGE: len is what they need (NGROUPS_MAX of them at most) */
		if (errno != ERANGE || !(groups = malloc(len)))
			return false;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
			len = 0;
	}
	for (i = 0; i < len / sizeof(gid_t) && !found; i++)
		found = groups[i] == s->ctl_gid;
	if (groups != some)
		free(groups);
	return found;
}

/*
 * One local user cannot take every connection, nor three: root and
 * --ctl-group always find room (the last CTL_ADMIN_RESERVE are theirs);
 * any other user gets their first CTL_UID_FLOOR whenever there is room,
 * and more (up to CTL_MAX_CONNS_PER_UID) only while more than
 * CTL_UID_SLACK places stay free for the others. Processes in sessions
 * have the sessions' shares instead (server.h), apart from these.
 */
static bool room_for(const struct ctl_server *s, const struct ucred *cr, bool admin, bool in_session,
		     uint32_t session)
{
	const struct ctl_conn *c;
	unsigned int mine = 0, same = 0, all = 0;

	if (in_session) {
		for (c = s->conns; c; c = c->next) {
			all += c->in_session;
			same += c->in_session && c->session == session;
			mine += c->in_session && c->peer.uid == cr->uid;
		}
		/* the sessions' shares; apart from what the user has outside sessions */
		return same < CTL_SESSION_CONNS && all < CTL_SESSIONS_CONNS && mine < CTL_SESSIONS_CONNS_PER_UID &&
		       (admin || s->nconns < CTL_MAX_CONNS - CTL_ADMIN_RESERVE);
	}
	if (admin)
		return true;
	if (s->nconns >= CTL_MAX_CONNS - CTL_ADMIN_RESERVE)
		return false;
	for (c = s->conns; c; c = c->next)
		mine += !c->in_session && c->peer.uid == cr->uid;
	if (mine >= CTL_MAX_CONNS_PER_UID)
		return false;
	return mine < CTL_UID_FLOOR || CTL_MAX_CONNS - CTL_ADMIN_RESERVE - s->nconns > CTL_UID_SLACK;
}

/*
 * Out of fds, the listening socket stays readable and epoll would report
 * it at once, round after round: leave it alone for a while (peers wait
 * in the listen queue) and say so once.
 */
static void pause_accept(struct ctl_server *s)
{
	s->st.no_fds++;
	if (!s->warned_fds) {
		p_warn("control socket: %s; accepting again every %d ms until fds are closed "
		       "(raise RLIMIT_NOFILE, LimitNOFILE= in the unit)", strerror(errno), ACCEPT_PAUSE_MS);
		s->warned_fds = true;
	}
	loop_pause_fd(s->w, EPOLLIN, ACCEPT_PAUSE_MS);
}

static void on_listen(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct ctl_server *s = arg;
	int i;

	(void)w;
	(void)events;
	for (i = 0; i < 64; i++) {
		struct ucred cr;
		socklen_t len = sizeof(cr);
		struct ctl_conn *c;
		bool admin = false;
		uint32_t session;
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (cfd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pause_accept(s);
			return;
		}
		if (s->nconns >= CTL_MAX_CONNS || getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
			s->st.refused++;
			close(cfd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			continue;
		}
		c->s = s;
		c->fd = cfd;
		c->peer.pid = cr.pid;
		c->peer.uid = cr.uid;
		c->peer.gid = cr.gid;
		session = 0;
		if (s->placer && s->placer(s->placer_arg, c, &session))
			session = UINT32_MAX;	/* gone already, or unknown: a share of its own, inside */
		if (!room_for(s, &cr, (admin = peer_is_admin(s, cfd, &cr)), session != 0, session)) {
			s->st.refused++;
			close(cfd);
			free(c);
			continue;
		}
		s->st.accepted++;
		c->peer.admin = admin;
		c->in_session = session != 0;
		c->session = session;
		c->deadline = eg_mono_ms() + CTL_IDLE_MS;
		c->events = EPOLLIN | EPOLLRDHUP;
		if (loop_add_fd(s->loop, cfd, c->events, on_conn, c, &c->w)) {
			close(cfd);
			free(c);
			continue;
		}
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->nconns++;
		/* the deadline's tick runs while a connection is open: an idle daemon has no timer */
		if (!s->ticking && !loop_timer_set(s->tick, 1000, 1000))
			s->ticking = true;
	}
}

void ctl_server_set_placer(struct ctl_server *s,
			   int (*placer)(void *arg, const struct ctl_conn *c, uint32_t *ret_session), void *arg)
{
	s->placer = placer;
	s->placer_arg = arg;
}

int ctl_server_adopt(struct ctl_server *s, int fd, const struct ctl_peer *peer)
{
	struct ctl_conn *c;

	loop_assert_held(s->loop, "ctl_server_adopt");
	if (s->nconns >= CTL_MAX_CONNS - CTL_ADMIN_RESERVE) {
		s->st.refused++;
		close(fd);
		return -EMFILE;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c->s = s;
	c->fd = fd;
	c->peer = *peer;
	c->deadline = eg_mono_ms() + CTL_IDLE_MS;
	c->events = EPOLLIN | EPOLLRDHUP;
	if (loop_add_fd(s->loop, fd, c->events, on_conn, c, &c->w)) {
		close(fd);
		free(c);
		return -ENOMEM;
	}
	s->st.accepted++;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	return 0;
}

/* Drops connections that sat on half a request (or nothing) for too long. */
static void on_tick(struct eg_watch *w, uint64_t n, void *arg)
{
	struct ctl_server *s = arg;
	struct ctl_conn *c, *next;
	uint64_t now = eg_mono_ms();

	(void)w;
	(void)n;
	for (c = s->conns; c; c = next) {
		next = c->next;
		/* held ones are their owner's, but for one closing whose last line was never read */
		if ((!c->held || c->closing) && now > c->deadline) {
			s->st.timed_out++;
			conn_free(c);
		}
	}
	if (!s->conns && !loop_timer_set(s->tick, 0, 0))
		s->ticking = false;
}

int ctl_server_new(struct eg_loop *loop, const char *path, gid_t ctl_gid, int adopt_fd,
		   struct ctl_server **ret)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ctl_server *s;
	int err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->ctl_gid = ctl_gid;
	snprintf(s->path, sizeof(s->path), "%s", path);
	strcpy(sa.sun_path, path);
	if (adopt_fd >= 0) {
		/* the previous daemon's socket: clients queued meanwhile are served now */
		s->fd = adopt_fd;
		eg_listen_adopt(s->fd);
	} else {
		/* We hold the daemon lock: a socket file here is a dead daemon's. */
		unlink(path);
		s->fd = eg_listen((struct sockaddr *)&sa, sizeof(sa), 128, 0666);
		if (s->fd < 0) {
			err = s->fd;
			unlink(path);
			free(s);
			return err;
		}
	}
	err = loop_add_fd(loop, s->fd, EPOLLIN, on_listen, s, &s->w);
	if (!err)
		err = loop_pausable(s->w);
	if (!err)
		err = loop_add_timer(loop, 0, 0, on_tick, s, &s->tick);
	if (err)
		goto fail;
	*ret = s;
	return 0;
fail:
	loop_del(s->w);
	loop_del(s->tick);
	close(s->fd);
	unlink(path);
	free(s);
	return err;
}

void ctl_server_free(struct ctl_server *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_free(s->conns);
	loop_cancel_pending(s->loop, serve_ready, s);
	loop_del(s->w);
	loop_del(s->tick);
	close(s->fd);
	unlink(s->path);
	free(s->h);
	free(s);
}

int ctl_register(struct ctl_server *s, const char *op, enum ctl_access access, ctl_handler fn,
		 void *arg)
{
	struct handler *h = realloc(s->h, (s->nh + 1) * sizeof(*h));

	if (!h)
		return -ENOMEM;
	s->h = h;
	snprintf(h[s->nh].op, sizeof(h[s->nh].op), "%s", op);
	h[s->nh].access = access;
	h[s->nh].fn = fn;
	h[s->nh].arg = arg;
	s->nh++;
	return 0;
}

unsigned int ctl_conn_count(const struct ctl_server *s)
{
	return s->nconns;
}

void ctl_server_stats(const struct ctl_server *s, struct ctl_server_stats *ret)
{
	*ret = s->st;
}

int ctl_server_fd(const struct ctl_server *s)
{
	return s->fd;
}
