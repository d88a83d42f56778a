// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Daemon-run processes: spawn, registry, logs, stateful shells (procs.h).
 * Everything runs in the daemon's event loop; nothing here blocks: a
 * process's exit is its pidfd becoming readable, its output a pipe or pty
 * master in the loop, its timeout a timer.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "events/meta.h"
#include "procs/plog.h"
#include "procs/procs.h"
#include "procs/runcg.h"
#include "procs/text.h"
#include "procs/wrapper.h"
#include "util/b64.h"
#include "util/clock.h"
#include "util/jsonw.h"
#include "util/log.h"
#include "util/sbuf.h"

#define STATE_FD	EG_STATE_FD
#define ERR_FD		62	/* the child's report of a failure before exec (struct spawn_err) */
#define STATE_MAX	(4u << 20)
#define STATES_MAX	128
#define STATES_PER_UID	16		/* a user's share of them (root's: all) */
#define CHUNK_MAX	(64u << 10)	/* output bytes per poll/log reply */
#define REAP_MS		(3600u * 1000)	/* exited entries are kept this long */
#define LOG_MAX_AGE_S	(7 * 24 * 3600)
#define ENV_MAX		1024
#define ENV_STR_MAX	(32u * 4096 - 1)	/* MAX_ARG_STRLEN less the NUL: execve's E2BIG past it */
#define ENV_BYTES_MAX	(1u << 20)	/* a kept state's environment in all (ARG_MAX is 2 MiB or less) */

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77		/* Linux 6.5; the system headers may be older */
#endif

struct shstate {
	bool used, busy;
	uid_t uid;
	gid_t gid;
	char name[64];
	char **env;
	size_t n;
	char cwd[PATH_MAX];
	char oldpwd[PATH_MAX];
	char **dirs;
	size_t nd;
	int last;
	uint64_t used_ms;
};

struct proc {
	bool used;
	struct eg_procs *owner;
	char id[24];
	pid_t pid;
	int pidfd;
	struct eg_watch *pw;
	uid_t uid;
	char session[64];
	char *cmd;			/* for listings */
	bool background, pty;
	int in_fd, out_fd;		/* stdin pipe / pty master; output pipe / pty master */
	struct eg_watch *ow;
	struct eg_plog log;		/* background runs; else log.path is "" */
	uint64_t poll_off;		/* a stream offset (plog.h) */
	uint64_t deadline_ms;		/* the timeout's, or 0 */
	struct eg_watch *timer;
	bool timed_out;
	struct ctl_conn *fg;
	int state_fd;
	struct eg_watch *sw;
	struct sbuf state;
	bool state_bad;
	char state_warn[256];		/* what the state did not keep, for the caller */
	struct shstate *st;
	bool exited;
	int ws;
	uint64_t start_ms, end_ms;
	struct eg_run_cg cg;		/* its cgroup (runcg.h); paths "" when it has none */
};

struct eg_procs {
	struct eg_procs_opts o;
	char dir[PATH_MAX];
	int ws_fd;			/* --workspace, O_PATH */
	struct eg_runcg *cg;		/* where runs' cgroups go */
	char ws_path[PATH_MAX];		/* its real path */
	unsigned int seq;
	struct proc p[PROCS_MAX];
	struct shstate st[STATES_MAX];
};

static void strv_free(char **v, size_t n)
{
	while (n)
		free(v[--n]);
	free(v);
}

static int strv_add(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(**v));
	char *c;

	if (!nv)
		return -ENOMEM;
	*v = nv;
	c = strndup(s, len);
	if (!c)
		return -ENOMEM;
	nv[(*n)++] = c;
	nv[*n] = NULL;
	return 0;
}

/* Sets NAME=VALUE in v (replacing NAME). */
static int strv_set(char ***v, size_t *n, const char *kv)
{
	size_t l = strcspn(kv, "="), i;

	for (i = 0; i < *n; i++)
		if (!strncmp((*v)[i], kv, l) && (*v)[i][l] == '=') {
			char *c = strdup(kv);

			if (!c)
				return -ENOMEM;
			free((*v)[i]);
			(*v)[i] = c;
			return 0;
		}
	return strv_add(v, n, kv, strlen(kv));
}

/*
 * Whether what the run started still runs: its first process, or its
 * cgroup (what it left behind when it exited: `cmd &`, also a process
 * that left the group with setsid), or else the process group it led (the
 * group's number is not given to another process while it has members).
 */
static bool proc_alive(const struct proc *p)
{
	int pop;

	if (!p->exited)
		return true;
	pop = runcg_populated(&p->cg);
	return pop >= 0 ? pop > 0 : !kill(-p->pid, 0);
}

/* sig to everything the run started: its cgroup, and its process group. 0 if anything got it. */
static int proc_signal(struct proc *p, int sig)
{
	int a = runcg_signal(&p->cg, sig), b = kill(-p->pid, sig) ? -errno : 0;

	if (b && !p->exited)
		b = kill(p->pid, sig) ? -errno : 0;
	return !a || !b ? 0 : b;
}

static bool env_denied(const struct eg_procs *ps, const char *kv)
{
	return ps->o.env_denied && ps->o.env_denied(ps->o.arg, kv);
}

static bool may(const struct ctl_conn *c, const struct proc *p)
{
	const struct ctl_peer *peer = ctl_peer(c);

	return peer->uid == 0 || peer->uid == p->uid;
}

/*
 * A path looked up with uid's and gid's rights (setfsuid: this thread only),
 * so the daemon does not go where its caller may not: the child checks
 * again with the caller's supplementary groups (spawn).
 */
static int open_as(uid_t uid, gid_t gid, const char *path, int flags)
{
	int fd, e;

	if (!uid)
		return open(path, flags);
	setfsgid(gid);
	setfsuid(uid);
	fd = open(path, flags);
	e = errno;
	setfsuid(geteuid());
	setfsgid(getegid());
	errno = e;
	return fd;
}

static void status_text(const struct proc *p, char *buf, size_t len)
{
	char sig[16];

	if (!p->exited)
		snprintf(buf, len, "running");
	else if (WIFSIGNALED(p->ws))
		snprintf(buf, len, "killed by %s", eg_signal_name(WTERMSIG(p->ws), sig, sizeof(sig)));
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(p->ws));
}

static void status_json(struct jsonw *w, const struct proc *p)
{
	char s[64], sig[16];

	status_text(p, s, sizeof(s));
	jsonw_string_field(w, "status", s);
	jsonw_string_field(w, "state", !p->exited ? "running" : WIFSIGNALED(p->ws) ? "killed" : "exited");
	jsonw_key(w, "exit_code");
	if (p->exited && WIFEXITED(p->ws))
		jsonw_int(w, WEXITSTATUS(p->ws));
	else
		jsonw_null(w);
	jsonw_key(w, "signal");
	if (p->exited && WIFSIGNALED(p->ws))
		jsonw_string(w, eg_signal_name(WTERMSIG(p->ws), sig, sizeof(sig)));
	else
		jsonw_null(w);
	jsonw_bool_field(w, "timed_out", p->timed_out);
}

static void send_b(struct ctl_conn *c, struct sbuf *b)
{
	if (b->oom)
		ctl_reply_err(c, "out of memory");
	else
		ctl_send(c, b->data, b->len);
	sbuf_free(b);
}

/* ---- output and logs ------------------------------------------------------ */

