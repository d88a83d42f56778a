// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The pty relay (util/pty.c) with pipes on our side: what the command sees
 * (a terminal, its size), what comes back, end-of-file for piped input,
 * signals passed on, and the exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "unit.h"
#include "util/pty.h"

struct run {
	int rc, status;
	char out[8192];
};

/*
 * sh -c SCRIPT on a new pty of 24x80 with echo off, fed `input` through a
 * pipe that then closes; when signal_after_ms, this process gets SIGTERM
 * that long after the relay starts (it must reach the command).
 */
static void run_sh(const char *script, const char *input, int signal_after_ms, struct run *ret)
{
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	int master, slave, in[2], out[2], rc;
	struct termios t;
	sigset_t set, old;
	pid_t pid, killer = -1;
	size_t len = 0;
	ssize_t n;

	memset(ret, 0, sizeof(*ret));
	ret->rc = pty_open(NULL, &ws, &master, &slave);
	if (ret->rc)
		return;
	if (!tcgetattr(slave, &t)) {
		t.c_lflag &= ~(ECHO | ECHONL);
		tcsetattr(slave, TCSANOW, &t);
	}
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
		ret->rc = -errno;
		return;
	}
	pty_relay_sigset(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (!pid) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (pty_make_controlling(slave) || dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
			_exit(99);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(98);
	}
	close(slave);
	if (signal_after_ms) {
		pid_t me = getpid();

		killer = fork();
		if (!killer) {
			usleep(signal_after_ms * 1000);
			kill(me, SIGTERM);
			_exit(0);
		}
	}
	n = write(in[1], input, strlen(input));
	(void)n;
	close(in[1]);
	rc = pty_relay(&(struct pty_relay){ .in = in[0], .out = out[1], .master = master, .winsize_from = -1,
					   .child = pid, .eof_to_master = true },
		       &ret->status);
	ret->rc = rc;
	close(in[0]);
	close(out[1]);
	close(master);
	while (len + 1 < sizeof(ret->out) && (n = read(out[0], ret->out + len, sizeof(ret->out) - 1 - len)) > 0)
		len += n;
	ret->out[len] = 0;
	close(out[0]);
	if (killer > 0)
		waitpid(killer, NULL, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void test_relay(void)
{
	struct run r;

	run_sh("read x; echo got=$x; stty size; test -t 0 && test -t 1 && test -t 2 && echo all-tty; exit 7",
	       "hello\n", 0, &r);
	ASSERT_OK(r.rc, "relay");
	ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 7, "the command's exit status");
	ASSERT_TRUE(strstr(r.out, "got=hello\r\n") != NULL, "input reached it, output came back (ONLCR)");
	ASSERT_TRUE(strstr(r.out, "24 80\r\n") != NULL, "the window size");
	ASSERT_TRUE(strstr(r.out, "all-tty") != NULL, "stdin, stdout and stderr a terminal");
	if (unit_cur_failed)
		printf("    output: %s\n", r.out);
}

static void test_eof(void)
{
	struct run r;

	/* a last line without a newline still arrives, and then end-of-file */
	run_sh("cat; echo done-$?", "one\ntwo", 0, &r);
	ASSERT_OK(r.rc, "relay");
	ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "exit status");
	ASSERT_TRUE(strstr(r.out, "one\r\ntwo") != NULL && strstr(r.out, "done-0") != NULL, "cat saw EOF");
	if (unit_cur_failed)
		printf("    output: %s\n", r.out);
}

static void test_signal(void)
{
	struct run r;

	run_sh("trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done", "", 300, &r);
	ASSERT_OK(r.rc, "relay");
	ASSERT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 3, "SIGTERM reached the command's trap");
	ASSERT_TRUE(strstr(r.out, "got-term") != NULL, "its output");
	run_sh("kill -KILL $$", "", 0, &r);
	ASSERT_OK(r.rc, "relay");
	ASSERT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL, "killed by a signal");
}

int main(void)
{
	if (access("/dev/ptmx", R_OK | W_OK)) {
		printf("SKIP test_pty: no /dev/ptmx\n");
		return 0;
	}
	RUN(test_relay);
	RUN(test_eof);
	RUN(test_signal);
	return UNIT_DONE();
}
