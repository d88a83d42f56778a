// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A command on a pty of its own, this process relaying. Why a relay and not
 * the caller's terminal: the caller may have none (a harness with pipes)
 * and still want the command to see a terminal. The relay is a plain loop
 * over poll(): stdin -> master, master -> stdout, a signalfd for resizes,
 * the child's exit and the signals it passes on.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util/pty.h"

#define RELAY_BUF 16384
/* after the child exits: how long a silent master may still be holding its last output */
#define DRAIN_MS 200
/* ... and how long at most a background process that keeps the slave open may go on writing */
#define DRAIN_TOTAL_MS 2000

void pty_relay_sigset(sigset_t *set)
{
	static const int sigs[] = { SIGCHLD, SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT,
				    SIGTSTP, SIGCONT, SIGUSR1, SIGUSR2 };

	sigemptyset(set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(set, sigs[i]);
}

int pty_open(const struct termios *tio, const struct winsize *ws, int *ret_master, int *ret_slave)
{
	char name[64];
	int m, s = -1, rc;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -errno;
	if (grantpt(m) || unlockpt(m) || ptsname_r(m, name, sizeof(name)))
		goto fail;
	if (fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK))
		goto fail;
	s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0)
		goto fail;
	if (tio && tcsetattr(s, TCSANOW, tio))
		goto fail;
	if (ws && ioctl(s, TIOCSWINSZ, ws))
		goto fail;
	*ret_master = m;
	*ret_slave = s;
	return 0;
fail:
	rc = errno ? -errno : -EIO;
	if (s >= 0)
		close(s);
	close(m);
	return rc;
}

int pty_make_controlling(int slave)
{
	if (setsid() < 0)
		return -errno;
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return -errno;
	return 0;
}

int pty_raw(int fd, struct termios *ret_saved)
{
	struct termios t, raw;

	if (tcgetattr(fd, &t))
		return -errno;
	raw = t;
	cfmakeraw(&raw);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(fd, TCSADRAIN, &raw))
		return -errno;
	*ret_saved = t;
	return 0;
}

static void sync_size(const struct pty_relay *r, int master)
{
	struct winsize ws;

	if (r->winsize_from >= 0 && master >= 0 && !ioctl(r->winsize_from, TIOCGWINSZ, &ws))
		ioctl(master, TIOCSWINSZ, &ws);	/* the kernel sends SIGWINCH */
}

static void pass_signal(int master, pid_t child, int sig)
{
	pid_t pg = master >= 0 ? tcgetpgrp(master) : -1;

	if (pg > 0 && !kill(-pg, sig))
		return;
	kill(child, sig);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= n;
	}
	return 0;
}

int pty_relay(const struct pty_relay *r, int *ret_status)
{
	int in = r->in, out = r->out, master = r->master, sigfd;
	pid_t child = r->child;
	sigset_t set;
	char obuf[RELAY_BUF], *ibuf;
	size_t ilen = 0, ioff = 0;
	bool in_open = in >= 0, exited = false, last_nl = true, master_done = master < 0, out_dead = false;
	int eofs = 0, status = 0, rc = 0;
	struct timespec t_exit = {};

	pty_relay_sigset(&set);
	sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0)
		return -errno;
	ibuf = malloc(RELAY_BUF);
	if (!ibuf) {
		close(sigfd);
		return -ENOMEM;
	}
	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = sigfd, .events = POLLIN },
			{ .fd = master_done ? -1 : master, .events = POLLIN },
			{ .fd = -1 },
		};
		int n, timeout = -1;

		if (exited) {
			struct timespec now;

			if (master_done)
				break;
			clock_gettime(CLOCK_MONOTONIC, &now);
			timeout = DRAIN_TOTAL_MS - (int)((now.tv_sec - t_exit.tv_sec) * 1000 +
							 (now.tv_nsec - t_exit.tv_nsec) / 1000000);
			if (timeout <= 0)
				break;
			if (timeout > DRAIN_MS)
				timeout = DRAIN_MS;
		}
		if (!master_done && (ilen > ioff || eofs))
			pfd[1].events |= POLLOUT;
		if (in_open && ilen == ioff && !eofs && !exited)
			pfd[2] = (struct pollfd){ .fd = in, .events = POLLIN };
		n = poll(pfd, 3, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)		/* exited, and the master has been quiet for DRAIN_MS */
			break;
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
				switch (si.ssi_signo) {
				case SIGCHLD:
					if (!exited && waitpid(child, &status, WNOHANG) == child) {
						exited = true;
						clock_gettime(CLOCK_MONOTONIC, &t_exit);
					}
					break;
				case SIGWINCH:
					sync_size(r, master);
					break;
				case SIGTSTP:
					/* stop with our terminal as it was; SIGCONT makes it raw again */
					if (r->raw_saved)
						tcsetattr(in, TCSADRAIN, r->raw_saved);
					kill(getpid(), SIGSTOP);
					break;
				case SIGCONT:
					if (r->raw_saved) {
						struct termios t;

						pty_raw(in, &t);
					}
					sync_size(r, master);
					break;
				default:
					pass_signal(master, child, si.ssi_signo);
					break;
				}
			}
		}
		if (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t got = read(in, ibuf, RELAY_BUF);

			if (got > 0) {
				ilen = got;
				ioff = 0;
				last_nl = ibuf[got - 1] == '\n';
			} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
				in_open = false;
				/* a pipe's end: the command reads end-of-file (a partial line needs two) */
				if (r->eof_to_master)
					eofs = last_nl ? 1 : 2;
				/* our terminal hung up (EIO): so does the command's */
				else if (got < 0 && errno == EIO)
					pass_signal(master, child, SIGHUP);
			}
		}
		if (pfd[1].fd >= 0 && (pfd[1].revents & POLLOUT)) {
			if (ilen > ioff) {
				ssize_t w = write(master, ibuf + ioff, ilen - ioff);

				if (w > 0)
					ioff += w;
				else if (w < 0 && errno != EAGAIN && errno != EINTR)
					ilen = ioff = 0, in_open = false;
			} else if (eofs) {
				struct termios t;
				char c = tcgetattr(master, &t) ? 4 : (char)t.c_cc[VEOF];

				if (write(master, &c, 1) == 1)
					eofs--;
				else if (errno != EAGAIN && errno != EINTR)
					eofs = 0;
			}
		}
		if (pfd[1].fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t got = read(master, obuf, sizeof(obuf));

			if (got > 0 && !out_dead && write_all(out, obuf, got)) {
				/*
				 * nobody reads us (a closed pipe): hang the command up, as a
				 * terminal that goes away would, and read on without writing so
				 * that it is never blocked on a full pty
				 */
				out_dead = true;
				pass_signal(master, child, SIGHUP);
			} else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
				/* EIO: every holder of the slave closed it; the child's exit comes by SIGCHLD */
				master_done = true;
			}
		}
	}
	if (!exited && !rc) {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
	}
	free(ibuf);
	close(sigfd);
	if (!rc)
		*ret_status = status;
	return rc;
}