static void log_append(struct proc *p, const char *buf, size_t n)
{
	int err;

	if (!p->log.path[0])
		return;
	err = plog_append(&p->log, buf, n);
	/* once per process: the count says the rest (log_failed) */
	if (err && p->log.failed == n)
		p_warn("run %s: writing its log %s: %s; its output is counted, not kept", p->id,
		       p->log.path, strerror(-err));
}

static void out_close(struct proc *p)
{
	loop_del(p->ow);
	p->ow = NULL;
	if (p->out_fd >= 0 && p->out_fd != p->in_fd)
		close(p->out_fd);
	p->out_fd = -1;
}

/* Reads what is there (at most rounds x 64 KiB); false at end of file. */
static bool out_drain(struct proc *p, int rounds)
{
	char buf[65536];

	while (rounds-- > 0 && p->out_fd >= 0) {
		ssize_t r = read(p->out_fd, buf, sizeof(buf));

		if (r > 0) {
			log_append(p, buf, r);
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		return false;	/* EOF, or EIO: a pty whose other side is closed */
	}
	return true;
}

static void on_out(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct proc *p = arg;

	(void)w;
	(void)fd;
	(void)events;
	if (!out_drain(p, 4))
		out_close(p);
}

/*
 * log_bytes: the output so far (offsets run up to it); log_dropped: what
 * the rotation dropped from the front (the first offset still kept);
 * log_failed: what the disk refused (not in the stream at all).
 */
static void log_counts_json(struct jsonw *w, const struct proc *p)
{
	jsonw_uint_field(w, "log_bytes", p->log.size);
	jsonw_uint_field(w, "log_dropped", plog_first(&p->log));
	jsonw_uint_field(w, "log_failed", p->log.failed);
}

/* The last lines of the log (at most 20 lines, 4 KiB), as a JSON array. */
static void last_lines_json(struct jsonw *w, struct proc *p)
{
	char buf[4096];
	int64_t off;
	ssize_t r;
	size_t i, start = 0;

	jsonw_key(w, "last_lines");
	jsonw_start_array(w);
	if (p->log.fd >= 0 && p->log.size > plog_first(&p->log)) {
		off = plog_tail_offset(&p->log, 20, sizeof(buf));
		if (off >= 0 && p->log.size - off > sizeof(buf))
			off = p->log.size - sizeof(buf);
		r = off < 0 ? -1 : plog_pread(&p->log, buf, p->log.size - off, off);
		for (i = 0; r > 0 && i <= (size_t)r; i++) {
			if (i == (size_t)r || buf[i] == '\n') {
				if (i > start || i < (size_t)r)
					jsonw_bytes(w, buf + start, i - start);
				start = i + 1;
			}
		}
	}
	jsonw_end_array(w);
}

/* ---- stateful shells ------------------------------------------------------ */

static void state_drop(struct shstate *s)
{
	strv_free(s->env, s->n);
	strv_free(s->dirs, s->nd);
	memset(s, 0, sizeof(*s));
}

/*
 * A new state takes a free slot unless uid has STATES_PER_UID already; else
 * uid's own least recently used state goes. Another user's never does.
 */
static struct shstate *state_get(struct eg_procs *ps, uid_t uid, const char *name, bool create)
{
	struct shstate *free_slot = NULL, *oldest = NULL;
	int i, mine = 0;

	for (i = 0; i < STATES_MAX; i++) {
		struct shstate *s = &ps->st[i];

		if (s->used && s->uid == uid && !strcmp(s->name, name))
			return s;
		if (!s->used && !free_slot)
			free_slot = s;
		if (s->used && s->uid == uid) {
			mine++;
			if (!s->busy && (!oldest || s->used_ms < oldest->used_ms))
				oldest = s;
		}
	}
	if (!create)
		return NULL;
	if (uid && mine >= STATES_PER_UID)
		free_slot = NULL;
	if (!free_slot && oldest) {
		/* the least recently used of the user's own states goes */
		state_drop(oldest);
		free_slot = oldest;
	}
	if (free_slot) {
		memset(free_slot, 0, sizeof(*free_slot));
		free_slot->used = true;
		free_slot->uid = uid;
		snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
	}
	return free_slot;
}

/*
 * Replaces st's environment and directories with what buf says; unchanged
 * on failure. A variable execve would refuse (E2BIG: longer than
 * MAX_ARG_STRLEN, or past ENV_BYTES_MAX in all) is dropped and named in
 * warn, so that the next command can start.
 */
static int state_load(struct shstate *st, const char *buf, size_t len, char *warn, size_t warnlen)
{
	char **env = NULL, **dirs = NULL, pwd[PATH_MAX] = "", old[PATH_MAX] = "";
	size_t n = 0, nd = 0, off = 0, total = 0, wl = 0;
	int fd;

	while (off < len) {
		const char *s = buf + off, *z = memchr(s, 0, len - off);
		size_t l;

		if (!z)
			break;		/* a cut record: dropped */
		l = z - s;
		off += l + 1;
		if (!strncmp(s, "__EG_PWD=", 9))
			snprintf(pwd, sizeof(pwd), "%s", s + 9);
		else if (!strncmp(s, "__EG_OLDPWD=", 12))
			snprintf(old, sizeof(old), "%s", s + 12);
		else if (!strncmp(s, "__EG_DIR=", 9)) {
			if (strv_add(&dirs, &nd, s + 9, l - 9))
				goto fail;
		} else if (memchr(s, '=', l) && !eg_env_blocked(s, true) && strncmp(s, "__EG_", 5) &&
			   strncmp(s, "_=", 2) && strncmp(s, "PWD=", 4) && strncmp(s, "OLDPWD=", 7)) {
			if (l > ENV_STR_MAX || total + l + 1 > ENV_BYTES_MAX) {
				if (wl < warnlen)
					wl += snprintf(warn + wl, warnlen - wl, "%s%.*s (%zu bytes)", wl ? ", " : "",
						       (int)strcspn(s, "=") > 64 ? 64 : (int)strcspn(s, "="), s, l);
				continue;
			}
			if (n < ENV_MAX && strv_add(&env, &n, s, l))
				goto fail;
			total += l + 1;
		}
	}
	strv_free(st->env, st->n);
	strv_free(st->dirs, st->nd);
	st->env = env;
	st->n = n;
	st->dirs = dirs;
	st->nd = nd;
	/* a directory its user may enter (the next run checks again, as the user) */
	if (pwd[0] == '/' && (fd = open_as(st->uid, st->gid, pwd, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		snprintf(st->cwd, sizeof(st->cwd), "%s", pwd);
		close(fd);
	}
	snprintf(st->oldpwd, sizeof(st->oldpwd), "%s", old);
	return 0;
fail:
	strv_free(env, n);
	strv_free(dirs, nd);
	return -ENOMEM;
}

/* Reads the state socket; only what the command's own shell (the pid we started) sent counts. */
static bool state_drain(struct proc *p)
{
	char buf[65536];
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(struct ucred))]; } cm;

	for (int k = 0; k < 16 && p->state_fd >= 0; k++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b) };
		struct cmsghdr *c;
		bool from_shell = false;
		ssize_t r = recvmsg(p->state_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return true;
		if (r <= 0)
			return false;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
				struct ucred uc;

				memcpy(&uc, CMSG_DATA(c), sizeof(uc));
				from_shell = uc.pid == p->pid;
			}
		if (!from_shell) {
			p->state_bad = true;	/* someone else wrote: the state is not taken */
			continue;
		}
		if (p->state.len + r > STATE_MAX)
			p->state_bad = true;
		else
			sbuf_put(&p->state, buf, r);
	}
	return true;
}

