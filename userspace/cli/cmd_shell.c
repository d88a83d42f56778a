// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate shell: commands one after the other, each in a fresh `bash -c`
 * inside a supervised session, with the working directory and the exported
 * environment carried from one to the next, as an agent expects of a shell.
 *
 * After a command its shell writes its exported variables (NUL-delimited)
 * to a pipe it inherited at fd 63. The user's command runs with fd 63
 * closed (bash keeps its own copy close-on-exec meanwhile), so no program
 * the command starts can write a state of its own. What comes back is
 * sanitized every time: the loader's and the shells' injection variables
 * and secrets never pass to the next command. PWD becomes the next working
 * directory when it is one. Functions, aliases, traps and shell options do
 * not carry over.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/commands.h"
#include "cli/common.h"
#include "procs/text.h"
#include "procs/wrapper.h"
#include "util/strv.h"
#include "util/log.h"
#include "util/sbuf.h"

#define STATE_FD	EG_STATE_FD
#define STATE_MAX	(4 << 20)	/* a state bigger than this is refused, the old one kept */
#define LINE_MAX_BYTES	(1 << 20)

extern char **environ;

struct shell_args {
	struct cli_common common;
	const char *name;
	const char *shell;
};

enum { OPT_SESSION = 0x100, OPT_BASH };

