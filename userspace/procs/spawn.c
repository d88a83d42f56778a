// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The run's child (procs/internal.h): the caller's RLIMIT_NPROC read from
 * the kernel, the fork, the child's setup (its cgroup, a session, its fds,
 * its limits, the caller's identity, its directory) and exec, and the
 * report of a child that failed before exec. The child writes no text:
 * the daemon has threads, so only async-signal-safe calls after fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "ctl/server.h"
#include "procs/internal.h"
#include "procs/wrapper.h"

#define STATE_FD	EG_STATE_FD
#define ERR_FD		62	/* the child's report of a failure before exec (struct spawn_err) */


/*
 * RLIMIT_NPROC: PROCS_NPROC_DEFAULT, or the caller's soft limit when that
 * is higher (unlimited included): an inherited limit is never lowered. The
 * hard limit is the caller's too, and the soft one never passes it: a run
 * gets no more than its caller could give itself. -1 is unlimited.
 */
static void apply_nproc(int64_t soft, int64_t hard)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NPROC, &rl))
		return;
	rl.rlim_max = hard == -1 ? RLIM_INFINITY : (rlim_t)hard;
	rl.rlim_cur = soft == -1 ? RLIM_INFINITY : soft >= 0 ? (rlim_t)soft : 0;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < PROCS_NPROC_DEFAULT)
		rl.rlim_cur = PROCS_NPROC_DEFAULT;
	if (rl.rlim_max != RLIM_INFINITY && (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > rl.rlim_max))
		rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NPROC, &rl);
}

/*
 * pids.max of a run's cgroup: the RLIMIT_NPROC soft limit apply_nproc()
 * gives it, at most PROCS_PIDS_MAX. The rlimit counts all of the user's
 * processes and spares root; this counts the run's alone, root's too.
 */
uint64_t procs_pids_max(int64_t soft, int64_t hard)
{
	uint64_t v = soft == -1 || soft > PROCS_PIDS_MAX ? PROCS_PIDS_MAX :
		     soft < PROCS_NPROC_DEFAULT ? PROCS_NPROC_DEFAULT : (uint64_t)soft;

	if (hard != -1 && v > (uint64_t)hard)
		v = (uint64_t)hard;
	return v ? v : 1;
}

/* A pidfd's pid as the kernel says it (/proc/self/fdinfo); -ESRCH once the process has gone. */
static pid_t pidfd_pid(int fd)
{
	char path[64], line[128];
	pid_t pid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid: %d", &pid) == 1)
			break;
	fclose(f);
	return pid > 0 ? pid : -ESRCH;
}

/* RLIMIT_NPROC of pid: prlimit (CAP_SYS_RESOURCE for another uid's process), else /proc/PID/limits. */
static int nproc_of(pid_t pid, struct rlimit *rl)
{
	char path[64], line[256], soft[32], hard[32];
	int err = -ENOENT;
	FILE *f;

	if (!prlimit(pid, RLIMIT_NPROC, NULL, rl))
		return 0;
	if (errno != EPERM)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Max processes %31s %31s", soft, hard) == 2) {
			rl->rlim_cur = strcmp(soft, "unlimited") ? strtoull(soft, NULL, 10) : RLIM_INFINITY;
			rl->rlim_max = strcmp(hard, "unlimited") ? strtoull(hard, NULL, 10) : RLIM_INFINITY;
			err = 0;
			break;
		}
	fclose(f);
	return err;
}

/*
 * The caller's RLIMIT_NPROC, from the kernel (a request could claim
 * anything), through the connection's pidfd: the process at the other end,
 * not whoever has its pid now. -errno when it cannot be read (the caller
 * has exited): the run is refused, it does not get the daemon's limits.
 */
int procs_caller_nproc(const struct ctl_conn *c, int tasks_fd, int64_t *soft, int64_t *hard,
		       struct eg_task *ret_task, bool *ret_have_task)
{
	struct pollfd pf = { .events = POLLIN };
	struct rlimit rl;
	int fd, err;
	pid_t pid;