static void state_close(struct proc *p)
{
	loop_del(p->sw);
	p->sw = NULL;
	if (p->state_fd >= 0)
		close(p->state_fd);
	p->state_fd = -1;
}

static void on_state(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct proc *p = arg;

	(void)w;
	(void)fd;
	(void)events;
	if (!state_drain(p))
		state_close(p);
}

/* ---- lifecycle ------------------------------------------------------------ */

static void emit_exit(struct eg_procs *ps, struct proc *p)
{
	struct sbuf b = {};
	struct jsonw w;
	char text[512], st[64];

	status_text(p, st, sizeof(st));
	meta_open(&w, &b, "process");
	jsonw_string_field(&w, "event", "exit");
	jsonw_string_field(&w, "id", p->id);
	jsonw_int_field(&w, "pid", p->pid);
	jsonw_uint_field(&w, "uid", p->uid);
	jsonw_string_field(&w, "session", p->session);
	jsonw_string_field(&w, "command", p->cmd);
	jsonw_bool_field(&w, "background", p->background);
	status_json(&w, p);
	jsonw_uint_field(&w, "duration_ms", p->end_ms - p->start_ms);
	if (p->log.path[0]) {
		jsonw_string_field(&w, "log", p->log.path);
		log_counts_json(&w, p);
	}
	last_lines_json(&w, p);
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
	snprintf(text, sizeof(text), "process %s (pid %d, session %s) %s: %.200s", p->id, (int)p->pid,
		 p->session, st, p->cmd);
	if (!b.oom && ps->o.emit)
		ps->o.emit(ps->o.arg, b.data, b.len, text);
	sbuf_free(&b);
}

/* What a foreground caller (or a `wait`) reads last. */
static void send_exit_line(struct ctl_conn *c, const struct proc *p)
{
	struct sbuf b = {};
	struct jsonw jw;

	jsonw_init(&jw, &b);
	jsonw_start_object(&jw);
	jsonw_string_field(&jw, "event", "exit");
	jsonw_string_field(&jw, "id", p->id);
	status_json(&jw, p);
	if (p->state_warn[0])
		jsonw_string_field(&jw, "warning", p->state_warn);
	jsonw_end_object(&jw);
	if (!b.oom)
		ctl_send(c, b.data, b.len);
	sbuf_free(&b);
}

static void on_exit_(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct proc *p = arg;
	struct eg_procs *ps = p->owner;
	int ws;

	(void)w;
	(void)fd;
	(void)events;
	if (waitpid(p->pid, &ws, WNOHANG) != p->pid)
		return;
	p->exited = true;
	p->ws = ws;
	p->end_ms = eg_mono_ms();
	loop_del(p->pw);
	p->pw = NULL;
	close(p->pidfd);
	p->pidfd = -1;
	if (!proc_alive(p)) {
		/* else the timeout still applies to what it left behind */
		loop_del(p->timer);
		p->timer = NULL;
	}
	if (p->out_fd >= 0 && !out_drain(p, 64))
		out_close(p);
	if (p->st) {
		if (p->state_fd >= 0)
			state_drain(p);
		state_close(p);
		if (!p->state_bad && p->state.len &&
		    state_load(p->st, p->state.data, p->state.len, p->state_warn, sizeof(p->state_warn)))
			p_warn("run %s: out of memory; the shell state is not kept", p->id);
		p->st->last = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
		p->st->busy = false;
		p->st->used_ms = eg_mono_ms();
		p->st = NULL;
		sbuf_free(&p->state);
	}
	emit_exit(ps, p);
	if (p->fg)
		send_exit_line(p->fg, p);
}

static void on_timeout(struct eg_watch *w, uint64_t exp, void *arg)
{
	struct proc *p = arg;

	(void)w;
	(void)exp;
	loop_del(p->timer);
	p->timer = NULL;
	if (!proc_alive(p))
		return;
	if (!p->exited)
		p->timed_out = true;
	proc_signal(p, SIGKILL);	/* the whole cgroup and process group */
}

static void on_fg_close(struct ctl_conn *c, void *arg)
{
	struct proc *p = arg;

	if (p->fg != c)
		return;
	p->fg = NULL;
	if (!p->background && proc_alive(p)) {
		/* the client went away: so does what it ran, and what that left behind */
		proc_signal(p, SIGTERM);
	}
}

static void proc_release(struct proc *p)
{
	runcg_close_fds(&p->cg);
	runcg_remove(&p->cg);
	loop_del(p->timer);
	plog_close(&p->log, true);
	if (p->in_fd >= 0)
		close(p->in_fd);
	free(p->cmd);
	sbuf_free(&p->state);
	memset(p, 0, sizeof(*p));
}

/*
 * A registry entry for uid: a free one unless uid has PROCS_PER_UID
 * entries already; else uid's own oldest finished entry (and its log) goes.
 * Another user's entries never do. NULL: no room (-ENOSPC, or -EUSERS when
 * uid's own share is running).
 */
static struct proc *proc_slot(struct eg_procs *ps, uid_t uid, int *ret_err)
{
	struct proc *oldest = NULL, *free_slot = NULL;
	uint64_t now = eg_mono_ms();
	int i, mine = 0;

	for (i = 0; i < PROCS_MAX; i++) {
		struct proc *p = &ps->p[i];

		if (p->used && p->exited && !p->fg && p->ow == NULL && now - p->end_ms > REAP_MS && !proc_alive(p))
			proc_release(p);
	}
	for (i = 0; i < PROCS_MAX; i++) {
		struct proc *p = &ps->p[i];

		if (!p->used) {
			if (!free_slot)
				free_slot = p;
			continue;
		}
		if (p->uid != uid)
			continue;
		mine++;
		if (p->exited && !p->fg && !p->ow && (!oldest || p->end_ms < oldest->end_ms))
			oldest = p;
	}
	if (free_slot && (!uid || mine < PROCS_PER_UID))
		return free_slot;
	for (i = 0; !uid && !oldest && i < PROCS_MAX; i++) {
		/* root: anyone's oldest finished entry, as before the shares */
		struct proc *p = &ps->p[i];

		if (p->exited && !p->fg && !p->ow && (!oldest || p->end_ms < oldest->end_ms))
			oldest = p;
	}
	if (oldest)
		proc_release(oldest);
	*ret_err = uid && mine >= PROCS_PER_UID ? -EUSERS : -ENOSPC;
	return oldest;
}

static struct proc *proc_find(struct eg_procs *ps, struct ctl_conn *c, const json_t *req)
{
	const char *id;
	char err[256];
	int i;

	if (ctl_get_str(req, "id", true, 32, &id, err, sizeof(err))) {
		ctl_reply_err(c, "%s", err);
		return NULL;
	}
	for (i = 0; i < PROCS_MAX; i++)
		if (ps->p[i].used && !strcmp(ps->p[i].id, id)) {
			if (!may(c, &ps->p[i]))
				break;
			return &ps->p[i];
		}
	ctl_reply_err(c, "no process %s (of yours): see 'execgate ps'", id);
	return NULL;
}

/* ---- run ------------------------------------------------------------------ */

