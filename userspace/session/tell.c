// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The line a refused task finds on its stderr ("execgate: denied: ...").
 * Its fd 2 is whatever the task made it, and touching a file reaches its
 * file system: on a FUSE mount the session serves itself, poll waits for
 * FUSE_POLL, fstat for GETATTR, write for WRITE and every close of a copy
 * for FUSE_FLUSH, which no signal interrupts. So fd 2 is judged from /proc
 * first (its name, then its mount and that mount's type), and only a pipe,
 * a socket, a terminal or a regular file on a local file system is taken
 * (pidfd_getfd) and written, never waiting.
 *
 * A look from /proc is not the file taken: another thread sharing the
 * task's descriptor table can swap fd 2 in between, at will. The copy is
 * checked again and not written when it changed, but it is ours by then,
 * and closing it may wait for ever. So the look, the copy and its close
 * happen in a helper process, the teller, forked at the daemon's start
 * and holding nothing of the daemon's: what waits there waits
 * alone, holds no listener, and neither the event loop nor the daemon's
 * exit or re-exec (SIGUSR2) waits for it. The loop waits for the line at
 * most TELL_WAIT_MS (so that it comes before the exec fails, while the
 * task surely holds its stderr); while the teller is busy (a close that
 * waits on a file system) refusals go without their line.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "session/internal.h"
#include "util/clock.h"
#include "util/log.h"

#ifndef __NR_close_range
#define __NR_close_range 436
#endif

#define TELL_WAIT_MS		100
/* after a wait that timed out, no waiting for this long: a task cannot make every refusal cost it */
#define TELL_NOWAIT_NS		(10ull * 1000000000ull)
/* a line the teller gets to later than this is not written: its exec was answered long ago */
#define TELL_LATE_NS		(1000ull * 1000000ull)
#define TELL_LINE_MAX		1024

struct eg_teller {
	int sock;			/* SOCK_SEQPACKET to the teller; -1: gone */
	bool busy;			/* a request sent, its 'd' or 'i' not back */
	uint64_t nowait_until_ns;
};

/*
 * Loop -> teller, with the task's pidfd (SCM_RIGHTS). Teller -> loop: 'd'
 * done (the line written or not, nothing left open), or 'w' done and 'i'
 * later, once it closed a copy that was not what it looked at.
 */
struct tell_req {
	int32_t tgid;
	uint32_t pad;
	uint64_t deadline_ns;
	char line[TELL_LINE_MAX];
};

/* ---- the teller ------------------------------------------------------------ */

enum fd_kind { FD_PIPE = 1, FD_SOCKET, FD_FILE };

struct fd_seen {
	enum fd_kind kind;
	int flags;
	int mnt;
	unsigned long long ino;
};

/* The mounts of pipes and sockets (one each, the kernel's own), from a pipe and a socket of ours. */
struct tell_mnts {
	int pipe, sock;
};

/*
 * Local file systems whose files a task cannot make us wait on. Not FUSE,
 * not network file systems (nfs, cifs, 9p: a server the session may run),
 * not overlay (its layers may be any of those).
 */
static bool fs_local(const char *type)
{
	static const char *const ok[] = { "devpts", "devtmpfs", "tmpfs", "ext2", "ext3", "ext4",
					  "xfs", "btrfs", "f2fs" };
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(type, ok[i]))
			return true;
	return false;
}

/* Terminals (tty, /dev/tty and console, pty slaves): character devices safe to poll and write. */
static bool chr_terminal(dev_t rdev)
{
	unsigned int maj = major(rdev);

	return maj == 4 || maj == 5 || (maj >= 136 && maj <= 143);
}

