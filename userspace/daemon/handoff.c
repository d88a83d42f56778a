// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A restart that breaks nothing: on SIGUSR2 the daemon re-executes itself
 * (the binary on disk now: an upgrade takes effect) and hands over, as
 * inherited file descriptors, everything that must not be dropped: the
 * pin directory's lock, the control socket (clients queue meanwhile), the
 * attached programs' links (tracing goes on), and every session's seccomp
 * listener (its processes wait in the kernel, their execs are answered by
 * the new daemon), and the registry of daemon-run processes (`execgate
 * run`: pidfds, pipes and ptys, logs, shell states; procs/handoff.c). The maps stay pinned and the new programs take over
 * with the next generation (trace/tracer.c), so no exec is traced twice or
 * not at all. A small JSON state in a memfd says which fd is what.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "ctl/server.h"
#include "daemon/daemon_int.h"
#include "daemon/handoff.h"
#include "events/sinks.h"
#include "loop/loop.h"
#include "daemon/notify.h"
#include "execgate.skel.h"
#include "procs/procs.h"
#include "session/session.h"
#include "util/fileid.h"
#include "util/jsonw.h"
#include "util/log.h"

/* fds a handover keeps: every session's listener and policy (SESSIONS_MAX each), the runs', the daemon's own */
#define MAX_KEEP 16384

static void keep(int fd, bool on)
{
	if (fd >= 0)
		fcntl(fd, F_SETFD, on ? 0 : FD_CLOEXEC);
}

static void uint_array(struct jsonw *w, const char *key, const uint64_t *v, size_t n)
{
	size_t i;

	jsonw_key(w, key);
	jsonw_start_array(w);
	for (i = 0; i < n; i++)
		jsonw_uint(w, v[i]);
	jsonw_end_array(w);
}

/*
 * The output's counters go on from where they were: records dropped on a
 * full disk before the handover and not reported yet are reported by the
 * new daemon, and written + dropped still add up to the kernel's counts.
 */
static void export_output(struct daemon *d, struct jsonw *w)
{
	const struct eg_output_stats *os;

	output_flush(d->out);
	/* the new daemon cannot send what waits in a sink's backlog: out now, or counted */
	sink_drain(d->syslog, 1000);
	sink_drain(d->journal, 1000);
	sink_drop_backlog(d->syslog);
	sink_drop_backlog(d->journal);
	os = output_stats(d->out);
	jsonw_key(w, "output");
	jsonw_start_object(w);
	uint_array(w, "written", os->written, EG_REC__COUNT);
	uint_array(w, "dropped", os->dropped, EG_REC__COUNT);
	jsonw_uint_field(w, "write_errors", os->write_errors);
	jsonw_uint_field(w, "rotations", os->rotations);
	jsonw_uint_field(w, "rotation_failures", os->rotation_failures);
	jsonw_uint_field(w, "dropped_reported", d->dropped_reported);
	jsonw_uint_field(w, "filtered_severity", os->filtered_severity);
	/* --syslog, --journal: their losses go on being counted, as the file's */
	if (d->syslog) {
		jsonw_uint_field(w, "syslog_sent", sink_stats(d->syslog)->sent);
		jsonw_uint_field(w, "syslog_dropped", sink_stats(d->syslog)->dropped);
		jsonw_uint_field(w, "syslog_cut", sink_stats(d->syslog)->cut);
	}
	if (d->journal) {
		jsonw_uint_field(w, "journal_sent", sink_stats(d->journal)->sent);
		jsonw_uint_field(w, "journal_dropped", sink_stats(d->journal)->dropped);
	}
	jsonw_uint_field(w, "sinks_reported", d->sinks_reported);
	jsonw_end_object(w);
}

void handoff_import_sinks(struct daemon *d, const json_t *state)
{
	const json_t *o = json_object_get(state, "output");
	struct eg_sink_stats st = {};

	if (!json_is_object(o))
		return;
	if (d->syslog && json_object_get(o, "syslog_sent")) {
		st.sent = json_integer_value(json_object_get(o, "syslog_sent"));
		st.dropped = json_integer_value(json_object_get(o, "syslog_dropped"));
		st.cut = json_integer_value(json_object_get(o, "syslog_cut"));
		sink_restore_stats(d->syslog, &st);
		st.cut = 0;
	}
	if (d->journal && json_object_get(o, "journal_sent")) {
		st.sent = json_integer_value(json_object_get(o, "journal_sent"));
		st.dropped = json_integer_value(json_object_get(o, "journal_dropped"));
		sink_restore_stats(d->journal, &st);
	}
	d->sinks_reported = json_integer_value(json_object_get(o, "sinks_reported"));
}

