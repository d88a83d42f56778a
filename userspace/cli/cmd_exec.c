// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate exec: run CMD in a supervised session. This process is the
 * launcher: the kernel marked it at its own exec (depth -1), the daemon
 * gives it a session, it installs a seccomp filter that traps every
 * execve/execveat of its tree with a user-notify listener, hands the
 * listener to the daemon and execs CMD, which is the session's direct
 * (depth 0) exec and already goes through the policy. Its exit status is
 * CMD's: after the exec this program is gone.
 */
#include <argp.h>
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "ctl/client.h"
#include "procs/text.h"
#include "session/boundary.h"
#include "session/resolve.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/pty.h"
#include "util/seccomp_notif.h"

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif

#define EXIT_NOT_FOUND 127
#define EXIT_CANNOT_RUN 126

struct exec_args {
	struct cli_common common;
	const char *policy;
	const char *name;
	const char *argv0;
	const char *workspace;
	bool restricted;
	bool pty;
	char **cmd;
	int ncmd;
	char ws[PATH_MAX];		/* the workspace's real path */
	char **env;			/* the command's environment */
	char redirect_dir[PATH_MAX];	/* the session's redirect entries (policy/README.md), "" if none */
	char path_env[PATH_MAX * 2];	/* PATH with it first */
};

enum { OPT_POLICY = 0x100, OPT_RESTRICTED, OPT_SESSION, OPT_ARGV0, OPT_PTY, OPT_WORKSPACE };

static const struct argp_option options[] = {
	{ "policy", OPT_POLICY, "FILE", 0, "A session policy, on top of the daemon's (both must allow); opened with your rights", 0 },
	{ "restricted", OPT_RESTRICTED, NULL, 0, "CMD runs, every exec below it is refused (inherited, cannot be lifted)", 0 },
	{ "session", OPT_SESSION, "NAME", 0, "A name for the session in events and listings", 0 },
	{ "argv0", OPT_ARGV0, "NAME", 0, "argv[0] for CMD (the file run is still CMD)", 0 },
	{ "pty", OPT_PTY, NULL, 0, "CMD on a new pseudo-terminal of its own, this process relaying (raw mode, resizes, signals; stdout and stderr merged)", 0 },
	{ "workspace", OPT_WORKSPACE, "DIR", 0, "What the word workspace means in the policies' filesystem lists (default: the current directory)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct exec_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case OPT_POLICY:
		a->policy = arg;
		break;
	case OPT_RESTRICTED:
		a->restricted = true;
		break;
	case OPT_SESSION:
		if (strlen(arg) > 63)
			argp_error(state, "--session takes a name of at most 63 bytes");
		a->name = arg;
		break;
	case OPT_ARGV0:
		a->argv0 = arg;
		break;
	case OPT_PTY:
		a->pty = true;
		break;
	case OPT_WORKSPACE:
		a->workspace = arg;
		break;
	case ARGP_KEY_ARG:
		/* the command and everything after it are the command's */
		a->cmd = state->argv + state->next - 1;
		a->ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!a->ncmd)
			argp_error(state, "which command? execgate exec [OPTION...] -- CMD [ARG...]");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * The supervisor itself is out of reach of the session's signals: every
 * call that names it by pid fails. The kernel reads a pid as the low 32
 * bits of the register, so the comparison is masked to those: a plain
 * SCMP_CMP_EQ compares all 64 and let kill((1 << 32) | pid) through, and
 * libseccomp 2.5's SCMP_A0_32 only casts the value, comparing all 64 still.
 * kill(-pid) is its process group, which it leads under systemd. What no
 * pid names (kill(-1), the daemon's other threads, a pidfd from /proc/PID)
 * is in docs/sessions.md, "What a session process can and cannot do".
 */
static int deny_signals_to(scmp_filter_ctx ctx, pid_t pid)
{
	static const int by_pid[] = { SCMP_SYS(kill), SCMP_SYS(tkill), SCMP_SYS(tgkill),
				      SCMP_SYS(rt_sigqueueinfo), SCMP_SYS(rt_tgsigqueueinfo),
				      SCMP_SYS(pidfd_open) };
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < sizeof(by_pid) / sizeof(by_pid[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), by_pid[i], 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (uint32_t)pid));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, (uint32_t)-pid));
	return rc;
}