static bool writable(int flags)
{
	return (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
}

/*
 * What descriptor n of process pid ("self": ours) is, from /proc alone: its
 * name, then its fdinfo. Neither calls into the file's file system; the
 * name comes first because an anonymous file's fdinfo can wait (an epoll's
 * takes the lock its owner holds while it polls a file on FUSE).
 */
static int fd_look(const char *pid, int n, struct fd_seen *ret)
{
	char path[64], name[64], buf[512];
	ssize_t len;
	char *p;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/fd/%d", pid, n);
	len = readlink(path, name, sizeof(name) - 1);
	if (len <= 0)
		return -ENOENT;
	name[len] = '\0';
	if (!strncmp(name, "pipe:[", 6))
		ret->kind = FD_PIPE;
	else if (!strncmp(name, "socket:[", 8))
		ret->kind = FD_SOCKET;
	else if (name[0] == '/')
		ret->kind = FD_FILE;
	else
		return -EPERM;
	snprintf(path, sizeof(path), "/proc/%s/fdinfo/%d", pid, n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return -EIO;
	buf[len] = '\0';
	ret->flags = -1;
	ret->mnt = -1;
	ret->ino = 0;
	if ((p = strstr(buf, "flags:")))
		ret->flags = strtol(p + 6, NULL, 8);
	if ((p = strstr(buf, "mnt_id:")))
		ret->mnt = strtol(p + 7, NULL, 10);
	if ((p = strstr(buf, "ino:")))
		ret->ino = strtoull(p + 4, NULL, 10);
	return ret->flags < 0 || ret->mnt < 0 ? -EIO : 0;
}


/* Whether mount mnt, as process tgid sees its mounts, is of a local file system. */
static bool mount_local(pid_t tgid, int mnt)
{
	char path[64], *line = NULL, *sep, *type;
	size_t cap = 0;
	bool local = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)tgid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		if (atoi(line) != mnt)
			continue;
		/* "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE ..." */
		sep = strstr(line, " - ");
		type = sep ? strtok(sep + 3, " ") : NULL;
		local = type && fs_local(type);
		break;
	}
	free(line);
	fclose(f);
	return local;
}

/* A pipe or socket in the kernel's own mount for them, or a file on a local file system. */
static bool look_safe(const struct tell_mnts *m, pid_t tgid, const struct fd_seen *l)
{
	if (!writable(l->flags))
		return false;
	if (l->kind == FD_PIPE)
		return l->mnt == m->pipe;
	if (l->kind == FD_SOCKET)
		return l->mnt == m->sock;
	return mount_local(tgid, l->mnt);
}

/*
 * Writes line to fd (the task's, shared with it) without ever waiting:
 * another of its threads may fill a pipe between our poll and our write,
 * and its reader may never read. The file's flags are the task's, so
 * O_NONBLOCK is not ours to set: RWF_NOWAIT where the file takes it, a
 * socket's MSG_DONTWAIT, a terminal reopened non-blocking; else nothing.
 */
static void write_nowait(int fd, enum fd_kind kind, mode_t mode, const char *line)
{
	struct iovec v = { .iov_base = (void *)line, .iov_len = strlen(line) };
	char proc[64];
	ssize_t n;
	int wfd;

	n = pwritev2(fd, &v, 1, -1, RWF_NOWAIT);
	if (n >= 0 || errno != EOPNOTSUPP)
		return;
	if (kind == FD_SOCKET) {
		n = send(fd, line, v.iov_len, MSG_DONTWAIT | MSG_NOSIGNAL);
	} else if (kind == FD_FILE && S_ISREG(mode)) {
		n = write(fd, line, v.iov_len);
	} else if (kind == FD_FILE && S_ISCHR(mode) && isatty(fd)) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		wfd = open(proc, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (wfd < 0)
			return;
		n = write(wfd, line, v.iov_len);
		close(wfd);
	}
	(void)n;
}

/*
 * One line on the stderr of process tgid (pidfd), if it is safe to write.
 * A copy that proved to be what we looked at is closed here (a pipe, a
 * socket, a terminal or regular file on a local file system: nothing
 * waits); any other is returned, for the caller to close once the loop
 * has its answer (that close may wait), or -1.
 */