/* Resolves dir (absolute) and checks it is inside the workspace; an O_PATH fd or -errno with a message. */
static int resolve_cwd(struct eg_procs *ps, const struct ctl_peer *peer, const char *dir, bool explicit_,
		       char *err, size_t errlen)
{
	char lnk[64], real[PATH_MAX];
	struct stat sb;
	ssize_t n;
	size_t wl;
	int fd;

	fd = open_as(peer->uid, peer->gid, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
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
static uint64_t pids_max(int64_t soft, int64_t hard)
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
static int caller_nproc(const struct ctl_conn *c, int64_t *soft, int64_t *hard)
{
	struct pollfd pf = { .events = POLLIN };
	socklen_t len = sizeof(int);
	struct rlimit rl;
	int fd = -1, err;
	pid_t pid;

	if (ctl_peer(c)->api) {
		/* the HTTP API's runs: no process of the caller's here, the default */
		*soft = *hard = PROCS_NPROC_DEFAULT;
		return 0;
	}
	if (getsockopt(ctl_conn_fd(c), SOL_SOCKET, SO_PEERPIDFD, &fd, &len)) {
		if (errno != ENOPROTOOPT)
			return -errno;
		/* older kernels: by the number SO_PEERCRED gave */
		fd = syscall(SYS_pidfd_open, ctl_peer(c)->pid, 0);
		if (fd < 0)
			return -errno;
	}
	pid = pidfd_pid(fd);
	err = pid < 0 ? pid : nproc_of(pid, &rl);
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

struct spawn {
	char **argv;
	char **env;
	int cwd_fd;			/* the directory the daemon checked (--workspace) */
	const char *cwd;		/* entered by its path, as the user, */
	dev_t cwd_dev;			/* and it must be the directory the daemon checked */
	ino_t cwd_ino;
	int err_fd;			/* the write end of the failure report's pipe */
	int fd0, fd1, fd2;		/* the child's stdio */
	int ctty;			/* -1, or the pty's slave to make the controlling terminal */
	int state_fd;			/* -1, or the child's end of the state socket */
	uid_t uid;
	gid_t gid;
	int64_t nproc, nproc_max;	/* the caller's limits; -1 unlimited */
	const struct eg_run_cg *cg;	/* the run's cgroup, joined first */
};

/* What a child that failed before exec reports (no formatting after fork: the daemon has threads). */
enum spawn_stage { SPAWN_SETUP = 1, SPAWN_IDENTITY, SPAWN_CWD, SPAWN_CWD_CHANGED, SPAWN_EXEC, SPAWN_CGROUP };

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

static pid_t spawn(const struct spawn *s)
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
static int spawn_wait(const struct spawn *s, int rfd, pid_t pid, char *err, size_t errlen)
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

struct run_req {
	const char **argv;
	size_t argc;
	const char **env, **environ_;
	size_t nenv, nenviron;
	const char *session, *cwd, *command;
	bool background, pty, stateful, cwd_explicit;
	int64_t timeout_ms;
};

static int op_run(struct ctl_conn *c, const json_t *req, void *arg)
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
	e = caller_nproc(c, &sp.nproc, &sp.nproc_max);
	if (e) {
		ctl_reply_err(c, "run: cannot read your process limit (RLIMIT_NPROC): %s; nothing was started",
			      e == -ESRCH ? "your process has exited" : strerror(-e));
		goto out;
	}
	if (!json_object_get(req, "timeout_ms"))
		r.timeout_ms = r.background ? 0 : PROCS_TIMEOUT_MS;
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
		st = state_get(ps, peer->uid, name, true);
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
				    strv_add(&st->env, &st->n, r.environ_[i], strlen(r.environ_[i])))
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
				state_drop(st);
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
		}
	}
	/* the environment */
	if (st) {
		for (i = 0; i < st->n; i++)
			if (strv_add(&env, &nenv, st->env[i], strlen(st->env[i])))
				goto oom;
	} else {
		for (i = 0; i < r.nenviron; i++)
			if (strchr(r.environ_[i], '=') && !eg_env_blocked(r.environ_[i], false) &&
			    !env_denied(ps, r.environ_[i]) &&
			    strv_add(&env, &nenv, r.environ_[i], strlen(r.environ_[i])))
				goto oom;
	}
	for (i = 0; i < r.nenv; i++)
		if (strv_set(&env, &nenv, r.env[i]) || (st && strv_set(&st->env, &st->n, r.env[i])))
			goto oom;
	if (st) {
		sbuf_printf(&b, "PWD=%s", st->cwd);
		if (b.oom || strv_set(&env, &nenv, b.data))
			goto oom;
		sbuf_reset(&b);
		if (st->oldpwd[0]) {
			sbuf_printf(&b, "__EG_OLDPWD=%s", st->oldpwd);
			if (b.oom || strv_set(&env, &nenv, b.data))
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
			if (dirs.oom || strv_add(&env, &nenv, dirs.data, dirs.len))
				goto oom;
		}
	}
	if (!env && strv_add(&env, &nenv, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 64))
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
	}
	if (r.pty && !r.background)
		launch[k++] = "--pty";
	launch[k++] = "--";
	for (i = 0; i < (size_t)k; i++)
		if (strv_add(&argv, &nargv, launch[i], strlen(launch[i])))
			goto oom;
	if (st) {
		snprintf(status, sizeof(status), "%d", st->last & 0xff);
		const char *sh[] = { "/bin/bash", "--norc", "--noprofile", "-c", eg_state_wrapper, "execgate-shell",
				     r.command, status };
		for (i = 0; i < sizeof(sh) / sizeof(sh[0]); i++)
			if (strv_add(&argv, &nargv, sh[i], strlen(sh[i])))
				goto oom;
	} else {
		for (i = 0; i < r.argc; i++)
			if (strv_add(&argv, &nargv, r.argv[i], strlen(r.argv[i])))
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
	if (runcg_make(ps->cg, p->id, pids_max(sp.nproc, sp.nproc_max), &p->cg, err, sizeof(err))) {
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
	pid = spawn(&sp);
	if (pid < 0) {
		ctl_reply_err(c, "run: fork: %s", strerror(errno));
		goto fail_p;
	}
	close(err_pipe[1]);
	err_pipe[1] = -1;
	runcg_close_fds(&p->cg);
	if (spawn_wait(&sp, err_pipe[0], pid, err, sizeof(err))) {
		if (saved_cwd && !strncmp(err, "cannot enter", 12)) {
			/* the session's saved directory: forgotten, the next run starts afresh there */
			snprintf(st->cwd, sizeof(st->cwd), "%s", ps->ws_fd >= 0 ? ps->ws_path : "/");
			ctl_reply_err(c, "run: %s (the session's directory; its next command starts in %s)", err,
				      st->cwd);
		} else {
			ctl_reply_err(c, "run: %s", err);
			if (new_state)
				state_drop(st);
		}
		goto fail_p;
	}
	p->pid = pid;
	p->start_ms = eg_mono_ms();
	p->pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0 || loop_add_fd(ps->o.loop, p->pidfd, EPOLLIN, on_exit_, p, &p->pw)) {
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
		loop_add_fd(ps->o.loop, p->out_fd, EPOLLIN, on_out, p, &p->ow);
	}
	if (st) {
		p->st = st;
		st->busy = true;
		p->state_fd = sv[0];
		sv[0] = -1;
		loop_add_fd(ps->o.loop, p->state_fd, EPOLLIN, on_state, p, &p->sw);
	}
	if (r.timeout_ms > 0) {
		p->deadline_ms = p->start_ms + r.timeout_ms;
		loop_add_timer(ps->o.loop, r.timeout_ms, 0, on_timeout, p, &p->timer);
	}
	if (!r.background) {
		p->fg = c;
		ctl_hold(c, on_fg_close, p);
	}
	jsonw_init(&w, &b);
	sbuf_reset(&b);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "ok", true);
	jsonw_string_field(&w, "id", p->id);
	jsonw_int_field(&w, "pid", pid);
	jsonw_string_field(&w, "session", name);
	if (p->log.path[0])
		jsonw_string_field(&w, "log", p->log.path);
	jsonw_uint_field(&w, "timeout_ms", r.timeout_ms);
	jsonw_end_object(&w);
	send_b(c, &b);
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
	strv_free(argv, nargv);
	strv_free(env, nenv);
	free(r.argv);
	free(r.env);
	free(r.environ_);
	sbuf_free(&b);
	sbuf_free(&dirs);
	errno = e;
	return 0;
}