/*
 * No user namespace inside a session. With one, an unprivileged process
 * gets a mount namespace of its own and can bind any file over any path
 * (unshare -Urm, then mount --bind /usr/bin/id /usr/bin/true): the path
 * and name a policy matches would be its to choose. unshare and clone
 * with CLONE_NEWUSER fail, and so does setns into a user namespace (or
 * into whatever an fd names, type 0); clone3 keeps its flags in memory the
 * filter cannot read, so it fails with ENOSYS, and glibc falls back to
 * clone. Root needs no user namespace to mount: docs/sessions.md says
 * what a root session can do.
 */
static int deny_user_namespaces(scmp_filter_ctx ctx)
{
	int rc;

	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
			      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setns), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	return rc;
}

/*
 * Landlock scopes ptrace and signals, not the calls that set another
 * process's limits or scheduling, which the kernel allows on any process
 * of the same user: `prlimit --pid $PPID --cpu=1` killed the harness that
 * started the session (SIGXCPU), `--nofile=3` made its next shim fail,
 * `renice`, `chrt --idle -p` and `ionice -p` starved it. Each is refused
 * for anything but the caller itself (pid 0; a thread's own tid is
 * refused too: EPERM, as an unprivileged user gets for most of these);
 * prlimit only when it sets, so reading another's limits still works.
 * The pid is compared whole (64 bits): high bits set are refused, never
 * let through.
 */
static int deny_reaching_others(scmp_filter_ctx ctx)
{
	static const int by_pid[] = { SCMP_SYS(sched_setscheduler), SCMP_SYS(sched_setparam),
				      SCMP_SYS(sched_setattr) };
	size_t i;
	int rc;

	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_NE, 0),
			      SCMP_A2(SCMP_CMP_NE, 0));
	for (i = 0; !rc && i < sizeof(by_pid) / sizeof(by_pid[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), by_pid[i], 1, SCMP_A0(SCMP_CMP_NE, 0));
	/* setpriority(which, who): only PRIO_PROCESS (0) of itself (0); PRIO_USER 0 is every process of the user */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setpriority), 1, SCMP_A0(SCMP_CMP_NE, 0));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setpriority), 1, SCMP_A1(SCMP_CMP_NE, 0));
	/* ioprio_set(which, who): only IOPRIO_WHO_PROCESS (1) of itself (0) */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioprio_set), 1, SCMP_A0(SCMP_CMP_NE, 1));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioprio_set), 1, SCMP_A1(SCMP_CMP_NE, 0));
	/* the caller's session keyring is replaced by a new one (see launch): not from here */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(keyctl), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, KEYCTL_SESSION_TO_PARENT));
	return rc;
}

/*
 * System V IPC: its shared memory segments, semaphores and message queues
 * are the host's (one IPC namespace), open to every process of the owner,
 * and Landlock has no hook for them: a session's process could attach
 * another process's segment (an X client's, a database's) and write it,
 * or hold its semaphores. Refused whole (ENOSYS: as a kernel without
 * SYSVIPC, which programs such as X clients fall back from); the 32-bit
 * ipc() multiplexer too. POSIX shared memory (/dev/shm) is files, under
 * the filesystem: section.
 */
static int deny_sysv_ipc(scmp_filter_ctx ctx)
{
	static const int calls[] = { SCMP_SYS(shmget), SCMP_SYS(shmat), SCMP_SYS(shmctl), SCMP_SYS(semget),
				     SCMP_SYS(semop), SCMP_SYS(semtimedop), SCMP_SYS(semctl), SCMP_SYS(msgget),
				     SCMP_SYS(msgsnd), SCMP_SYS(msgrcv), SCMP_SYS(msgctl), SCMP_SYS(ipc) };
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < sizeof(calls) / sizeof(calls[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), calls[i], 0);
	return rc;
}