static int tell_one(const struct tell_mnts *m, int pidfd, pid_t tgid, const char *line)
{
	struct pollfd pfd = { .events = POLLOUT };
	struct fd_seen want, got;
	struct stat st = {};
	char pid[16];
	int fd;

	snprintf(pid, sizeof(pid), "%d", (int)tgid);
	if (fd_look(pid, 2, &want) || !look_safe(m, tgid, &want))
		return -1;
	fd = syscall(__NR_pidfd_getfd, pidfd, 2, 0);
	if (fd < 0)
		return -1;
	/* what we took must be what we looked at: fd 2 may have been swapped meanwhile */
	if (fd_look("self", fd, &got) || got.kind != want.kind || got.mnt != want.mnt ||
	    got.ino != want.ino || !writable(got.flags))
		return fd;
	/* on a local file system now: fstat and poll stay in the kernel */
	if (got.kind == FD_FILE) {
		if (fstat(fd, &st))
			return fd;
		if (!S_ISREG(st.st_mode) && !(S_ISCHR(st.st_mode) && chr_terminal(st.st_rdev)))
			return fd;
	}
	pfd.fd = fd;
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLOUT))
		write_nowait(fd, got.kind, st.st_mode, line);
	close(fd);
	return -1;
}

static int mnt_of(int fd)
{
	struct fd_seen l;

	return fd_look("self", fd, &l) ? -1 : l.mnt;
}

static void __attribute__((noreturn)) teller_main(int sock)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct tell_mnts m = { -1, -1 };
	struct tell_req q;
	sigset_t none;
	int p[2], null;

	prctl(PR_SET_NAME, "execgate-tell");
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* nothing of the daemon's: no listener held here, no descriptor of ours to wait on */
	if (sock != 3) {
		if (dup2(sock, 3) < 0)
			_exit(1);
		sock = 3;
	}
	if (syscall(__NR_close_range, 4, ~0U, 0)) {
		/* before Linux 5.9: one by one, up to the limit */
		long max = sysconf(_SC_OPEN_MAX);

		for (int fd = 4; fd < (max > 0 && max < 1048576 ? max : 65536); fd++)
			close(fd);
	}
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
		_exit(1);
	if (null > 3)
		close(null);
	/* the daemon's heap, shared with it until it writes: what is free goes back */
	malloc_trim(0);
	if (!pipe2(p, O_CLOEXEC)) {
		m.pipe = mnt_of(p[0]);
		close(p[0]);
		close(p[1]);
	}
	if (!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p)) {
		m.sock = mnt_of(p[0]);
		close(p[0]);
		close(p[1]);
	}
	for (;;) {
		struct iovec v = { .iov_base = &q, .iov_len = sizeof(q) };
		struct msghdr msg = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl,
				      .msg_controllen = sizeof(ctl) };
		struct cmsghdr *c;
		int pidfd = -1, copy = -1;
		ssize_t n;

		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);	/* the daemon closed its end: it stopped or re-executed */
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int)))
				memcpy(&pidfd, CMSG_DATA(c), sizeof(int));
		if (pidfd >= 0 && n == (ssize_t)sizeof(q) && eg_mono_ns() < q.deadline_ns) {
			q.line[sizeof(q.line) - 1] = '\0';
			copy = tell_one(&m, pidfd, q.tgid, q.line);
		}
		if (pidfd >= 0)
			close(pidfd);
		if (copy < 0) {
			send(sock, "d", 1, MSG_NOSIGNAL);
			continue;
		}
		send(sock, "w", 1, MSG_NOSIGNAL);
		/* FUSE_FLUSH, should fd 2 have been swapped for a file on FUSE: only we wait */
		close(copy);
		send(sock, "i", 1, MSG_NOSIGNAL);
	}
}

/* ---- the loop's side ---------------------------------------------------------- */