	*ret_have_task = false;
	if (ctl_peer(c)->api) {
		/* the HTTP API's runs: no process of the caller's here, the default */
		*soft = *hard = PROCS_NPROC_DEFAULT;
		return 0;
	}
	fd = ctl_conn_pidfd(c);
	if (fd < 0)
		return fd;
	pid = pidfd_pid(fd);
	err = pid < 0 ? pid : nproc_of(pid, &rl);
	/* its exec lineage (depth, agent context), which the run goes on from */
	*ret_have_task = false;
	if (!err && tasks_fd > 0) {
		if (!bpf_map_lookup_elem(tasks_fd, &fd, ret_task))
			*ret_have_task = true;
		else if (errno != ENOENT)
			err = -errno;
	}
	/* a pid given to another process since cannot answer: the pidfd's process is alive after the read */
	pf.fd = fd;
	if (!err && poll(&pf, 1, 0) != 0)
		err = -ESRCH;
	close(fd);
	if (err)
		return err;
	*soft = rl.rlim_cur == RLIM_INFINITY ? -1 : (int64_t)rl.rlim_cur;
	*hard = rl.rlim_max == RLIM_INFINITY ? -1 : (int64_t)rl.rlim_max;
	return 0;
}

/*
 * In the child, still root: the run goes on from its caller's exec lineage,
 * not the daemon's. Its storage (a copy of the daemon's, made at fork)
 * takes the caller's host depth and agent context, so the launcher's exec
 * is the caller's depth + 1 as if the caller had run it; a caller the
 * tracer has no storage for leaves the depth unknown. Raw system calls
 * only (after fork in a threaded daemon).
 */
static int take_lineage(const struct spawn *s)
{
	const __u32 keep = EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN | EG_TASK_INFERRED;
	const struct eg_task *c = &s->caller;
	struct eg_task t;
	int fd, err = 0;

	fd = syscall(SYS_pidfd_open, getpid(), 0);
	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(s->tasks_fd, &fd, &t)) {
		err = -errno;
		goto out;
	}
	t.flags &= ~keep;
	t.depth = 0;
	t.context = 0;
	t.context_depth = 0;
	t.context_ktime = 0;
	t.context_tgid = 0;
	t.shells = 0;
	if (s->have_caller) {
		t.flags |= c->flags & keep;
		t.depth = c->depth;
		t.context = c->context;
		t.context_depth = c->context_depth;
		t.context_ktime = c->context_ktime;
		t.context_tgid = c->context_tgid;
		t.shells = c->shells;
	}
	if (bpf_map_update_elem(s->tasks_fd, &fd, &t, BPF_EXIST))
		err = -errno;
out:
	close(fd);
	return err;
}

/* What a child that failed before exec reports (no formatting after fork: the daemon has threads). */
enum spawn_stage { SPAWN_SETUP = 1, SPAWN_IDENTITY, SPAWN_CWD, SPAWN_CWD_CHANGED, SPAWN_EXEC, SPAWN_CGROUP, SPAWN_LINEAGE };

struct spawn_err {
	int stage;
	int err;
};

static void __attribute__((noreturn)) spawn_fail(int stage, int err)
{
	struct spawn_err e = { stage, err };

	ssize_t r = write(ERR_FD, &e, sizeof(e));

	(void)r;	/* nobody else to tell */
	_exit(126);
}