/*
 * Landlock's TCP rules look at plain TCP sockets only: a connection of
 * another transport (Multipath TCP, SCTP, DCCP, SMC) would go anywhere.
 * Those sockets are refused (EPROTONOSUPPORT, EAFNOSUPPORT for SMC's
 * family: programs fall back to TCP): by protocol, and for IPv4 and
 * IPv6 by the types only they have (SOCK_SEQPACKET, SOCK_DCCP). build_filter
 * refuses the rest whole: the 32-bit socketcall, whose arguments are in
 * memory out of the filter's sight (a session runs no 32-bit program),
 * and io_uring, which makes sockets and opens files without the calls
 * the filter sees (ENOSYS, as container engines' default profiles do; a
 * ring passed in too).
 */
static int deny_other_transports(scmp_filter_ctx ctx)
{
	static const int protocols[] = { 262 /* IPPROTO_MPTCP */, 132 /* IPPROTO_SCTP */, 33 /* IPPROTO_DCCP */,
					 256 /* IPPROTO_SMC */ };
	static const int families[] = { AF_INET, AF_INET6 }, types[] = { 5 /* SOCK_SEQPACKET */, 6 /* SOCK_DCCP */ };
	size_t i, j;
	int rc = 0;

	for (i = 0; !rc && i < sizeof(protocols) / sizeof(protocols[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 1,
				      SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffu, protocols[i]));
	/* SMC's own family: its connection is a TCP socket of the kernel's, which no LSM hook sees */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 43 /* AF_SMC */));
	for (i = 0; !rc && i < 2; i++)
		for (j = 0; !rc && j < 2; j++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
					      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, families[i]),
					      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, types[j]));
	return rc;
}

/* The filter: execve/execveat wait for the supervisor; a few calls that would reach around it fail. */
static int build_filter(pid_t daemon_pid, struct sock_fprog *ret, void **ret_mem)
{
	/*
	 * Loading BPF could unload the tracer; writing another process's
	 * memory could race a check. The rest: deny_other_transports.
	 */
	static const struct { int nr, err; } refused[] = {
		{ SCMP_SYS(bpf), EPERM }, { SCMP_SYS(process_vm_writev), EPERM }, { SCMP_SYS(ptrace), EPERM },
		{ SCMP_SYS(socketcall), ENOSYS }, { SCMP_SYS(io_uring_setup), ENOSYS },
		{ SCMP_SYS(io_uring_enter), ENOSYS }, { SCMP_SYS(io_uring_register), ENOSYS },
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	size_t i;
	struct stat st;
	void *mem = NULL;
	int fd = -1, rc = -ENOMEM;

	if (!ctx)
		return -ENOMEM;
	/* 32-bit and x32 execs are trapped too; the supervisor refuses them */
	seccomp_arch_add(ctx, SCMP_ARCH_X86);
	seccomp_arch_add(ctx, SCMP_ARCH_X32);
	rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execve), 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(execveat), 0);
	for (i = 0; !rc && i < sizeof(refused) / sizeof(refused[0]); i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(refused[i].err), refused[i].nr, 0);
	/*
	 * Pushing bytes into a terminal's input (TIOCSTI; TIOCLINUX pastes a
	 * console's selection) would type commands into the caller's shell,
	 * which reads that terminal once the session is over: outside it.
	 * The command number is 32 bits (the kernel drops the rest).
	 */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
	if (!rc)
		rc = deny_other_transports(ctx);
	if (!rc && daemon_pid > 0)
		rc = deny_signals_to(ctx, daemon_pid);
	if (!rc)
		rc = deny_user_namespaces(ctx);
	if (!rc)
		rc = deny_reaching_others(ctx);
	if (!rc)
		rc = deny_sysv_ipc(ctx);
	if (rc)
		goto out;
	/* libseccomp 2.5 cannot ask for WAIT_KILLABLE_RECV: export and load by hand */
	fd = memfd_create("execgate-filter", MFD_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc)
		goto out;
	if (fstat(fd, &st) || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter)) {
		rc = -EINVAL;
		goto out;
	}
	mem = malloc(st.st_size);
	if (!mem || pread(fd, mem, st.st_size, 0) != st.st_size) {
		rc = -EIO;
		free(mem);
		goto out;
	}
	ret->len = st.st_size / sizeof(struct sock_filter);
	ret->filter = mem;
	*ret_mem = mem;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
}