/* ---- the registry's ops ------------------------------------------------- */

static void proc_json(struct jsonw *w, const struct proc *p)
{
	uint64_t end = p->exited ? p->end_ms : eg_mono_ms();

	jsonw_start_object(w);
	jsonw_string_field(w, "id", p->id);
	jsonw_int_field(w, "pid", p->pid);
	jsonw_uint_field(w, "uid", p->uid);
	jsonw_string_field(w, "session", p->session);
	jsonw_string_field(w, "command", p->cmd);
	jsonw_bool_field(w, "background", p->background);
	jsonw_bool_field(w, "pty", p->pty);
	status_json(w, p);
	jsonw_uint_field(w, "runtime_ms", end - p->start_ms);
	log_counts_json(w, p);
	jsonw_end_object(w);
}

static int op_ps(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	struct sbuf b = {};
	struct jsonw w;
	int i;

	(void)req;
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "ok", true);
	jsonw_key(&w, "processes");
	jsonw_start_array(&w);
	for (i = 0; i < PROCS_MAX; i++)
		if (ps->p[i].used && may(c, &ps->p[i]))
			proc_json(&w, &ps->p[i]);
	jsonw_end_array(&w);
	jsonw_end_object(&w);
	send_b(c, &b);
	return 0;
}

/* "data_b64": up to max bytes of the log from off (base64: output is bytes, not text). */
static uint64_t put_chunk(struct jsonw *w, struct proc *p, uint64_t off, uint64_t max)
{
	static unsigned char raw[CHUNK_MAX], enc[CHUNK_MAX / 3 * 4 + 8];
	uint64_t n = 0;
	ssize_t r = 0;

	if (p->log.fd >= 0 && off < p->log.size) {
		n = p->log.size - off;
		if (n > max)
			n = max;
		if (n > CHUNK_MAX)
			n = CHUNK_MAX;
		r = plog_pread(&p->log, raw, n, off);
		if (r < 0)
			r = 0;
	}
	EVP_EncodeBlock(enc, raw, (int)r);
	jsonw_string_field(w, "data_b64", (const char *)enc);
	return r;
}

static int op_poll(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct proc *p = proc_find(arg, c, req);
	struct sbuf b = {};
	struct jsonw w;
	uint64_t got, skipped = 0;

	if (!p)
		return 0;
	if (p->out_fd >= 0 && !out_drain(p, 4))
		out_close(p);
	if (p->poll_off < plog_first(&p->log)) {
		/* more came since the last poll than the log keeps */
		skipped = plog_first(&p->log) - p->poll_off;
		p->poll_off = plog_first(&p->log);
	}
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "ok", true);
	jsonw_string_field(&w, "id", p->id);
	status_json(&w, p);
	jsonw_uint_field(&w, "offset", p->poll_off);
	jsonw_uint_field(&w, "skipped", skipped);
	got = put_chunk(&w, p, p->poll_off, CHUNK_MAX);
	p->poll_off += got;
	jsonw_uint_field(&w, "next_offset", p->poll_off);
	jsonw_bool_field(&w, "more", p->poll_off < p->log.size);
	log_counts_json(&w, p);
	jsonw_end_object(&w);
	send_b(c, &b);
	return 0;
}

static int op_log(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct proc *p = proc_find(arg, c, req);
	int64_t tail = -1, off = 0, max = CHUNK_MAX;
	struct sbuf b = {};
	struct jsonw w;
	char err[256];
	uint64_t got;

	if (!p)
		return 0;
	if (ctl_get_int(req, "tail", false, 0, 1000000, &tail, err, sizeof(err)) == -EINVAL ||
	    ctl_get_int(req, "offset", false, 0, INT64_MAX, &off, err, sizeof(err)) == -EINVAL ||
	    ctl_get_int(req, "max", false, 1, CHUNK_MAX, &max, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "log: %s", err);
		return 0;
	}
	if (!p->log.path[0]) {
		ctl_reply_err(c, "log: %s ran in the foreground: its output went to its caller", p->id);
		return 0;
	}
	if (p->out_fd >= 0 && !out_drain(p, 4))
		out_close(p);
	if (tail >= 0) {
		off = plog_tail_offset(&p->log, tail, 2 * (uint64_t)PROCS_LOG_MAX);
		if (off < 0) {
			ctl_reply_err(c, "log: reading %s: %s", p->log.path, strerror((int)-off));
			return 0;
		}
	}
	/* bytes the rotation dropped: the answer starts at the first one kept */
	if ((uint64_t)off < plog_first(&p->log))
		off = plog_first(&p->log);
	jsonw_init(&w, &b);
	jsonw_start_object(&w);
	jsonw_bool_field(&w, "ok", true);
	jsonw_string_field(&w, "id", p->id);
	jsonw_uint_field(&w, "size", p->log.size);
	jsonw_uint_field(&w, "first_offset", plog_first(&p->log));
	jsonw_uint_field(&w, "offset", off);
	got = put_chunk(&w, p, off, max);
	jsonw_uint_field(&w, "next_offset", off + got);
	jsonw_bool_field(&w, "running", !p->exited);
	jsonw_end_object(&w);
	send_b(c, &b);
	return 0;
}

static int write_in(struct ctl_conn *c, struct proc *p, const char *data, size_t n, const char *verb)
{
	size_t done = 0;

	if (p->in_fd < 0) {
		ctl_reply_err(c, "%s: %s has no input to write to (%s)", verb, p->id,
			      p->background ? "closed" : "it reads its caller's stdin");
		return 0;
	}
	while (done < n) {
		ssize_t r = write(p->in_fd, data + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ctl_reply_err(c, "%s: %s: %zu of %zu bytes written: %s", verb, p->id, done, n,
				      errno == EAGAIN ? "its input is full (it does not read)" : strerror(errno));
			return 0;
		}
		done += r;
	}
	return 1;
}

static int op_write(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	struct proc *p;
	const char *data = NULL;
	bool eof = false;
	char err[256];

	if (ps->o.in_session && ps->o.in_session(ps->o.arg, c)) {
		ctl_reply_err(c, "write: a process inside a supervised session cannot drive other processes");
		return 0;
	}
	if (!(p = proc_find(ps, c, req)))
		return 0;
	if (ctl_get_str(req, "data", false, 128 * 1024, &data, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "eof", &eof, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "write: %s", err);
		return 0;
	}
	if (data && *data && !write_in(c, p, data, strlen(data), "write"))
		return 0;
	if (eof && p->in_fd >= 0) {
		if (p->pty) {
			if (!write_in(c, p, "\004", 1, "write"))
				return 0;
		} else {
			close(p->in_fd);
			p->in_fd = -1;
		}
	}
	ctl_reply_ok(c, NULL);
	return 0;
}