void handoff_import_output(struct daemon *d, const json_t *state)
{
	const json_t *o = json_object_get(state, "output");
	struct eg_output_stats st = *output_stats(d->out);
	json_t *v;
	size_t i;

	if (!json_is_object(o))
		return;		/* from a daemon that did not hand them over */
	json_array_foreach(json_object_get(o, "written"), i, v)
		if (i < EG_REC__COUNT)
			st.written[i] = json_integer_value(v);
	json_array_foreach(json_object_get(o, "dropped"), i, v)
		if (i < EG_REC__COUNT)
			st.dropped[i] = json_integer_value(v);
	/* added: this daemon's open may have counted one (a cut line it could not end) */
	st.write_errors += json_integer_value(json_object_get(o, "write_errors"));
	st.rotations = json_integer_value(json_object_get(o, "rotations"));
	st.rotation_failures = json_integer_value(json_object_get(o, "rotation_failures"));
	st.filtered_severity = json_integer_value(json_object_get(o, "filtered_severity"));
	output_restore_stats(d->out, &st);
	d->dropped_reported = json_integer_value(json_object_get(o, "dropped_reported"));
}

/*
 * The policy in force, byte for byte, in a memfd read from its start (for
 * the check and for the new daemon); above stderr (with stdout closed, a
 * child's /dev/null would land on it). -1 when it cannot be made.
 */