static int install_filter(pid_t daemon_pid)
{
	struct sock_fprog prog;
	void *mem = NULL;
	int fd, rc;

	rc = build_filter(daemon_pid, &prog, &mem);
	if (rc)
		return rc;
	/*
	 * EXECGATE_NO_WAIT_KILLABLE=1: as on a kernel before 5.19, where a
	 * signal withdraws an exec that waits for its answer (the tests: the
	 * daemon must hold then too; it weakens nothing but this session's
	 * own waits).
	 */
	if (getenv("EXECGATE_NO_WAIT_KILLABLE") && !strcmp(getenv("EXECGATE_NO_WAIT_KILLABLE"), "1"))
		fd = -1, errno = EINVAL;
	else
		fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			     SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
	if (fd < 0 && errno == EINVAL)
		fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	rc = fd < 0 ? -errno : fd;
	free(mem);
	return rc;
}

/* One request, one reply, on an open connection (fds ride along). */
static json_t *call(int fd, struct sbuf *req, const int *fds, int nfds, char *err, size_t errlen)
{
	struct sbuf line = {};
	json_error_t je;
	json_t *reply = NULL;
	int rc;

	rc = ctl_send_request(fd, req->data, req->len, fds, nfds);
	if (!rc)
		rc = ctl_read_line(fd, &line, 30000, 1 << 20);
	if (rc) {
		snprintf(err, errlen, "the daemon did not answer: %s",
			 rc == -EPIPE ? "it closed the connection" : strerror(-rc));
		goto out;
	}
	reply = json_loadb(line.data ? line.data : "", line.len, 0, &je);
	if (!json_is_object(reply)) {
		snprintf(err, errlen, "the daemon's reply is not a JSON object");
		json_decref(reply);
		reply = NULL;
		goto out;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *m = json_string_value(json_object_get(reply, "error"));

		snprintf(err, errlen, "%s", m ? m : "refused");
		json_decref(reply);
		reply = NULL;
	}
out:
	sbuf_free(&line);
	return reply;
}

/*
 * The daemon reads the session policy in the thread that serves every
 * session, so it takes only a sealed memfd: what we read here (with the
 * caller's rights, from a file, a pipe, /dev/stdin, a FUSE mount) is
 * copied into one, and nothing can change it or make its reader wait.
 */
static int policy_to_memfd(int fd)
{
	static char buf[65536];
	size_t total = 0;
	struct stat st;
	int mfd;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	mfd = memfd_create("execgate-session-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n > 0 && write(mfd, buf, n) != n)) {
			n = -errno;
			close(mfd);
			return n;
		}
		total += n;
		/* past the daemon's limit (16 MiB): it says so */
		if (!n || total > (16u << 20))
			break;
	}
	if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		int e = -errno;

		close(mfd);
		return e;
	}
	close(fd);
	/* the daemon reads from the shared offset */
	lseek(mfd, 0, SEEK_SET);
	return mfd;
}

/* The command's environment: ours without what loads code (procs/text.h) and what a policy denies. */
static int command_env(struct exec_args *a, const json_t *deny)
{
	extern char **environ;
	size_t n = 0, k = 0, i;
	char **e;

	for (e = environ; *e; e++)
		n++;
	a->env = calloc(n + 1, sizeof(*a->env));
	if (!a->env)
		return -ENOMEM;
	for (e = environ; *e; e++) {
		char name[256];
		const json_t *g;
		bool drop = eg_env_injection(*e);
		size_t l = strcspn(*e, "=");

		for (i = 0; !drop && i < l && i < sizeof(name) - 1; i++)
			name[i] = toupper((unsigned char)(*e)[i]);
		name[l < sizeof(name) - 1 ? l : sizeof(name) - 1] = '\0';
		json_array_foreach(deny, i, g)
			if (!drop && json_string_value(g) && !fnmatch(json_string_value(g), name, 0))
				drop = true;
		if (!drop)
			a->env[k++] = *e;
	}
	return 0;
}