static void teller_gone(struct eg_teller *t)
{
	p_warn("session: the stderr helper (execgate-tell) is gone; refusals go without their line");
	close(t->sock);
	t->sock = -1;
}

/* What the teller said since we last looked; *ret_done on a 'd' or 'w'. -EPIPE: it is gone. */
static int tell_drain(struct eg_teller *t, bool *ret_done)
{
	char b[16];
	ssize_t n, i;

	for (;;) {
		n = recv(t->sock, b, sizeof(b), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			teller_gone(t);
			return -EPIPE;
		}
		for (i = 0; i < n; i++) {
			if (b[i] == 'd' || b[i] == 'w')
				*ret_done = true;
			if (b[i] == 'd' || b[i] == 'i')
				t->busy = false;
		}
	}
}

void tell_target(struct eg_sessions *s, struct exec_request *r, const char *line)
{
	char ctl[CMSG_SPACE(sizeof(int))] = {};
	struct eg_teller *t = s->teller;
	struct tell_req q = {};
	struct iovec v = { .iov_base = &q, .iov_len = sizeof(q) };
	struct msghdr msg = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = ctl,
			      .msg_controllen = sizeof(ctl) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	uint64_t now, deadline;
	bool done = false;
	int pidfd;

	if (!t || t->sock < 0 || tell_drain(t, &done) || t->busy)
		return;
	pidfd = request_pidfd(r);
	if (pidfd < 0)
		return;
	now = eg_mono_ns();
	q.tgid = r->tgid;
	q.deadline_ns = now + TELL_LATE_NS;
	snprintf(q.line, sizeof(q.line), "%s", line);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &pidfd, sizeof(int));
	if (sendmsg(t->sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOBUFS)
			teller_gone(t);
		return;
	}
	t->busy = true;
	if (now < t->nowait_until_ns)
		return;
	done = false;
	deadline = now + TELL_WAIT_MS * 1000000ull;
	while (!done) {
		struct pollfd pfd = { .fd = t->sock, .events = POLLIN };
		uint64_t at = eg_mono_ns();

		if (at >= deadline)
			break;
		if (poll(&pfd, 1, (deadline - at + 999999) / 1000000) < 0 && errno != EINTR)
			break;
		if (tell_drain(t, &done))
			return;
	}
	if (!done) {
		t->nowait_until_ns = eg_mono_ns() + TELL_NOWAIT_NS;
		p_dbg("session: no stderr line for tid %d within %d ms", (int)r->tid, TELL_WAIT_MS);
	}
}

/*
 * The teller, forked twice: it is nobody's child to reap, and it leaves
 * when the daemon's end closes. The daemon forks it at its start, while
 * it is small (sessions_teller_fork): a child shares every page of the
 * parent's until one of them writes it, and the teller lives as long as
 * the daemon, so each page the daemon had then costs it a fault, a copy
 * and a TLB flush on every CPU its threads ran on at its first write
 * after the fork (the lineage's hash table alone is 128 pages).
 */
int sessions_teller_fork(void)
{
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (!pid) {
		pid = fork();
		if (!pid)
			teller_main(sv[1]);
		_exit(pid < 0);
	}
	close(sv[1]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		close(sv[0]);
		return -ECHILD;		/* the second fork failed */
	}
	return sv[0];
}

/* The teller forked at the start (sock), or one forked now (sock < 0). */
int tell_init(struct eg_sessions *s, int sock)
{
	struct eg_teller *t = calloc(1, sizeof(*t));

	if (!t) {
		if (sock >= 0)
			close(sock);
		return -ENOMEM;
	}
	if (sock < 0)
		sock = sessions_teller_fork();
	if (sock < 0) {
		free(t);
		return sock;
	}
	t->sock = sock;
	s->teller = t;
	return 0;
}

void tell_fini(struct eg_sessions *s)
{
	if (!s->teller)
		return;
	if (s->teller->sock >= 0)
		close(s->teller->sock);
	free(s->teller);
	s->teller = NULL;
}