static int op_send_keys(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	const char **keys = NULL;
	struct sbuf b = {};
	struct proc *p;
	size_t n = 0, i;
	char err[256];

	if (ps->o.in_session && ps->o.in_session(ps->o.arg, c)) {
		ctl_reply_err(c, "send-keys: a process inside a supervised session cannot drive other processes");
		return 0;
	}
	if (!(p = proc_find(ps, c, req)))
		return 0;
	if (ctl_get_strv(req, "keys", true, 1024, 4096, &keys, &n, err, sizeof(err))) {
		ctl_reply_err(c, "send-keys: %s", err);
		return 0;
	}
	for (i = 0; i < n; i++)
		eg_key_encode(keys[i], &b);
	free(keys);
	if (b.oom)
		ctl_reply_err(c, "send-keys: out of memory");
	else if (!b.len || write_in(c, p, b.data, b.len, "send-keys"))
		ctl_reply_ok(c, NULL);
	sbuf_free(&b);
	return 0;
}

static int op_kill(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct proc *p = proc_find(arg, c, req);
	const char *s = NULL;
	char err[256], name[16], extra[64];
	int sig = SIGTERM, e;

	if (!p)
		return 0;
	if (ctl_get_str(req, "signal", false, 16, &s, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "kill: %s", err);
		return 0;
	}
	if (s && (sig = eg_signal_parse(s)) < 0) {
		ctl_reply_err(c, "kill: unknown signal %s", s);
		return 0;
	}
	if (!proc_alive(p)) {
		ctl_reply_err(c, "kill: %s has exited already (and all it started too)", p->id);
		return 0;
	}
	/* an exited first process: what it left behind in its cgroup and group */
	e = proc_signal(p, sig);
	if (e) {
		ctl_reply_err(c, "kill: %s: %s", p->id, strerror(-e));
		return 0;
	}
	snprintf(extra, sizeof(extra), ",\"signal\":\"%s\"", eg_signal_name(sig, name, sizeof(name)));
	ctl_reply_ok(c, extra);
	return 0;
}

/*
 * A caller that lost its connection (the daemon restarted: SIGUSR2) takes
 * its place again: the exit line comes on this connection, and hanging up
 * is what hanging up on a foreground run is (its group gets SIGTERM).
 */
static int op_wait(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_procs *ps = arg;
	struct proc *p;
	char extra[64];

	if (ps->o.in_session && ps->o.in_session(ps->o.arg, c)) {
		ctl_reply_err(c, "wait: a process inside a supervised session cannot drive other processes");
		return 0;
	}
	if (!(p = proc_find(ps, c, req)))
		return 0;
	if (p->fg) {
		ctl_reply_err(c, "wait: %s has a caller waiting already", p->id);
		return 0;
	}
	snprintf(extra, sizeof(extra), ",\"id\":\"%s\"", p->id);
	ctl_reply_ok(c, extra);
	if (p->exited) {
		send_exit_line(c, p);
		return 0;
	}
	p->fg = c;
	ctl_hold(c, on_fg_close, p);
	return 0;
}

/* ---- handing over to the next daemon (SIGUSR2) ------------------------------ */

/* Bytes that need not be UTF-8 (commands, paths, environments): base64. */
static void b64_field(struct jsonw *w, const char *key, const void *data, size_t n)
{
	char *enc = b64_encode(data, n);

	if (!enc) {
		w->b->oom = true;
		return;
	}
	jsonw_string_field(w, key, enc);
	free(enc);
}

/* NUL-terminated in ret (the caller frees); -EINVAL when missing or not base64. */
static int b64_get(const json_t *o, const char *key, char **ret, size_t *ret_len)
{
	const char *s = json_string_value(json_object_get(o, key));
	size_t len;
	int err;

	if (!s)
		return -EINVAL;
	err = b64_decode(s, strlen(s), (unsigned char **)ret, &len);
	if (!err && ret_len)
		*ret_len = len;
	return err;
}