/*
 * A redirect (policy/README.md): the session's redirect directory goes
 * first in the command's PATH, so a redirected name found through PATH
 * reaches its entry; and when the command itself is such a name, its
 * entry runs instead (it says why on stderr and runs the redirect with
 * its args, then the command's arguments). The daemon judges the entry's
 * exec as the redirect; any other way to the command is refused.
 */
static void redirect_command(struct exec_args *a, char *path, size_t len)
{
	const char *base = strrchr(path, '/');
	char entry[PATH_MAX];
	bool set = false;
	char **e;

	if (!a->redirect_dir[0] || !a->env)
		return;
	for (e = a->env; *e; e++)
		if (!strncmp(*e, "PATH=", 5)) {
			snprintf(a->path_env, sizeof(a->path_env), "PATH=%s:%s", a->redirect_dir, *e + 5);
			*e = a->path_env;
			set = true;
			break;
		}
	if (!set) {
		size_t n = (size_t)(e - a->env);
		char **v = realloc(a->env, (n + 2) * sizeof(*v));

		if (v) {
			snprintf(a->path_env, sizeof(a->path_env), "PATH=%s:/usr/local/bin:/usr/bin:/bin", a->redirect_dir);
			v[n] = a->path_env;
			v[n + 1] = NULL;
			a->env = v;
		}
	}
	base = base ? base + 1 : path;
	if ((size_t)snprintf(entry, sizeof(entry), "%s/%s", a->redirect_dir, base) < sizeof(entry) &&
	    !access(entry, X_OK))
		snprintf(path, len, "%s", entry);
}

/*
 * Asks the daemon for a session and puts this process under its filter
 * and in its Landlock domain: after this, our next exec is the session's
 * first. 0, or the exit status.
 */
static int session_start(struct exec_args *a)
{
	char err[1024];
	struct sbuf req = {};
	struct jsonw w;
	json_t *reply, *plan = NULL;
	int ctl, pol = -1, lfd, fds[1], rc;
	bool install;
	int64_t id;
	pid_t daemon_pid = 0;

	if (a->workspace ? !realpath(a->workspace, a->ws) : !getcwd(a->ws, sizeof(a->ws))) {
		p_err("the workspace %s: %s", a->workspace ? a->workspace : ".", strerror(errno));
		return 1;
	}
	if (a->policy) {
		/* opened here, with the caller's rights: the daemon reads only what we could */
		pol = open(a->policy, O_RDONLY | O_CLOEXEC);
		if (pol < 0) {
			p_err("cannot read the session policy %s: %s", a->policy, strerror(errno));
			return 1;
		}
		rc = policy_to_memfd(pol);
		if (rc < 0) {
			p_err("cannot read the session policy %s: %s", a->policy, strerror(-rc));
			close(pol);
			return 1;
		}
		pol = rc;
	}
	ctl = ctl_connect(a->common.pin_path);
	if (ctl < 0) {
		p_err("no daemon is running (%s): start one with 'execgate daemon'", ctl_connect_hint(ctl));
		return EXIT_USAGE;
	}

	jsonw_init(&w, &req);
	jsonw_start_object(&w);
	jsonw_string_field(&w, "op", "session_open");
	if (a->name)
		jsonw_string_field(&w, "name", a->name);
	jsonw_bool_field(&w, "restricted", a->restricted);
	jsonw_bool_field(&w, "policy", pol >= 0);
	jsonw_string_field(&w, "workspace", a->ws);
	jsonw_end_object(&w);
	fds[0] = pol;
	reply = call(ctl, &req, fds, pol >= 0 ? 1 : 0, err, sizeof(err));
	sbuf_free(&req);
	if (pol >= 0)
		close(pol);
	if (!reply) {
		p_err("cannot start a session: %s", err);
		return 1;
	}
	id = json_integer_value(json_object_get(reply, "id"));
	install = json_is_true(json_object_get(reply, "install_listener"));
	daemon_pid = json_integer_value(json_object_get(reply, "daemon_pid"));
	plan = json_incref(json_object_get(reply, "boundary"));
	rc = command_env(a, json_object_get(reply, "environment_deny"));
	if (json_string_value(json_object_get(reply, "redirect_dir")))
		snprintf(a->redirect_dir, sizeof(a->redirect_dir), "%s",
			 json_string_value(json_object_get(reply, "redirect_dir")));
	json_decref(reply);
	if (rc) {
		p_err("out of memory");
		goto fail;
	}

	/* no privilege gains inside a session, and the filter and Landlock need it for non-root users */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		p_err("cannot set no_new_privs: %s", strerror(errno));
		goto fail;
	}
	/*
	 * A session keyring of its own: the caller's holds what the user put
	 * there (a Kerberos cache, filesystem keys), and from the caller's
	 * keyring a process could replace its parent's (the caller's shell:
	 * KEYCTL_SESSION_TO_PARENT, refused by the filter too). The user's
	 * keyring (@u) stays shared, linked in as pam_keyinit does. No keyrings
	 * in the kernel, or keyctl refused to us (a container's seccomp
	 * profile): nothing to share. Out of key quota (a user's 200 keys):
	 * said, and the session shares the caller's.
	 */
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) >= 0)
		syscall(SYS_keyctl, KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING);
	else if (errno == EDQUOT)
		p_warn("no key quota left for a session keyring of its own: the session shares yours");
	else if (errno != ENOSYS && errno != EPERM && errno != EACCES) {
		p_err("cannot give the session a keyring of its own: %s", strerror(errno));
		goto fail;
	}
	if (install) {
		lfd = install_filter(daemon_pid);
		if (lfd < 0) {
			p_err("cannot install the session's seccomp filter: %s", strerror(-lfd));
			goto fail;
		}
		jsonw_init(&w, &req);
		jsonw_start_object(&w);
		jsonw_string_field(&w, "op", "session_attach");
		jsonw_int_field(&w, "id", id);
		jsonw_int_field(&w, "fd", lfd);
		jsonw_end_object(&w);
		fds[0] = lfd;
		reply = call(ctl, &req, fds, 1, err, sizeof(err));
		sbuf_free(&req);
		/* only the daemon holds the listener from here on */
		close(lfd);
		if (!reply) {
			/* our execs now wait for a supervisor that refused us: fail, do not run */
			p_err("the daemon did not take the session's listener: %s", err);
			goto fail;
		}
		json_decref(reply);
	}
	close(ctl);
	ctl = -1;
	/* last: the command is the first thing the domain runs, and nothing of ours needs more */
	rc = boundary_enter(plan, a->ws, err, sizeof(err));
	json_decref(plan);
	if (rc) {
		p_err("cannot put the session in its Landlock domain: %s", err);
		return 1;
	}
	return 0;