static int policy_memfd(const struct daemon *d, const char *name)
{
	size_t len;
	const char *src = policy_source(d->policy, &len);
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd >= 0 && fd <= STDERR_FILENO) {
		int f = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);

		close(fd);
		fd = f;
	}
	if (fd >= 0 && (write(fd, src, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* This daemon's arguments into argv from argc on, without the handover it came from: the new argc. */
static int own_args(const struct daemon *d, char **argv, int argc)
{
	int i;

	for (i = 0; i < d->argc; i++) {
		if (!strcmp(d->argv[i], "--takeover") && i + 1 < d->argc) {
			i++;
			continue;
		}
		argv[argc++] = d->argv[i];
	}
	return argc;
}

/*
 * A check that takes longer: killed, and no handover (EXECGATE_HANDOVER_CHECK_MS). The loop
 * does not wait for it: room for a slow machine's load (4.4 s under qemu's TCG).
 */
#define PREFLIGHT_MS	60000

/*
 * The binary at d->self now (a package upgrade put a new one there) must
 * start: once exec'd it replaces this daemon, and a start that fails then
 * would end enforcement with it. So it runs first as `daemon ... --check`
 * with this daemon's command line and the policy in force (the same bytes,
 * from a memfd): the policy loaded, compiled for the kernel with
 * --enforce, the API's address and token file read, and its BPF programs
 * loaded, filled and attached by this kernel (inactive: their own
 * generation switch, never flipped). Its errors go to our stderr. The
 * loop goes on meanwhile (the child's pidfd and a PREFLIGHT_MS timer are
 * watched); anything but a clean exit keeps this daemon. What changed
 * while it ran is checked again before any handover: another policy in
 * force (a reload with other bytes), another file at d->self (its identity
 * when the check started), or a SIGUSR2 meanwhile (an upgrade after the
 * one being checked); the file's identity is compared once more right
 * before the exec. Left unchecked: a file replaced in the microseconds
 * between that comparison and the exec, and what only the takeover itself
 * does (the handed-over state).
 */
struct handoff_check {
	pid_t pid;
	int pidfd;
	int pfd;			/* the policy's memfd, -1: no policy */
	char policy_sha[72];		/* the policy checked, "" none */
	struct stat exe;		/* d->self when it started (st_ino 0: unknown) */
	bool timed_out;
	bool again;			/* a SIGUSR2 while it ran */
	struct eg_watch *w, *timer;
};

static void handoff_now(struct daemon *d, const struct stat *exe);

static void check_free(struct daemon *d)
{
	struct handoff_check *c = d->check;

	if (!c)
		return;
	loop_del(c->w);
	loop_del(c->timer);
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->pfd >= 0)
		close(c->pfd);
	free(c);
	d->check = NULL;
}

static void check_failed(struct daemon *d, const char *why)
{
	p_err("cannot hand over: %s would not start here (%s; see above): this daemon goes on", d->self, why);
}

static int check_start(struct daemon *d);

static const char *sha_of(const struct daemon *d)
{
	return d->policy ? policy_sha256(d->policy) : "";
}

/* The file at d->self is not the one checked (its identity then: exe). */
static bool exe_changed(const struct daemon *d, const struct stat *exe)
{
	struct stat st;

	if (stat(d->self, &st) || !exe->st_ino)
		return true;
	return !eg_stat_same(&st, exe);
}

/* What the check started with is no longer what a handover would run, or with. */
static bool check_stale(const struct daemon *d, const struct handoff_check *c)
{
	return strcmp(c->policy_sha, sha_of(d)) || exe_changed(d, &c->exe);
}

static void on_check_exit(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct daemon *d = arg;
	struct handoff_check *c = d->check;
	const char *why = NULL;
	struct stat exe = c->exe;
	bool again;
	int status = 0;

	(void)w;
	(void)fd;
	(void)events;
	while (waitpid(c->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			why = strerror(errno);
			break;
		}
	}
	if (!why && c->timed_out)
		why = "its check did not end in time";
	if (!why && (!WIFEXITED(status) || WEXITSTATUS(status)))
		why = !WIFEXITED(status) ? "its check was killed" :
		      WEXITSTATUS(status) == 127 ? "it does not run" :
		      WEXITSTATUS(status) == 2 ? "it does not take this command line: an execgate before 'daemon "
						 "--check' is not handed over to (a stop and a start downgrade)" :
		      "its check failed";
	again = c->again || (!why && check_stale(d, c));
	check_free(d);
	if (why)
		check_failed(d, why);
	if (loop_stopping(d->loop)) {
		p_info("the daemon is stopping: no handover");
		return;
	}
	if (again) {
		p_info("the policy in force, or the binary at %s, may have changed while it was checked: checking "
		       "it again", d->self);
		if (check_start(d))
			check_failed(d, "its check cannot start");
		return;
	}
	if (!why)
		handoff_now(d, &exe);
}

static void on_check_timeout(struct eg_watch *w, uint64_t n, void *arg)
{
	struct daemon *d = arg;

	(void)w;
	(void)n;
	if (d->check && !d->check->timed_out) {
		d->check->timed_out = true;
		kill(d->check->pid, SIGKILL);	/* its pidfd then says it ended */
	}
}

static int check_start(struct daemon *d)
{
	static const char lint_off[] = "EXECGATE_NO_MULTICALL_LINT=1";
	char path[64], **env = NULL, **argv = NULL;
	struct handoff_check *c;
	size_t n = 0;
	int devnull = -1, argc = 0, err = -ENOMEM;
	sigset_t none;
	int ms = getenv("EXECGATE_HANDOVER_CHECK_MS") ? atoi(getenv("EXECGATE_HANDOVER_CHECK_MS")) : PREFLIGHT_MS;

	if (ms <= 0)
		ms = PREFLIGHT_MS;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = -1;
	c->pidfd = -1;
	c->pfd = -1;
	snprintf(c->policy_sha, sizeof(c->policy_sha), "%s", sha_of(d));
	if (stat(d->self, &c->exe))
		c->exe.st_ino = 0;
	d->check = c;
	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	argv = calloc(d->argc + 8, sizeof(*argv));
	if (!env || !argv)
		goto fail;
	/* the lint's probe of this host's busybox adds only warnings, and time */
	memcpy(env, environ, n * sizeof(*env));
	env[n] = (char *)lint_off;
	/* this daemon's command line (without the handover it came from), with the policy in force */
	argv[argc++] = "execgate";
	argv[argc++] = "daemon";
	argc = own_args(d, argv, argc);
	if (d->policy) {
		c->pfd = policy_memfd(d, "execgate-policy-check");
		if (c->pfd < 0)
			goto fail;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", c->pfd);
		argv[argc++] = "--policy";
		argv[argc++] = path;
	}
	argv[argc++] = "--check";
	argv[argc] = NULL;
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	sigemptyset(&none);
	c->pid = fork();
	if (c->pid == 0) {
		/* async-signal-safe calls only: this process has other threads' memory */
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (c->pfd >= 0)
			fcntl(c->pfd, F_SETFD, 0);
		if (devnull >= 0)
			dup2(devnull, STDOUT_FILENO);
		execve(d->self, argv, env);
		_exit(127);
	}
	err = c->pid < 0 ? -errno : 0;
	if (!err) {
		c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
		err = c->pidfd < 0 ? -errno : 0;
	}
	if (!err)
		err = loop_add_fd(d->loop, c->pidfd, EPOLLIN, on_check_exit, d, &c->w);
	if (!err)
		err = loop_add_timer(d->loop, ms, 0, on_check_timeout, d, &c->timer);
	if (err && c->pid > 0) {
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
fail:
	if (devnull >= 0)
		close(devnull);
	free(env);
	free(argv);
	if (err)
		check_free(d);
	return err;
}

void handoff_cancel(struct daemon *d)
{
	struct pollfd p;

	if (!d->check)
		return;
	kill(d->check->pid, SIGKILL);
	/* a check stuck where no signal reaches it (a hung file system) is left to init */
	p = (struct pollfd){ .fd = d->check->pidfd, .events = POLLIN };
	if (poll(&p, 1, 1000) > 0)
		waitpid(d->check->pid, NULL, WNOHANG);
	check_free(d);
}

int daemon_handoff(struct daemon *d)
{
	int err;

	if (d->check) {
		d->check->again = true;
		p_info("a handover is being checked already (%s): it is checked again once that check ends",
		       d->self);
		return 0;
	}
	err = check_start(d);
	if (err)
		check_failed(d, strerror(-err));
	return err;
}

/*
 * The memfds a handover made (its policy's, the sessions' policies'),
 * fds[made..n), not the daemon's own fds before them nor the sessions'
 * listeners, which go on: closed when the handover does not happen.
 */
static void close_made(const int *fds, int made, int n)
{
	char path[64], target[64];

	for (int i = made < 0 ? n : made; i < n; i++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[i]);
		len = readlink(path, target, sizeof(target) - 1);
		if (len > 0 && (target[len] = '\0', !strncmp(target, "/memfd:execgate-", 16)) &&
		    strncmp(target, "/memfd:execgate-handoff", 23))
			close(fds[i]);
	}
}

/* The check passed: the state written out, and the new binary exec'd in our place. */
static void handoff_now(struct daemon *d, const struct stat *exe)
{
	static int fds[MAX_KEEP];
	char **argv, num[16];
	struct sbuf b = {};
	bool recheck = false;
	struct jsonw w;
	int n = 0, nlinks, i, state = -1, argc = 0, made = -1;

	/*
	 * Replaced again since its check: that one is checked first, before
	 * anything that cannot be taken back (the sessions' export refuses
	 * every approval waiting for a person, "the daemon restarted").
	 */
	if (exe_changed(d, exe)) {
		p_info("%s changed after its check: checking it again", d->self);
		if (check_start(d))
			check_failed(d, "its check cannot start");
		return;
	}
	/* what is queued now reaches the output first */
	daemon_drain_all(d);
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_uint_field(&w, "v", 1);
	jsonw_int_field(&w, "lock_fd", d->inst.dir_fd);
	jsonw_int_field(&w, "pid_fd", d->inst.pid_fd);
	jsonw_int_field(&w, "ctl_fd", ctl_server_fd(d->ctl));
	fds[n++] = d->inst.dir_fd;
	fds[n++] = d->inst.pid_fd;
	fds[n++] = ctl_server_fd(d->ctl);
	jsonw_uint_field(&w, "lost_reported", d->lost_reported);
	jsonw_key(&w, "links");
	jsonw_start_array(&w);
	nlinks = tracer_link_fds(d->skel, fds + n, 64);
	for (i = 0; i < nlinks; i++)
		jsonw_int(&w, fds[n + i]);
	n += nlinks;
	jsonw_end_array(&w);
	/* the rules in force, not what the file says now: a handover never
	 * changes the policy (that is what a reload is for), and a file broken
	 * since the last reload must not stop the new daemon */
	if (d->policy) {
		int pfd = policy_memfd(d, "execgate-policy");

		if (pfd < 0)
			goto fail;
		jsonw_int_field(&w, "policy_fd", pfd);
		made = n;		/* from here on, fds[] holds memfds made for the handover (closed if it fails) */
		fds[n++] = pfd;
	}
	/*
	 * The names context ids had (the start noted its policy's, each reload
	 * its own): running tasks keep the ids. The ctxnames pin holds them
	 * too; a daemon of the version before it read only these.
	 */
	jsonw_key(&w, "ctx_names");
	jsonw_start_array(&w);
	for (i = 0; i <= EG_POLICY_MAX_CONTEXTS; i++) {
		if (d->ctx_names[i])
			jsonw_string(&w, d->ctx_names[i]);
		else
			jsonw_null(&w);
	}
	jsonw_end_array(&w);
	if (made < 0)
		made = n;
	jsonw_key(&w, "sessions");
	if (d->sessions) {
		sessions_export(d->sessions, &w, fds, &n, MAX_KEEP - 1);
		/*
		 * The export answered what its receivers held: those execs' records
		 * take their verdicts here, which do not go along (the next daemon
		 * would write them without the session's rule): a moment for the
		 * execs to happen, and their records are read now.
		 */
		usleep(50 * 1000);
		daemon_drain_all(d);
	} else {
		jsonw_start_array(&w);
		jsonw_end_array(&w);
	}
	if (d->procs) {
		jsonw_key(&w, "procs");
		procs_export(d->procs, &w, fds, &n, MAX_KEEP - 1);
	}
	export_output(d, &w);
	jsonw_end_object(&w);
	if (b.oom)
		goto fail;

	state = memfd_create("execgate-handoff", MFD_CLOEXEC);
	if (state < 0 || write(state, b.data, b.len) != (ssize_t)b.len)
		goto fail;
	lseek(state, 0, SEEK_SET);
	fds[n++] = state;
	for (i = 0; i < n; i++)
		keep(fds[i], true);
	output_flush(d->out);

	/* the same command line, told where the state is */
	argv = calloc(d->argc + 5, sizeof(*argv));
	if (!argv)
		goto restore;
	argv[argc++] = d->self;
	argv[argc++] = "daemon";
	argc = own_args(d, argv, argc);
	snprintf(num, sizeof(num), "%d", state);
	argv[argc++] = "--takeover";
	argv[argc++] = num;
	argv[argc] = NULL;
	/* replaced while the state was written: that one is checked first */
	if (exe_changed(d, exe)) {
		recheck = true;
		free(argv);
		goto restore;
	}
	p_info("handing over to a new daemon (%s)", d->self);
	notify_reloading();	/* the same pid: the new daemon says READY=1 */
	execv(d->self, argv);
	p_err("cannot re-execute %s: %s; this daemon goes on", d->self, strerror(errno));
	notify_send("READY=1");
	free(argv);
restore:
	for (i = 0; i < n; i++)
		keep(fds[i], false);
	close(state);
	close_made(fds, made, n - 1);	/* the state is fds[n - 1], closed above */
	sbuf_free(&b);
	if (d->sessions)
		sessions_resume(d->sessions);
	if (recheck) {
		p_info("%s changed after its check: checking it again", d->self);
		if (check_start(d))
			check_failed(d, "its check cannot start");
	}
	return;
fail:
	i = errno;
	if (state >= 0)
		close(state);
	close_made(fds, made, n);
	sbuf_free(&b);
	if (d->sessions)
		sessions_resume(d->sessions);
	p_err("cannot prepare the handover: %s", strerror(i));
}

int handoff_read(int fd, json_t **ret)
{
	json_error_t je;
	json_t *st;
	FILE *f;

	f = fdopen(fd, "r");
	if (!f)
		return -errno;
	st = json_loadf(f, 0, &je);
	fclose(f);
	if (!json_is_object(st) || json_integer_value(json_object_get(st, "v")) != 1) {
		json_decref(st);
		return -EINVAL;
	}
	*ret = st;
	return 0;
}