static void b64_strv(struct jsonw *w, const char *key, char **v, size_t n)
{
	size_t i;

	jsonw_key(w, key);
	jsonw_start_array(w);
	for (i = 0; i < n; i++) {
		jsonw_start_object(w);
		b64_field(w, "s", v[i], strlen(v[i]));
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
}

static int b64_strv_get(const json_t *o, const char *key, char ***v, size_t *n)
{
	json_t *e;
	size_t i;
	char *s;
	size_t len;
	int err;

	json_array_foreach(json_object_get(o, key), i, e) {
		err = b64_get(e, "s", &s, &len);
		if (err)
			return err;
		err = strv_add(v, n, s, len);
		free(s);
		if (err)
			return err;
	}
	return 0;
}

static int b64_str_get(const json_t *o, const char *key, char *buf, size_t len)
{
	char *s;
	int err = b64_get(o, key, &s, NULL);

	if (err)
		return err;
	snprintf(buf, len, "%s", s);
	free(s);
	return 0;
}

static void keep_fd(struct jsonw *w, const char *key, int fd, int *fds, int *nfds)
{
	jsonw_int_field(w, key, fd);
	if (fd >= 0)
		fds[(*nfds)++] = fd;
}

/*
 * Writes the registry and the shell states as one JSON object and collects
 * the fds the next daemon needs: each process's pidfd, its input and output
 * (pipes, or the pty's master), its log's two files and its state socket.
 * The processes are the daemon's children and stay so across the exec (the
 * same pid), so the next daemon reaps them. Nothing leaves the event loop:
 * the exec follows at once, and if it fails everything is as it was. A
 * foreground caller's connection does not survive the exec: the caller
 * asks again with `wait`.
 */
int procs_export(struct eg_procs *ps, struct jsonw *w, int *fds, int *nfds, int max)
{
	int i, j, left = 0;

	jsonw_start_object(w);
	jsonw_uint_field(w, "seq", ps->seq);
	jsonw_key(w, "states");
	jsonw_start_array(w);
	for (i = 0; i < STATES_MAX; i++) {
		struct shstate *st = &ps->st[i];

		jsonw_start_object(w);
		jsonw_bool_field(w, "used", st->used);
		if (st->used) {
			jsonw_bool_field(w, "busy", st->busy);
			jsonw_uint_field(w, "uid", st->uid);
			jsonw_uint_field(w, "gid", st->gid);
			jsonw_string_field(w, "name", st->name);
			b64_strv(w, "env", st->env, st->n);
			b64_field(w, "cwd", st->cwd, strlen(st->cwd));
			b64_field(w, "oldpwd", st->oldpwd, strlen(st->oldpwd));
			b64_strv(w, "dirs", st->dirs, st->nd);
			jsonw_int_field(w, "last", st->last);
			jsonw_uint_field(w, "used_ms", st->used_ms);
		}
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
	jsonw_key(w, "procs");
	jsonw_start_array(w);
	for (i = 0; i < PROCS_MAX; i++) {
		struct proc *p = &ps->p[i];

		if (!p->used)
			continue;
		if (*nfds + 6 > max) {
			left++;
			continue;
		}
		jsonw_start_object(w);
		jsonw_string_field(w, "id", p->id);
		jsonw_int_field(w, "pid", p->pid);
		keep_fd(w, "pidfd", p->pidfd, fds, nfds);
		jsonw_uint_field(w, "uid", p->uid);
		jsonw_string_field(w, "session", p->session);
		b64_field(w, "command", p->cmd, strlen(p->cmd));
		jsonw_bool_field(w, "background", p->background);
		jsonw_bool_field(w, "pty", p->pty);
		keep_fd(w, "in_fd", p->in_fd, fds, nfds);
		if (p->out_fd != p->in_fd)
			keep_fd(w, "out_fd", p->out_fd, fds, nfds);
		else
			jsonw_int_field(w, "out_fd", p->out_fd);
		if (p->log.path[0]) {
			jsonw_key(w, "log");
			jsonw_start_object(w);
			b64_field(w, "path", p->log.path, strlen(p->log.path));
			jsonw_uint_field(w, "bound", p->log.bound);
			keep_fd(w, "fd", p->log.fd, fds, nfds);
			keep_fd(w, "old_fd", p->log.old_fd, fds, nfds);
			jsonw_uint_field(w, "base", p->log.base);
			jsonw_uint_field(w, "old_base", p->log.old_base);
			jsonw_uint_field(w, "size", p->log.size);
			jsonw_uint_field(w, "failed", p->log.failed);
			jsonw_uint_field(w, "rotations", p->log.rotations);
			jsonw_end_object(w);
		}
		jsonw_uint_field(w, "poll_off", p->poll_off);
		jsonw_uint_field(w, "deadline_ms", p->deadline_ms);
		jsonw_bool_field(w, "timed_out", p->timed_out);
		jsonw_bool_field(w, "exited", p->exited);
		jsonw_int_field(w, "ws", p->ws);
		jsonw_string_field(w, "cgroup", p->cg.v2[0] ? p->cg.v2 : NULL);
		jsonw_uint_field(w, "cgroup_root", p->cg.v2_root);
		jsonw_string_field(w, "cgroup_v1_pids", p->cg.v1_pids[0] ? p->cg.v1_pids : NULL);
		jsonw_uint_field(w, "start_ms", p->start_ms);
		jsonw_uint_field(w, "end_ms", p->end_ms);
		for (j = 0; p->st && j < STATES_MAX && &ps->st[j] != p->st; j++)
			;
		jsonw_int_field(w, "state", p->st ? j : -1);
		keep_fd(w, "state_fd", p->state_fd, fds, nfds);
		jsonw_bool_field(w, "state_bad", p->state_bad);
		b64_field(w, "state_data", p->state.data ? p->state.data : "", p->state.len);
		jsonw_end_object(w);
	}
	jsonw_end_array(w);
	jsonw_end_object(w);
	if (left)
		p_warn("%d daemon-run processes are not handed over (no room for their fds); they run on unlisted", left);
	return 0;
}

static void cloexec(int fd)
{
	if (fd >= 0)
		fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static int fd_get(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

/* One process as the previous daemon left it; its watches back in the loop. */
static int import_proc(struct eg_procs *ps, struct proc *p, const json_t *e)
{
	const json_t *lg = json_object_get(e, "log");
	int64_t state;
	uint64_t now = eg_mono_ms();
	size_t len;
	char *data;
	int err;

	memset(p, 0, sizeof(*p));
	p->used = true;
	p->owner = ps;
	plog_init(&p->log);
	snprintf(p->id, sizeof(p->id), "%s", json_string_value(json_object_get(e, "id")) ?: "p-?");
	p->pid = json_integer_value(json_object_get(e, "pid"));
	p->pidfd = fd_get(e, "pidfd");
	p->cg.procs_fd = p->cg.v1_procs_fd = -1;
	snprintf(p->cg.v2, sizeof(p->cg.v2), "%s", json_string_value(json_object_get(e, "cgroup")) ?: "");
	p->cg.v2_root = json_integer_value(json_object_get(e, "cgroup_root"));
	if (p->cg.v2_root > strlen(p->cg.v2))
		p->cg.v2_root = 0;
	snprintf(p->cg.v1_pids, sizeof(p->cg.v1_pids), "%s",
		 json_string_value(json_object_get(e, "cgroup_v1_pids")) ?: "");
	p->uid = json_integer_value(json_object_get(e, "uid"));
	snprintf(p->session, sizeof(p->session), "%s", json_string_value(json_object_get(e, "session")) ?: "");
	p->background = json_is_true(json_object_get(e, "background"));
	p->pty = json_is_true(json_object_get(e, "pty"));
	p->in_fd = fd_get(e, "in_fd");
	p->out_fd = fd_get(e, "out_fd");
	p->state_fd = fd_get(e, "state_fd");
	if (lg) {
		p->log.fd = fd_get(lg, "fd");
		p->log.old_fd = fd_get(lg, "old_fd");
		p->log.bound = json_integer_value(json_object_get(lg, "bound"));
		p->log.base = json_integer_value(json_object_get(lg, "base"));
		p->log.old_base = json_integer_value(json_object_get(lg, "old_base"));
		p->log.size = json_integer_value(json_object_get(lg, "size"));
		p->log.failed = json_integer_value(json_object_get(lg, "failed"));
		p->log.rotations = json_integer_value(json_object_get(lg, "rotations"));
		if (b64_str_get(lg, "path", p->log.path, sizeof(p->log.path)) || !p->log.bound)
			p->log.path[0] = 0;
	}
	cloexec(p->pidfd);
	cloexec(p->in_fd);
	cloexec(p->out_fd);
	cloexec(p->state_fd);
	cloexec(p->log.fd);
	cloexec(p->log.old_fd);
	p->poll_off = json_integer_value(json_object_get(e, "poll_off"));
	p->deadline_ms = json_integer_value(json_object_get(e, "deadline_ms"));
	p->timed_out = json_is_true(json_object_get(e, "timed_out"));
	p->exited = json_is_true(json_object_get(e, "exited"));
	p->ws = json_integer_value(json_object_get(e, "ws"));
	p->start_ms = json_integer_value(json_object_get(e, "start_ms"));
	p->end_ms = json_integer_value(json_object_get(e, "end_ms"));
	p->state_bad = json_is_true(json_object_get(e, "state_bad"));
	if (b64_get(e, "command", &p->cmd, NULL))
		p->cmd = strdup("");
	if (!p->cmd)
		return -ENOMEM;
	if (!b64_get(e, "state_data", &data, &len)) {
		sbuf_put(&p->state, data, len);
		free(data);
	}
	state = json_integer_value(json_object_get(e, "state"));
	if (json_is_integer(json_object_get(e, "state")) && state >= 0 && state < STATES_MAX &&
	    ps->st[state].used)
		p->st = &ps->st[state];
	else if (p->state_fd >= 0)
		state_close(p);		/* a state that did not come over: nothing to carry */
	if (!p->exited && p->pidfd < 0)
		p->pidfd = syscall(SYS_pidfd_open, p->pid, 0);
	err = 0;
	if (p->pidfd >= 0 && loop_add_fd(ps->o.loop, p->pidfd, EPOLLIN, on_exit_, p, &p->pw))
		err = -errno;
	if (p->out_fd >= 0 && loop_add_fd(ps->o.loop, p->out_fd, EPOLLIN, on_out, p, &p->ow))
		err = -errno;
	if (p->state_fd >= 0 && loop_add_fd(ps->o.loop, p->state_fd, EPOLLIN, on_state, p, &p->sw))
		err = -errno;
	if (proc_alive(p) && p->deadline_ms &&
	    loop_add_timer(ps->o.loop, p->deadline_ms > now ? p->deadline_ms - now : 1, 0, on_timeout, p, &p->timer))
		err = -errno;
	return err;
}

static int procs_import(struct eg_procs *ps, const json_t *o)
{
	json_t *e;
	size_t i;
	int n = 0, err, rc = 0;

	ps->seq = json_integer_value(json_object_get(o, "seq"));
	json_array_foreach(json_object_get(o, "states"), i, e) {
		struct shstate *st;

		if (i >= STATES_MAX || !json_is_true(json_object_get(e, "used")))
			continue;
		st = &ps->st[i];
		st->used = true;
		st->busy = json_is_true(json_object_get(e, "busy"));
		st->uid = json_integer_value(json_object_get(e, "uid"));
		st->gid = json_integer_value(json_object_get(e, "gid"));
		snprintf(st->name, sizeof(st->name), "%s", json_string_value(json_object_get(e, "name")) ?: "");
		st->last = json_integer_value(json_object_get(e, "last"));
		st->used_ms = json_integer_value(json_object_get(e, "used_ms"));
		if (b64_strv_get(e, "env", &st->env, &st->n) || b64_strv_get(e, "dirs", &st->dirs, &st->nd) ||
		    b64_str_get(e, "cwd", st->cwd, sizeof(st->cwd)) ||
		    b64_str_get(e, "oldpwd", st->oldpwd, sizeof(st->oldpwd)))
			rc = -ENOMEM;
	}
	json_array_foreach(json_object_get(o, "procs"), i, e) {
		if (i >= PROCS_MAX)
			break;
		err = import_proc(ps, &ps->p[i], e);
		if (err && !rc)
			rc = err;
		n++;
	}
	/* a state whose command did not come over is free again */
	for (i = 0; i < STATES_MAX; i++) {
		bool held = false;
		int k;

		for (k = 0; k < PROCS_MAX && ps->st[i].busy; k++)
			held |= ps->p[k].used && ps->p[k].st == &ps->st[i];
		if (!held)
			ps->st[i].busy = false;
	}
	if (rc)
		p_warn("the handover of daemon-run processes was partial: %s", strerror(-rc));
	if (n)
		p_info("%d daemon-run processes handed over", n);
	return rc;
}

/* ---- setup ---------------------------------------------------------------- */

/* Whether name (PATH or PATH.1 in the logs' directory) is a registered process's log. */
static bool log_in_use(const struct eg_procs *ps, const char *name)
{
	int i;

	for (i = 0; i < PROCS_MAX; i++) {
		const char *base = strrchr(ps->p[i].log.path, '/');
		size_t l;

		if (!ps->p[i].used || !base)
			continue;
		l = strlen(++base);
		if (!strncmp(name, base, l) && (!name[l] || !strcmp(name + l, ".1")))
			return true;
	}
	return false;
}

static void clean_old_logs(const struct eg_procs *ps)
{
	DIR *d = opendir(ps->dir);
	struct dirent *e;
	struct stat sb;
	time_t now = time(NULL);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if ((l < 5 || strcmp(e->d_name + l - 4, ".log")) && (l < 7 || strcmp(e->d_name + l - 6, ".log.1")))
			continue;
		if (log_in_use(ps, e->d_name))
			continue;
		if (!fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
		    (!S_ISREG(sb.st_mode) || now - sb.st_mtime > LOG_MAX_AGE_S))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

int procs_new(const struct eg_procs_opts *o, struct eg_procs **ret)
{
	struct eg_procs *ps = calloc(1, sizeof(*ps));
	int err;

	if (!ps)
		return -ENOMEM;
	ps->o = *o;
	ps->ws_fd = -1;
	if (o->workspace) {
		ps->ws_fd = open(o->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (ps->ws_fd < 0 || !realpath(o->workspace, ps->ws_path)) {
			err = -errno;
			p_err("--workspace %s: %s", o->workspace, strerror(errno));
			procs_free(ps);
			return err;
		}
	}
	snprintf(ps->dir, sizeof(ps->dir), "%s/procs", o->state_dir);
	if ((mkdir(o->state_dir, 0755) && errno != EEXIST) || (mkdir(ps->dir, 0700) && errno != EEXIST))
		p_warn("--state-dir %s: %s; background runs will fail", ps->dir, strerror(errno));
	err = runcg_open(&ps->cg);
	if (err) {
		procs_free(ps);
		return err;
	}
	if (o->handover)
		procs_import(ps, o->handover);	/* partial is better than none: it warned */
	clean_old_logs(ps);
	err = ctl_register(o->ctl, "run", CTL_ANYONE, op_run, ps);
	if (!err)
		err = ctl_register(o->ctl, "ps", CTL_ANYONE, op_ps, ps);
	if (!err)
		err = ctl_register(o->ctl, "poll", CTL_ANYONE, op_poll, ps);
	if (!err)
		err = ctl_register(o->ctl, "log", CTL_ANYONE, op_log, ps);
	if (!err)
		err = ctl_register(o->ctl, "write", CTL_ANYONE, op_write, ps);
	if (!err)
		err = ctl_register(o->ctl, "send_keys", CTL_ANYONE, op_send_keys, ps);
	if (!err)
		err = ctl_register(o->ctl, "kill", CTL_ANYONE, op_kill, ps);
	if (!err)
		err = ctl_register(o->ctl, "wait", CTL_ANYONE, op_wait, ps);
	if (err) {
		procs_free(ps);
		return err;
	}
	*ret = ps;
	return 0;
}

void procs_status(const struct eg_procs *ps, struct jsonw *w)
{
	runcg_status(ps ? ps->cg : NULL, w);
}

void procs_free(struct eg_procs *ps)
{
	int i;

	if (!ps)
		return;
	for (i = 0; i < PROCS_MAX; i++) {
		struct proc *p = &ps->p[i];

		if (!p->used)
			continue;
		if (proc_alive(p))
			proc_signal(p, SIGTERM);
		/* its caller's connection must not call back into freed memory */
		ctl_close(p->fg);
		p->fg = NULL;
		loop_del(p->pw);
		loop_del(p->ow);
		loop_del(p->sw);
		loop_del(p->timer);
		if (p->pidfd >= 0)
			close(p->pidfd);
		if (p->out_fd >= 0 && p->out_fd != p->in_fd)
			close(p->out_fd);
		if (p->state_fd >= 0)
			close(p->state_fd);
		plog_close(&p->log, false);	/* logs outlive the daemon (cleaned by age) */
		p->log.path[0] = 0;
		proc_release(p);
	}
	for (i = 0; i < STATES_MAX; i++) {
		strv_free(ps->st[i].env, ps->st[i].n);
		strv_free(ps->st[i].dirs, ps->st[i].nd);
	}
	if (ps->ws_fd >= 0)
		close(ps->ws_fd);
	runcg_free(ps->cg);
	free(ps);
}

int procs_pty_fd(struct eg_procs *ps, const char *id, uid_t uid)
{
	int i, fd;

	for (i = 0; i < PROCS_MAX; i++) {
		struct proc *p = &ps->p[i];

		if (!p->used || strcmp(p->id, id) || (uid && p->uid != uid))
			continue;
		if (!p->pty || p->in_fd < 0)
			return -ENOTTY;
		fd = fcntl(p->in_fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : fd;
	}
	return -ESRCH;
}