fail:
	json_decref(plan);
	if (ctl >= 0)
		close(ctl);
	return 1;
}

static int wait_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/*
 * --pty: a child opens the session on a new pty (its controlling terminal,
 * its session) and execs CMD there; we stay and relay. The child is the
 * launcher the daemon sees (the kernel's launcher mark is inherited at
 * fork), so the session's first exec is still its launcher's.
 */
static int exec_pty(struct exec_args *a, const char *path)
{
	static char rpath[PATH_MAX];
	struct termios tio, saved;
	struct winsize ws;
	bool in_tty = isatty(STDIN_FILENO), raw = false;
	int term = in_tty ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
	bool have_tio = term >= 0 && !tcgetattr(term, &tio);
	bool have_ws = term >= 0 && !ioctl(term, TIOCGWINSZ, &ws);
	int master = -1, slave = -1, sync[2], status = 0, rc;
	sigset_t set, old;
	pid_t pid;
	char b;

	/* the relay stays outside the session, CMD's parent: out of its reach (/proc/PID/mem, ptrace) */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) {
		p_err("cannot make this process undumpable: %s", strerror(errno));
		return 1;
	}
	rc = pty_open(have_tio ? &tio : NULL, have_ws ? &ws : NULL, &master, &slave);
	if (rc) {
		p_err("cannot open a pseudo-terminal: %s", strerror(-rc));
		return 1;
	}
	if (!in_tty) {
		/* input that is not typed is not echoed back into the output */
		struct termios t;

		if (!tcgetattr(slave, &t)) {
			t.c_lflag &= ~(ECHO | ECHONL);
			tcsetattr(slave, TCSANOW, &t);
		}
	}
	if (pipe2(sync, O_CLOEXEC)) {
		p_err("pipe: %s", strerror(errno));
		close(master);
		close(slave);
		return 1;
	}
	pty_relay_sigset(&set);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid = fork();
	if (pid < 0) {
		p_err("fork: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(master);
		close(slave);
		close(sync[0]);
		close(sync[1]);
		return 1;
	}
	if (!pid) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		close(master);
		close(sync[0]);
		rc = pty_make_controlling(slave);
		if (rc) {
			p_err("cannot give the command its pseudo-terminal: %s", strerror(-rc));
			_exit(1);
		}
		/* until CMD runs, our messages go to the caller's stderr, its terminal still as it was */
		rc = session_start(a);
		if (rc)
			_exit(rc);
		snprintf(rpath, sizeof(rpath), "%s", path);
		redirect_command(a, rpath, sizeof(rpath));
		path = rpath;
		if (dup2(slave, STDIN_FILENO) < 0 || dup2(slave, STDOUT_FILENO) < 0 ||
		    dup2(slave, STDERR_FILENO) < 0)
			_exit(EXIT_CANNOT_RUN);
		if (slave > STDERR_FILENO)
			close(slave);
		/* the parent relays from here: CMD's exec may wait for an approval */
		close(sync[1]);
		if (a->argv0)
			a->cmd[0] = (char *)a->argv0;
		execve(path, a->cmd, a->env);
		p_err("%s: %s", path, strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
	}
	close(slave);
	close(sync[1]);
	while (read(sync[0], &b, 1) < 0 && errno == EINTR)
		;
	close(sync[0]);
	/* a reader that went away is the relay's to handle, not a reason to die with the terminal raw */
	signal(SIGPIPE, SIG_IGN);
	if (in_tty && !pty_raw(STDIN_FILENO, &saved))
		raw = true;
	rc = pty_relay(&(struct pty_relay){ .in = STDIN_FILENO, .out = STDOUT_FILENO, .master = master,
					   .winsize_from = term, .child = pid, .eof_to_master = !in_tty,
					   .raw_saved = raw ? &saved : NULL },
		       &status);
	if (raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		p_err("relaying the pseudo-terminal: %s", strerror(-rc));
		if (rc == -ECHILD)
			return 1;
	}
	return wait_status(status);
}

