// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Which session the process at the other end of an API connection is in.
 * A unix socket says who connected (SO_PEERCRED); TCP does not, so the
 * kernel's socket table (sock_diag) names the client's socket by its four
 * addresses, every process holding that socket is found in /proc, and
 * each one's session is read from the task storage, as for a control
 * socket peer, the file tables of threads that have their own read too
 * (a copy hidden there is found). One in a session is enough to count as
 * inside; a socket that is on this host but held by no process found, or
 * held by the daemon itself, cannot be placed.
 * A client whose socket is in no table here is outside only when its
 * address is not one of this host's: a client here that closed its end
 * right after its request (its socket orphaned, inode 0, or gone after a
 * reset) is not thereby taken for one on another host.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/kcmp.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include "api/internal.h"
#include "execgate.h"

/*
 * The socket whose local end is peer and remote end is us: *ret_found
 * when it is in this host's table, and its inode (0: held by no file, an
 * orphan closing or in TIME_WAIT).
 */
static int diag_inode(const struct sockaddr_storage *peer, const struct sockaddr_storage *self,
		      bool *ret_found, unsigned long *ret_inode)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	char buf[8192];
	ssize_t n;
	int fd, rc = 0;

	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = peer->ss_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *p = (const void *)peer, *s = (const void *)self;

		req.r.id.idiag_sport = p->sin_port;
		req.r.id.idiag_dport = s->sin_port;
		memcpy(req.r.id.idiag_src, &p->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &s->sin_addr, 4);
	} else if (peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *p = (const void *)peer, *s = (const void *)self;

		req.r.id.idiag_sport = p->sin6_port;
		req.r.id.idiag_dport = s->sin6_port;
		memcpy(req.r.id.idiag_src, &p->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst, &s->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		rc = -errno;
		goto out;
	}
	n = recv(fd, buf, sizeof(buf), 0);
	if (n < (ssize_t)sizeof(struct nlmsghdr)) {
		rc = n < 0 ? -errno : -EIO;
		goto out;
	}
	{
		struct nlmsghdr *h = (struct nlmsghdr *)buf;

		*ret_inode = 0;
		*ret_found = false;
		if (h->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(h);

			/* no such socket in this host's table */
			rc = e->error == -ENOENT ? 0 : e->error;
		} else if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			struct inet_diag_msg *m = NLMSG_DATA(h);

			*ret_found = true;
			*ret_inode = m->idiag_inode;
		} else {
			rc = -EIO;
		}
	}
out:
	close(fd);
	return rc;
}

/*
 * Whether addr is one of this host's addresses (in the daemon's network
 * namespace): a socket can be bound to it. A v4-mapped IPv6 address is
 * tried as IPv4. With net.ipv4.ip_nonlocal_bind set every address binds,
 * and a client elsewhere whose socket is not found is refused: closed.
 */
static bool addr_is_local(const struct sockaddr_storage *addr)
{
	struct sockaddr_storage a = *addr;
	socklen_t len = sizeof(struct sockaddr_in6);
	bool local;
	int fd;

	if (a.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;

		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			struct sockaddr_in s4 = { .sin_family = AF_INET };

			memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
			memset(&a, 0, sizeof(a));
			memcpy(&a, &s4, sizeof(s4));
		}
	}
	if (a.ss_family == AF_INET) {
		((struct sockaddr_in *)&a)->sin_port = 0;
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&a)->sin6_port = 0;
		((struct sockaddr_in6 *)&a)->sin6_flowinfo = 0;
	}
	fd = socket(a.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true;	/* cannot tell: as if here, so not placed */
	local = bind(fd, (struct sockaddr *)&a, len) == 0 || errno != EADDRNOTAVAIL;
	close(fd);
	return local;
}

/* The session of pid from the task storage (through its pidfd); -ESRCH when it is gone. */
static int session_of(int tasks_fd, pid_t pid, uint32_t *ret)
{
	struct eg_task t;
	int fd = syscall(SYS_pidfd_open, pid, 0), rc = 0;

	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(tasks_fd, &fd, &t)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		/* no storage is no session only for a process still alive */
		rc = errno == ENOENT && poll(&p, 1, 0) == 0 ? 0 : -ESRCH;
		t.session = 0;
	}
	close(fd);
	if (!rc)
		*ret = t.session;
	return rc;
}

/* Whether the fd directory dir (/proc/PID/fd, /proc/PID/task/TID/fd) holds want ("socket:[N]"). */
static bool holds(const char *dir, const char *want)
{
	char path[300], link[64];
	struct dirent *fe;
	bool found = false;
	DIR *fds = opendir(dir);

	if (!fds)
		return false;
	while (!found && (fe = readdir(fds))) {
		ssize_t n;

		if (fe->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, fe->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		found = !strcmp(link, want);
	}
	closedir(fds);
	return found;
}

/*
 * Whether a thread of pid with a file table of its own holds want: a
 * thread that called unshare(CLONE_FILES), or every thread once the
 * leader has exited (its table is gone from /proc/PID/fd). A process
 * could hide its copy of a connection there and hand the connection to
 * a process outside every session, the only holder /proc/PID/fd shows.
 * Threads that share the leader's table (kcmp) are not read again.
 */
static bool held_by_a_thread(pid_t pid, const char *want)
{
	char path[300];
	struct dirent *te;
	bool found = false;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tasks = opendir(path);
	if (!tasks)
		return false;
	while (!found && (te = readdir(tasks))) {
		pid_t tid = atoi(te->d_name);

		if (tid <= 0 || tid == pid || syscall(SYS_kcmp, pid, tid, KCMP_FILES, 0, 0) == 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/fd", (int)pid, (int)tid);
		found = holds(path, want);
	}
	closedir(tasks);
	return found;
}

int peer_place(int tasks_fd, int sockfd, bool *ret_placed, uint32_t *ret_session)
{
	struct sockaddr_storage peer, self;
	socklen_t pl = sizeof(peer), sl = sizeof(self);
	unsigned long inode = 0;
	bool found = false;
	char want[64], path[300];
	struct dirent *de;
	unsigned int owners = 0;
	bool ours = false;
	uint32_t in = 0;
	DIR *proc;
	int rc;

	*ret_placed = false;
	*ret_session = 0;
	if (getpeername(sockfd, (struct sockaddr *)&peer, &pl) || getsockname(sockfd, (struct sockaddr *)&self, &sl))
		return -errno;
	rc = diag_inode(&peer, &self, &found, &inode);
	if (rc)
		return rc;
	if (!found) {
		/* on another host: in no session of this one; here: gone, cannot be placed */
		*ret_placed = !addr_is_local(&peer);
		return 0;
	}
	if (!inode)
		return 0;	/* held by no file any more: cannot be placed */
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while ((de = readdir(proc))) {
		pid_t pid = atoi(de->d_name);
		uint32_t s = 0;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		if (!holds(path, want) && !held_by_a_thread(pid, want))
			continue;
		if (pid == getpid()) {
			/*
			 * The client's own end, held by the daemon: handed over
			 * (SCM_RIGHTS in a control request never ended) by a
			 * process that hid its own copy. Nothing of the
			 * daemon's is an API client: cannot be placed.
			 */
			ours = true;
			continue;
		}
		owners++;
		if (session_of(tasks_fd, pid, &s))
			owners--;	/* gone meanwhile: it holds nothing now */
		else if (s && !in)
			in = s;
	}
	closedir(proc);
	*ret_placed = owners > 0 && !ours;
	*ret_session = in;
	return 0;
}