static const struct argp_option options[] = {
	{ "session", OPT_SESSION, "NAME", 0, "The session name the commands run under (default: shell-PID)", 0 },
	{ "bash", OPT_BASH, "PATH", 0, "The bash to run each command with (default /bin/bash)", 0 },
	{},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct shell_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		CLI_COMMON_INIT(state, &a->common);
		break;
	case OPT_SESSION:
		if (strlen(arg) > 63)
			argp_error(state, "--session takes a name of at most 63 bytes");
		a->name = arg;
		break;
	case OPT_BASH:
		if (arg[0] != '/')
			argp_error(state, "--bash takes an absolute path");
		a->shell = arg;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s' (commands come on stdin)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

struct state {
	char **env;		/* NAME=VALUE, sanitized */
	size_t n;
	char cwd[PATH_MAX];
	char oldpwd[PATH_MAX];
	char workspace[PATH_MAX];	/* the directory the shell started in */
	char **dirs;		/* pushd stack below the top, bottom first */
	size_t ndirs;
	int last_status;
};

static void state_dropped(void *arg, const char *kv, size_t len, const char *why)
{
	(void)arg;
	p_warn("%.*s (%zu bytes) is not carried: %s", (int)strcspn(kv, "="), kv, len, why);
}

/* Replaces st's environment and directories with what buf says; st unchanged on failure. */
static int state_load(struct state *st, const char *buf, size_t len)
{
	struct eg_state_out out;
	struct stat sb;

	if (eg_state_parse(buf, len, &out, state_dropped, NULL))
		return -ENOMEM;
	eg_argv_free(st->env, st->n);
	eg_argv_free(st->dirs, st->ndirs);
	st->env = out.env;
	st->n = out.n;
	st->dirs = out.dirs;
	st->ndirs = out.nd;
	/* the next working directory: PWD, if it is a directory */
	if (out.pwd[0] == '/' && !stat(out.pwd, &sb) && S_ISDIR(sb.st_mode))
		snprintf(st->cwd, sizeof(st->cwd), "%s", out.pwd);
	snprintf(st->oldpwd, sizeof(st->oldpwd), "%s", out.oldpwd);
	return 0;
}

static int state_init(struct state *st)
{
	char **e;

	memset(st, 0, sizeof(*st));
	if (!getcwd(st->cwd, sizeof(st->cwd)))
		snprintf(st->cwd, sizeof(st->cwd), "/");
	snprintf(st->workspace, sizeof(st->workspace), "%s", st->cwd);
	for (e = environ; *e; e++)
		if (eg_state_carries(*e) && eg_argv_add(&st->env, &st->n, *e, strlen(*e)))
			return -ENOMEM;
	if (!st->env && eg_argv_add(&st->env, &st->n, "", 0))
		return -ENOMEM;
	if (st->n == 1 && !st->env[0][0]) {
		free(st->env[0]);
		st->n = 0;
		st->env[0] = NULL;
	}
	return 0;
}

/* Runs one command; returns its exit status (128+N for signal N). */
static int run_one(const struct shell_args *a, struct state *st, const char *pin, const char *name,
		   const char *cmd)
{
	char **env = NULL, status[16], pwdv[PATH_MAX + 8], oldv[PATH_MAX + 16], *buf = NULL;
	size_t n = 0, len = 0, cap = 0, i;
	int p[2], ws, rc, pidfd;
	bool over = false;	/* the state outgrew the buffer: read to the end, not kept */
	long left = -1;		/* once the shell is gone: what the pipe can still hold of its state */
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	for (i = 0; i < st->n; i++)
		if (eg_argv_add(&env, &n, st->env[i], strlen(st->env[i])))
			goto oom;
	snprintf(pwdv, sizeof(pwdv), "PWD=%s", st->cwd);
	if (eg_argv_add(&env, &n, pwdv, strlen(pwdv)))
		goto oom;
	if (st->oldpwd[0]) {
		snprintf(oldv, sizeof(oldv), "__EG_OLDPWD=%s", st->oldpwd);
		if (eg_argv_add(&env, &n, oldv, strlen(oldv)))
			goto oom;
	}
	if (st->ndirs) {
		struct sbuf d = {};

		sbuf_puts(&d, "__EG_DIRS=");
		for (i = 0; i < st->ndirs; i++)
			if (!strchr(st->dirs[i], '\n')) {
				sbuf_puts(&d, st->dirs[i]);
				sbuf_puts(&d, "\n");
			}
		if (d.oom || eg_argv_add(&env, &n, d.data, d.len)) {
			sbuf_free(&d);
			goto oom;
		}
		sbuf_free(&d);
	}
	snprintf(status, sizeof(status), "%d", st->last_status & 0xff);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out;
	}
	if (!pid) {
		char self[PATH_MAX];
		const char *argv[20];
		int k = 0;

		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		if (chdir(st->cwd) && chdir("/"))
			_exit(126);
		if (dup2(p[1], STATE_FD) < 0)
			_exit(126);
		if (!realpath("/proc/self/exe", self))
			_exit(126);
		argv[k++] = "execgate";
		argv[k++] = "exec";
		argv[k++] = "-p";
		argv[k++] = pin;
		argv[k++] = "--session";
		argv[k++] = name;
		/* the word workspace in the policies: where the shell started, wherever cd took it */
		argv[k++] = "--workspace";
		argv[k++] = st->workspace;
		argv[k++] = "--";
		argv[k++] = a->shell ? a->shell : "/bin/bash";
		argv[k++] = "--norc";
		argv[k++] = "--noprofile";
		argv[k++] = "-c";
		argv[k++] = eg_state_wrapper;
		argv[k++] = "execgate-shell";
		argv[k++] = cmd;
		argv[k++] = status;
		argv[k] = NULL;
		execve(self, (char **)argv, env);
		p_err("cannot run the command: %s", strerror(errno));
		_exit(126);
	}
	close(p[1]);
	p[1] = -1;
	/*
	 * Read to the end even past the cap: the shell writes its state as it
	 * exits, and a pipe nobody reads would stop it (and us, in waitpid).
	 * The end is the shell's exit, not EOF: a background job the command
	 * left (a subshell) holds bash's saved copy of the pipe for as long as
	 * it runs. What the shell wrote is in the pipe by then, at most its size.
	 */
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	for (;;) {
		char sink[4096];
		ssize_t r;

		if (!over && len + 65536 > cap) {
			char *nb = NULL;

			if (cap < STATE_MAX + 65536)
				nb = realloc(buf, cap ? cap * 2 : 65536);
			if (nb) {
				buf = nb;
				cap = cap ? cap * 2 : 65536;
			} else {
				over = true;	/* too big, or no memory: the rest is read and dropped */
			}
		}
		if (pidfd >= 0 && left < 0) {
			struct pollfd pf[2] = { { .fd = p[0], .events = POLLIN }, { .fd = pidfd, .events = POLLIN } };

			if (poll(pf, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				close(pidfd);	/* read to EOF, then */
				pidfd = -1;
			} else if (pf[1].revents) {
				left = fcntl(p[0], F_GETPIPE_SZ);
				if (left < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK))
					left = 0;
			}
		}
		if (over)
			r = read(p[0], sink, left >= 0 && left < (long)sizeof(sink) ? (size_t)left : sizeof(sink));
		else
			r = read(p[0], buf + len, left >= 0 && (size_t)left < cap - len ? (size_t)left : cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (!over)
			len += r;
		if (left >= 0 && !(left -= r))
			break;
	}
	if (pidfd >= 0)
		close(pidfd);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (over && len <= STATE_MAX)
		p_warn("out of memory: the state of the last command is not kept");
	else if (len && len <= STATE_MAX && state_load(st, buf, len))
		p_warn("out of memory: the state of the last command is not kept");
	else if (len > STATE_MAX)
		p_warn("the environment came back bigger than %d MiB; the previous one is kept", STATE_MAX >> 20);
	st->last_status = rc;
	goto out;
oom:
	rc = -ENOMEM;
out:
	free(buf);
	eg_argv_free(env, n);
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	return rc;
}

int do_shell(int argc, char **argv)
{
	static const char doc[] =
		"Run commands, one per line from stdin (a prompt on a terminal), each in a\n"
		"fresh 'bash -c' inside a supervised session (the daemon of --pin-path judges\n"
		"every exec). The working directory (cd, cd -, pushd) and the exported\n"
		"environment carry from one command to the next, and $? is the previous\n"
		"command's status; functions, aliases, traps and options do not. Variables\n"
		"such as LD_PRELOAD, BASH_ENV, PROMPT_COMMAND and secrets (*_TOKEN, *SECRET*,\n"
		"...) never carry over. The exit status is the last command's.\n"
		"docs/agents.md says more.";
	static const struct argp_child children[] = { { &cli_pin_argp, 0, NULL, 0 }, {} };
	struct argp argp = { options, parse_opt, NULL, doc, children, NULL, NULL };
	struct shell_args a = {};
	char name[64], *line = NULL;
	const char *pin;
	struct state st;
	size_t cap = 0;
	ssize_t n;
	bool tty;
	int rc = 0;

	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	pin = a.common.pin_path ? a.common.pin_path : "/sys/fs/bpf/execgate";
	if (a.name)
		snprintf(name, sizeof(name), "%s", a.name);
	else
		snprintf(name, sizeof(name), "shell-%d", (int)getpid());
	/*
	 * We stay outside the session, the parent of its commands, with their
	 * uid: not dumpable, they cannot write our memory (/proc/PID/mem) or
	 * trace us to run something unsupervised.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) {
		p_err("cannot make this process undumpable: %s", strerror(errno));
		return 1;
	}
	if (state_init(&st)) {
		p_err("out of memory");
		return 1;
	}
	tty = isatty(STDIN_FILENO);
	signal(SIGINT, tty ? SIG_IGN : SIG_DFL);	/* Ctrl-C stops the command, not the shell */
	for (;;) {
		if (tty) {
			fprintf(stderr, "execgate %s:%s$ ", name, st.cwd);
			fflush(stderr);
		}
		n = getline(&line, &cap, stdin);
		if (n < 0)
			break;
		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		if ((size_t)n != strlen(line)) {
			p_err("a command line holds a NUL byte; not run");
			st.last_status = rc = 2;
			continue;
		}
		if (n > LINE_MAX_BYTES) {
			p_err("a command line of %zd bytes; at most %d", n, LINE_MAX_BYTES);
			st.last_status = rc = 2;
			continue;
		}
		if (!n)
			continue;
		rc = run_one(&a, &st, pin, name, line);
		if (rc < 0) {
			p_err("cannot run the command: %s", strerror(-rc));
			rc = 1;
		}
	}
	if (tty)
		fputc('\n', stderr);
	free(line);
	eg_argv_free(st.env, st.n);
	eg_argv_free(st.dirs, st.ndirs);
	return rc;
}