int do_exec(int argc, char **argv)
{
	static const char doc[] =
		"Run CMD in a supervised session: every execve/execveat in its tree (direct and\n"
		"nested, through any fork, thread or script) waits for the daemon's policy,\n"
		"may wait for a person's approval, and is logged. CMD itself is the direct\n"
		"exec (depth 0); everything it starts is nested. The exit status is CMD's.\n"
		"\v"
		"The daemon's policy always applies; --policy adds a session policy that must\n"
		"also allow (deny wins). A session started inside a session keeps the outer\n"
		"one's rules and restrictions. Setuid programs do not gain privileges inside a\n"
		"session (no_new_privs). A refused exec fails with EACCES and its process's\n"
		"stderr says 'execgate: denied: MESSAGE (rule NAME)'.\n\n"
		"Exit status: CMD's; 2 when no daemon runs or on usage errors; 1 when the\n"
		"session cannot start; 126/127 when CMD cannot be run or found.";
	static const struct argp_child children[] = { { &cli_pin_argp, 0, NULL, 0 }, {} };
	struct argp argp = { options, parse_opt, "-- CMD [ARG...]", doc, children, NULL, NULL };
	struct exec_args a = {};
	char path[PATH_MAX];
	int rc;

	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, NULL, &a))
		return EXIT_USAGE;
	path_lookup(a.cmd[0], getenv("PATH"), path, sizeof(path));
	if (!strchr(path, '/')) {
		p_err("%s: command not found", a.cmd[0]);
		return EXIT_NOT_FOUND;
	}
	if (a.pty)
		return exec_pty(&a, path);
	rc = session_start(&a);
	if (rc)
		return rc;
	redirect_command(&a, path, sizeof(path));
	if (a.argv0)
		a.cmd[0] = (char *)a.argv0;
	execve(path, a.cmd, a.env);
	p_err("%s: %s", path, strerror(errno));
	return errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN;
}
