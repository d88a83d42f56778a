// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The run op (procs/internal.h): a request checked (the caller's rights,
 * environment, session name, working directory), the environment and the
 * launcher's command line made, a registry entry, its cgroup, log, pipes
 * or pty and state socket, the child spawned and watched.
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "procs/internal.h"
#include "procs/text.h"
#include "procs/wrapper.h"
#include "util/clock.h"

static bool env_denied(const struct eg_procs *ps, const char *kv)
{
	return ps->o.env_denied && ps->o.env_denied(ps->o.arg, kv);
}

/* Resolves dir (absolute) and checks it is inside the workspace; an O_PATH fd or -errno with a message. */
static int resolve_cwd(struct eg_procs *ps, const struct ctl_peer *peer, const char *dir, bool explicit_,
		       char *err, size_t errlen)
{
	char lnk[64], real[PATH_MAX];
	struct stat sb;
	ssize_t n;
	size_t wl;
	int fd;

	fd = procs_open_as(peer->uid, peer->gid, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "--cwd %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (ps->ws_fd < 0)
		return fd;
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
	n = readlink(lnk, real, sizeof(real) - 1);
	if (n < 0 || fstat(fd, &sb)) {
		snprintf(err, errlen, "--cwd %s: cannot resolve it", dir);
		close(fd);
		return -EINVAL;
	}
	real[n] = 0;
	wl = strlen(ps->ws_path);
	if (!strcmp(ps->ws_path, "/") ||
	    (!strncmp(real, ps->ws_path, wl) && (real[wl] == 0 || real[wl] == '/')))
		return fd;
	close(fd);
	if (!explicit_) {
		/* the caller's own directory is outside: start at the workspace's root */
		fd = open(ps->ws_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	snprintf(err, errlen, "--cwd %.1024s resolves to %.1024s, outside the workspace %.1024s", dir, real, ps->ws_path);
	return -EPERM;
}

struct run_req {
	const char **argv;
	size_t argc;
	const char **env, **environ_;
	size_t nenv, nenviron;
	const char *session, *cwd, *command;
	bool background, pty, stateful, cwd_explicit;
	int64_t timeout_ms;
};

int procs_op_run(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	const struct ctl_peer *peer = ctl_peer(c);
	struct run_req r = {};
	struct spawn sp = { .cwd_fd = -1, .fd0 = -1, .fd1 = -1, .fd2 = -1, .ctty = -1, .state_fd = -1 };
	char err[PATH_MAX + 256], name[64], pidfd_err[64], status[16], cwd[PATH_MAX] = "";
	bool saved_cwd = false, new_state = false;
	const char *launch[32];
	char **argv = NULL, **env = NULL;
	size_t nargv = 0, nenv = 0, i;
	struct shstate *st = NULL;
	struct proc *p = NULL;
	int fds[3] = { -1, -1, -1 }, in_pipe[2] = { -1, -1 }, out_pipe[2] = { -1, -1 }, sv[2] = { -1, -1 };
	int err_pipe[2] = { -1, -1 };
	int master = -1, slave = -1, k = 0, e;
	struct sbuf b = {}, dirs = {};
	struct jsonw w;
	pid_t pid;

	(void)pidfd_err;
	for (i = 0; i < 3; i++)
		fds[i] = ctl_take_fd(c);
	if (ps->o.in_session && ps->o.in_session(ps->o.arg, c)) {
		ctl_reply_err(c, "run: a process inside a supervised session cannot start processes outside it");
		goto out;
	}
	if (ctl_get_bool(req, "background", &r.background, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "pty", &r.pty, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "stateful", &r.stateful, err, sizeof(err)) == -EINVAL ||
	    ctl_get_str(req, "session", false, 63, &r.session, err, sizeof(err)) == -EINVAL ||
	    ctl_get_str(req, "cwd", false, PATH_MAX - 1, &r.cwd, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "cwd_explicit", &r.cwd_explicit, err, sizeof(err)) == -EINVAL ||
	    ctl_get_int(req, "timeout_ms", false, 0, INT64_C(86400000) * 365, &r.timeout_ms, err, sizeof(err)) == -EINVAL ||
	    ctl_get_strv(req, "env", false, ENV_MAX, 65536, &r.env, &r.nenv, err, sizeof(err)) == -EINVAL ||
	    ctl_get_strv(req, "environ", false, ENV_MAX, 65536, &r.environ_, &r.nenviron, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "run: %s", err);
		goto out;
	}
	/* a run goes on from its caller's lineage; the HTTP API's have no caller's process: the daemon's */
	sp.tasks_fd = ctl_peer(c)->api ? 0 : ps->o.tasks_fd;
	e = procs_caller_nproc(c, sp.tasks_fd, &sp.nproc, &sp.nproc_max, &sp.caller, &sp.have_caller);
	if (e) {
		ctl_reply_err(c, "run: cannot read your process limit (RLIMIT_NPROC): %s; nothing was started",
			      e == -ESRCH ? "your process has exited" : strerror(-e));
		goto out;
	}
	if (!json_object_get(req, "timeout_ms"))
		r.timeout_ms = r.background ? 0 : PROCS_TIMEOUT_MS;
	if (r.stateful && r.pty && !r.background) {
		/*
		 * The launcher's relay runs the shell in a child of its own on the
		 * pty: the state comes from a process the daemon did not start, and
		 * was thrown away, the run reported a success all the same.
		 */
		ctl_reply_err(c, "run: --stateful keeps no state with --pty in the foreground (the shell runs on "
			      "the relay's side of the pty); leave out --pty, or add --background; nothing was started");
		goto out;
	}
	if (r.stateful) {
		if (ctl_get_str(req, "command", true, 128 * 1024, &r.command, err, sizeof(err))) {
			ctl_reply_err(c, "run: %s", err);
			goto out;
		}
	} else if (ctl_get_strv(req, "argv", true, 4096, 128 * 1024, &r.argv, &r.argc, err, sizeof(err))) {
		ctl_reply_err(c, "run: %s", err);
		goto out;
	} else if (!r.argc || !r.argv[0][0]) {
		ctl_reply_err(c, "run: an empty command");
		goto out;
	}
	for (i = 0; i < r.nenv; i++) {
		if (!strchr(r.env[i], '=') || r.env[i][0] == '=') {
			ctl_reply_err(c, "run: --env %s: NAME=VALUE expected", r.env[i]);
			goto out;
		}
		if (eg_env_blocked(r.env[i], r.stateful)) {
			ctl_reply_err(c, "run: --env %.*s is refused: variables that load code (the loader's, glibc's, "
				      "the shells' and interpreters') and secrets never reach a run",
				      (int)strcspn(r.env[i], "="), r.env[i]);
			goto out;
		}
		if (env_denied(ps, r.env[i])) {
			ctl_reply_err(c, "run: --env %.*s is refused: the daemon's policy denies it (environment.deny)",
				      (int)strcspn(r.env[i], "="), r.env[i]);
			goto out;
		}
	}
	if (!r.background && (fds[0] < 0 || fds[1] < 0 || fds[2] < 0)) {
		ctl_reply_err(c, "run: a foreground run needs the caller's stdin, stdout and stderr (SCM_RIGHTS)");
		goto out;
	}
	if (r.session)
		snprintf(name, sizeof(name), "%s", r.session);
	else
		snprintf(name, sizeof(name), r.stateful ? "stateful-%u" : "run-%u",
			 r.stateful ? (unsigned int)peer->uid : ps->seq + 1);
	for (i = 0; name[i]; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", name[i])) {
			ctl_reply_err(c, "run: --session: only letters, digits, '.', '_' and '-'");
			goto out;
		}
	if (r.stateful) {
		st = shstate_get(ps, peer->uid, name, true);
		if (!st) {
			ctl_reply_err(c, "run: no room for another shell state (%d of yours at most, all busy; %d in all)",
				      STATES_PER_UID, STATES_MAX);
			goto out;
		}
		if (st->busy) {
			ctl_reply_err(c, "run: session %s is running a command already", name);
			goto out;
		}
		st->gid = peer->gid;
		new_state = !st->cwd[0];
		if (new_state) {
			/* a new state: the caller's environment (cleaned) and directory */
			for (i = 0; i < r.nenviron; i++)
				if (strchr(r.environ_[i], '=') && !eg_env_blocked(r.environ_[i], true) &&
				    !env_denied(ps, r.environ_[i]) &&
				    strncmp(r.environ_[i], "PWD=", 4) && strncmp(r.environ_[i], "OLDPWD=", 7) &&
				    strncmp(r.environ_[i], "__EG_", 5) &&
				    eg_argv_add(&st->env, &st->n, r.environ_[i], strlen(r.environ_[i])))
					goto oom;
		}
	}
	/* the working directory */
	{
		const char *dir = r.cwd;

		if (st && !r.cwd_explicit && st->cwd[0]) {
			dir = st->cwd;
			saved_cwd = true;
		}
		if (!dir)
			dir = ps->ws_fd >= 0 ? ps->ws_path : "/";
		sp.cwd_fd = resolve_cwd(ps, peer, dir, r.cwd_explicit, err, sizeof(err));
		if (sp.cwd_fd < 0) {
			if (saved_cwd) {
				/* gone, or shut to its user: forgotten, not refused for good */
				snprintf(st->cwd, sizeof(st->cwd), "%s", ps->ws_fd >= 0 ? ps->ws_path : "/");
				ctl_reply_err(c, "run: the session's directory %s (its next command starts in %s)",
					      err, st->cwd);
			} else {
				ctl_reply_err(c, "run: %s", err);
			}
			if (new_state)
				shstate_drop(st);
			goto out;
		}
		{
			char lnk[64];
			struct stat sb;
			ssize_t n;

			snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", sp.cwd_fd);
			n = readlink(lnk, cwd, sizeof(cwd) - 1);
			cwd[n > 0 ? n : 0] = 0;
			if (n <= 0 || cwd[0] != '/' || fstat(sp.cwd_fd, &sb)) {
				ctl_reply_err(c, "run: %s: cannot resolve it", dir);
				goto out;
			}
			sp.cwd = cwd;
			sp.cwd_dev = sb.st_dev;
			sp.cwd_ino = sb.st_ino;
			if (st)
				snprintf(st->cwd, sizeof(st->cwd), "%s", cwd);
			/*
			 * Without a daemon --workspace, a state's workspace is
			 * where its first command ran (as `execgate shell`
			 * pins it): the launcher would take its directory,
			 * which a command's `cd` moves, and the policies'
			 * `write: [workspace]` with it.
			 */
			if (st && !st->ws[0] && ps->ws_fd < 0)
				snprintf(st->ws, sizeof(st->ws), "%s", cwd);
		}
	}
	/* the environment */
	if (st) {
		for (i = 0; i < st->n; i++)
			if (eg_argv_add(&env, &nenv, st->env[i], strlen(st->env[i])))
				goto oom;
	} else {
		for (i = 0; i < r.nenviron; i++)
			if (strchr(r.environ_[i], '=') && !eg_env_blocked(r.environ_[i], false) &&
			    !env_denied(ps, r.environ_[i]) &&
			    eg_argv_add(&env, &nenv, r.environ_[i], strlen(r.environ_[i])))
				goto oom;
	}
	for (i = 0; i < r.nenv; i++)
		if (procs_strv_set(&env, &nenv, r.env[i]) || (st && procs_strv_set(&st->env, &st->n, r.env[i])))
			goto oom;
	if (st) {
		sbuf_printf(&b, "PWD=%s", st->cwd);
		if (b.oom || procs_strv_set(&env, &nenv, b.data))
			goto oom;
		sbuf_reset(&b);
		if (st->oldpwd[0]) {
			sbuf_printf(&b, "__EG_OLDPWD=%s", st->oldpwd);
			if (b.oom || procs_strv_set(&env, &nenv, b.data))
				goto oom;
			sbuf_reset(&b);
		}
		if (st->nd) {
			sbuf_puts(&dirs, "__EG_DIRS=");
			for (i = 0; i < st->nd; i++)
				if (!strchr(st->dirs[i], '\n')) {
					sbuf_puts(&dirs, st->dirs[i]);
					sbuf_putc(&dirs, '\n');
				}
			if (dirs.oom || eg_argv_add(&env, &nenv, dirs.data, dirs.len))
				goto oom;
		}
	}
	if (!env && eg_argv_add(&env, &nenv, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 64))
		goto oom;
	/* the launcher's command line: execgate exec -p PIN --session NAME [--pty] -- CMD */
	launch[k++] = ps->o.self;
	launch[k++] = "exec";
	launch[k++] = "-p";
	launch[k++] = ps->o.pin;
	launch[k++] = "--session";
	launch[k++] = name;
	/* the word workspace in the policies' filesystem lists: the daemon's, not the run's directory */
	if (ps->ws_fd >= 0) {
		launch[k++] = "--workspace";
		launch[k++] = ps->ws_path;
	} else if (st && st->ws[0]) {
		launch[k++] = "--workspace";
		launch[k++] = st->ws;
	}
	if (r.pty && !r.background)
		launch[k++] = "--pty";
	launch[k++] = "--";
	for (i = 0; i < (size_t)k; i++)
		if (eg_argv_add(&argv, &nargv, launch[i], strlen(launch[i])))
			goto oom;
	if (st) {
		snprintf(status, sizeof(status), "%d", st->last & 0xff);
		const char *sh[] = { "/bin/bash", "--norc", "--noprofile", "-c", eg_state_wrapper, "execgate-shell",
				     r.command, status };
		for (i = 0; i < sizeof(sh) / sizeof(sh[0]); i++)
			if (eg_argv_add(&argv, &nargv, sh[i], strlen(sh[i])))
				goto oom;
	} else {
		for (i = 0; i < r.argc; i++)
			if (eg_argv_add(&argv, &nargv, r.argv[i], strlen(r.argv[i])))
				goto oom;
	}
	p = proc_slot(ps, peer->uid, &e);
	if (!p && e == -EUSERS) {
		ctl_reply_err(c, "run: you have %d runs in the registry, all still running; no room for another "
			      "(wait for one, or 'execgate kill' one)", PROCS_PER_UID);
		goto out;
	}
	if (!p) {
		ctl_reply_err(c, "run: the registry is full (%d entries, none of yours finished); no room for another",
			      PROCS_MAX);
		goto out;
	}
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->owner = ps;
	p->in_fd = p->out_fd = p->state_fd = p->pidfd = -1;
	plog_init(&p->log);
	p->uid = peer->uid;
	p->background = r.background;
	p->pty = r.pty;
	snprintf(p->id, sizeof(p->id), "p-%u", ++ps->seq);
	snprintf(p->session, sizeof(p->session), "%s", name);
	p->cg.procs_fd = p->cg.v1_procs_fd = -1;
	/* a cgroup of its own, where the daemon has them: without it, no run */
	if (runcg_make(ps->cg, p->id, procs_pids_max(sp.nproc, sp.nproc_max), &p->cg, err, sizeof(err))) {
		ctl_reply_err(c, "run: %s; nothing was started", err);
		goto fail_p;
	}
	if (runcg_available(ps->cg))
		sp.cg = &p->cg;
	{
		struct sbuf cmd = {};

		if (st)
			sbuf_puts(&cmd, r.command);
		for (i = 0; !st && i < r.argc; i++) {
			if (i)
				sbuf_putc(&cmd, ' ');
			sbuf_puts(&cmd, r.argv[i]);
		}
		p->cmd = strdup(cmd.data && !cmd.oom ? sbuf_cstr(&cmd) : "");
		sbuf_free(&cmd);
		if (!p->cmd)
			goto oom_p;
	}
	if (r.background) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%.3900s/%.23s.%llu.log", ps->dir, p->id,
			 (unsigned long long)time(NULL));
		e = plog_open(&p->log, path, PROCS_LOG_MAX);
		if (e) {
			ctl_reply_err(c, "run: cannot create the log %s: %s (the daemon's --state-dir)",
				      path, strerror(-e));
			goto fail_p;
		}
		if (r.pty) {
			struct winsize wsz = { .ws_row = 24, .ws_col = 80 };

			if (openpty(&master, &slave, NULL, NULL, &wsz)) {
				ctl_reply_err(c, "run: cannot open a pty: %s", strerror(errno));
				goto fail_p;
			}
			fcntl(master, F_SETFD, FD_CLOEXEC);
			fcntl(slave, F_SETFD, FD_CLOEXEC);
			fcntl(master, F_SETFL, O_NONBLOCK);
			sp.fd0 = sp.fd1 = sp.fd2 = sp.ctty = slave;
		} else {
			if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC)) {
				ctl_reply_err(c, "run: cannot make pipes: %s", strerror(errno));
				goto fail_p;
			}
			fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
			fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
			sp.fd0 = in_pipe[0];
			sp.fd1 = sp.fd2 = out_pipe[1];
		}
	} else {
		sp.fd0 = fds[0];
		sp.fd1 = fds[1];
		sp.fd2 = fds[2];
	}
	if (st) {
		int one = 1;

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ||
		    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
			ctl_reply_err(c, "run: cannot make the state socket: %s", strerror(errno));
			goto fail_p;
		}
		shutdown(sv[1], SHUT_RD);
		sp.state_fd = sv[1];
	}
	sp.argv = argv;
	sp.env = env;
	sp.uid = peer->uid;
	sp.gid = peer->gid;
	if (pipe2(err_pipe, O_CLOEXEC)) {
		ctl_reply_err(c, "run: cannot make a pipe: %s", strerror(errno));
		goto fail_p;
	}
	sp.err_fd = err_pipe[1];
	pid = proc_spawn(&sp);
	if (pid < 0) {
		ctl_reply_err(c, "run: fork: %s", strerror(errno));
		goto fail_p;
	}
	close(err_pipe[1]);
	err_pipe[1] = -1;
	runcg_close_fds(&p->cg);
	if (proc_spawn_wait(&sp, err_pipe[0], pid, err, sizeof(err))) {
		if (saved_cwd && !strncmp(err, "cannot enter", 12)) {
			/* the session's saved directory: forgotten, the next run starts afresh there */
			snprintf(st->cwd, sizeof(st->cwd), "%s", ps->ws_fd >= 0 ? ps->ws_path : "/");
			ctl_reply_err(c, "run: %s (the session's directory; its next command starts in %s)", err,
				      st->cwd);
		} else {
			ctl_reply_err(c, "run: %s", err);
			if (new_state)
				shstate_drop(st);
		}
		goto fail_p;
	}
	p->pid = pid;
	p->start_ms = eg_mono_ms();
	p->pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0 || loop_add_fd(ps->o.loop, p->pidfd, EPOLLIN, proc_on_exit, p, &p->pw)) {
		/* cannot watch it: it does not run unwatched */
		runcg_signal(&p->cg, SIGKILL);
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		ctl_reply_err(c, "run: cannot watch the process: %s", strerror(errno));
		goto fail_p;
	}
	if (r.background) {
		if (r.pty) {
			p->in_fd = master;
			p->out_fd = master;
			master = -1;
		} else {
			p->in_fd = in_pipe[1];
			p->out_fd = out_pipe[0];
			in_pipe[1] = out_pipe[0] = -1;
		}
		loop_add_fd(ps->o.loop, p->out_fd, EPOLLIN, proc_on_out, p, &p->ow);
	}
	if (st) {
		p->st = st;
		st->busy = true;
		p->state_fd = sv[0];
		sv[0] = -1;
		loop_add_fd(ps->o.loop, p->state_fd, EPOLLIN, proc_on_state, p, &p->sw);
	}
	if (r.timeout_ms > 0) {
		p->deadline_ms = p->start_ms + r.timeout_ms;
		loop_add_timer(ps->o.loop, r.timeout_ms, 0, proc_on_timeout, p, &p->timer);
	}
	if (!r.background) {
		p->fg = c;
		ctl_hold(c, proc_on_fg_close, p);
	}
	sbuf_reset(&b);
	ctl_reply_open(&w, &b);
	jsonw_string_field(&w, "id", p->id);
	jsonw_int_field(&w, "pid", pid);
	jsonw_string_field(&w, "session", name);
	if (p->log.path[0])
		jsonw_string_field(&w, "log", p->log.path);
	jsonw_uint_field(&w, "timeout_ms", r.timeout_ms);
	ctl_reply_send(c, &w, &b);
	goto out;

oom_p:
	ctl_reply_err(c, "run: out of memory");
fail_p:
	proc_release(p);
	goto out;
oom:
	ctl_reply_err(c, "run: out of memory");
out:
	e = errno;
	for (i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (sp.cwd_fd >= 0)
		close(sp.cwd_fd);
	for (i = 0; i < 2; i++) {
		if (in_pipe[i] >= 0)
			close(in_pipe[i]);
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (sv[i] >= 0)
			close(sv[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	if (master >= 0)
		close(master);
	if (slave >= 0)
		close(slave);
	eg_argv_free(argv, nargv);
	eg_argv_free(env, nenv);
	free(r.argv);
	free(r.env);
	free(r.environ_);
	sbuf_free(&b);
	sbuf_free(&dirs);
	errno = e;
	return 0;
}
