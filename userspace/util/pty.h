/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A command on a pseudo-terminal of its own, this process relaying between
 * it and our stdin/stdout (execgate exec --pty). Functions return 0 or
 * -errno and do not log.
 */
#ifndef EG_UTIL_PTY_H
#define EG_UTIL_PTY_H

#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

/*
 * A master (O_NONBLOCK, O_CLOEXEC) and its slave (O_CLOEXEC, O_NOCTTY),
 * the slave set to *tio and *ws when given.
 */
int pty_open(const struct termios *tio, const struct winsize *ws, int *ret_master, int *ret_slave);

/* In the child after fork(): a new session whose controlling terminal is slave. */
int pty_make_controlling(int slave);

/* fd's terminal in raw mode; its settings before in *ret_saved. */
int pty_raw(int fd, struct termios *ret_saved);

/*
 * The signals pty_relay() handles; block them before fork() (the child
 * restores its mask) so none is lost before the relay reads them.
 */
void pty_relay_sigset(sigset_t *set);

struct pty_relay {
	int in, out;		/* ours: bytes typed or piped in, where the command's output goes */
	int master;
	int winsize_from;	/* our terminal, -1 without one: its size follows to the pty */
	pid_t child;
	bool eof_to_master;	/* `in` ends: the command reads end-of-file (VEOF) */
	/* raw mode to restore when we are stopped (SIGTSTP) and set again on SIGCONT */
	const struct termios *raw_saved;
};

/*
 * Relays in -> master and master -> out until the child exits and its
 * output is read; forwards window size changes (SIGWINCH -> TIOCSWINSZ)
 * and SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 (to the pty's
 * foreground process group); stops with us on SIGTSTP. The signals of
 * pty_relay_sigset() must be blocked. *ret_status is waitpid()'s status.
 */
int pty_relay(const struct pty_relay *r, int *ret_status);

#endif