pid_t proc_spawn(const struct spawn *s)
{
	pid_t pid = fork();
	struct stat sb;
	sigset_t none;
	int sig;

	if (pid)
		return pid;
	/*
	 * First, into its cgroup: while still root (cgroup.procs is root's),
	 * before anything forks, and before the fds are moved about below
	 * (the cgroup's may have any number).
	 */
	if (s->cg) {
		struct spawn_err e = { SPAWN_CGROUP, -runcg_join(s->cg) };

		if (e.err) {
			if (write(s->err_fd, &e, sizeof(e)) < 0)
				_exit(126);
			_exit(126);
		}
	}
	if (s->tasks_fd > 0) {
		struct spawn_err e = { SPAWN_LINEAGE, -take_lineage(s) };

		if (e.err) {
			if (write(s->err_fd, &e, sizeof(e)) < 0)
				_exit(126);
			_exit(126);
		}
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	setsid();
	if (s->ctty >= 0)
		ioctl(s->ctty, TIOCSCTTY, 0);
	/*
	 * Each fd to its place through 100..104. A source already in that
	 * range would be overwritten by an earlier dup2 (the daemon holds
	 * many fds: a state socket at 101 became the command's stdout), so
	 * every source is first copied above it.
	 */
	int src[] = { s->fd0, s->fd1, s->fd2, s->state_fd, s->err_fd };

	for (size_t i = 0; i < sizeof(src) / sizeof(src[0]); i++)
		if (src[i] >= 0 && (src[i] = fcntl(src[i], F_DUPFD, 200)) < 0)
			_exit(126);
	if (dup2(src[0], 100) < 0 || dup2(src[1], 101) < 0 || dup2(src[2], 102) < 0 ||
	    (src[3] >= 0 && dup2(src[3], 103) < 0) || dup2(src[4], 104) < 0 ||
	    dup2(104, ERR_FD) < 0 || fcntl(ERR_FD, F_SETFD, FD_CLOEXEC))
		_exit(126);
	if (dup2(100, 0) < 0 || dup2(101, 1) < 0 || dup2(102, 2) < 0)
		spawn_fail(SPAWN_SETUP, errno);
	if (s->state_fd >= 0 && dup2(103, STATE_FD) < 0)
		spawn_fail(SPAWN_SETUP, errno);
	syscall(SYS_close_range, 3, ERR_FD - 1, 0);
	syscall(SYS_close_range, s->state_fd >= 0 ? STATE_FD + 1 : ERR_FD + 1, ~0U, 0);
	apply_nproc(s->nproc, s->nproc_max);
	if (s->uid) {
		if (setgroups(1, &s->gid) || setgid(s->gid) || setuid(s->uid))
			spawn_fail(SPAWN_IDENTITY, errno);
	}
	/* as the user: a directory below one it may not enter stays shut */
	if (chdir(s->cwd))
		spawn_fail(SPAWN_CWD, errno);
	if (stat(".", &sb) || sb.st_dev != s->cwd_dev || sb.st_ino != s->cwd_ino)
		spawn_fail(SPAWN_CWD_CHANGED, 0);
	execve(s->argv[0], s->argv, s->env);
	spawn_fail(SPAWN_EXEC, errno);
}

/*
 * Waits (at most 5 s) for the child to exec or to say why it could not;
 * 0 once it runs, else -errno with the reason in err (the child has gone).
 */
int proc_spawn_wait(const struct spawn *s, int rfd, pid_t pid, char *err, size_t errlen)
{
	struct pollfd pf = { .fd = rfd, .events = POLLIN };
	struct spawn_err e;
	ssize_t r;

	if (poll(&pf, 1, 5000) <= 0)
		return 0;	/* still on its way: its exit status will tell */
	do
		r = read(rfd, &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	if (r != sizeof(e))
		return 0;	/* closed by the exec */
	waitpid(pid, NULL, 0);
	switch (e.stage) {
	case SPAWN_IDENTITY:
		snprintf(err, errlen, "cannot become uid %u gid %u: %s (the daemon needs CAP_SETUID and CAP_SETGID)",
			 (unsigned int)s->uid, (unsigned int)s->gid, strerror(e.err));
		break;
	case SPAWN_CWD:
		snprintf(err, errlen, "cannot enter the directory %.1024s as uid %u: %s", s->cwd,
			 (unsigned int)s->uid, strerror(e.err));
		break;
	case SPAWN_CWD_CHANGED:
		snprintf(err, errlen, "cannot enter the directory %.1024s: it is not the one checked (it was replaced)",
			 s->cwd);
		break;
	case SPAWN_CGROUP:
		snprintf(err, errlen, "cannot join the run's cgroup: %s", strerror(e.err));
		break;
	case SPAWN_LINEAGE:
		snprintf(err, errlen, "cannot give the run your exec depth and context: %s", strerror(e.err));
		break;
	case SPAWN_EXEC:
		snprintf(err, errlen, "cannot run %.1024s: %s%s", s->argv[0], strerror(e.err),
			 e.err == E2BIG ? " (the command and its environment are too large)" : "");
		break;
	default:
		snprintf(err, errlen, "cannot set up the process: %s", strerror(e.err));
		break;
	}
	return -(e.err ? e.err : EPERM);
}
