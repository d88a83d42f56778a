// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The session registry and its control-socket ops: session_open and
 * session_attach (the launcher's side of `execgate exec`), whoami (what the
 * kernel says about the caller: the shell shim's recursion guard), and the
 * verdicts waiting for the tracer's records.
 *
 * Trust: a launcher is a process the kernel marked at its exec of the
 * daemon's own binary with the "exec" verb (task storage, EG_TASK_LAUNCHER);
 * the session id is then written into its task storage by the daemon while
 * it waits, and inherited by everything it starts. The listener fd must be
 * a seccomp listener that the launcher itself holds (kcmp), and the first
 * exec it reports must be the launcher's own. A session policy arrives as
 * an fd the launcher opened with the user's rights.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <seccomp.h>
#include <linux/kcmp.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "events/meta.h"
#include "session/boundary.h"
#include "session/denials.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/digest.h"
#include "util/fileid.h"
#include "util/landlock.h"
#include "util/log.h"

static void emit_session(struct eg_sessions *s, struct eg_session *se, const char *event,
			 const char *why)
{
	struct sbuf b = {};
	struct jsonw w;
	char sid[16], text[256];

	snprintf(sid, sizeof(sid), "s-%x", se->id);
	meta_open(&w, &b, "session");
	jsonw_string_field(&w, "event", event);
	jsonw_string_field(&w, "session", sid);
	jsonw_string_field(&w, "name", se->name[0] ? se->name : NULL);
	jsonw_uint_field(&w, "uid", se->uid);
	jsonw_int_field(&w, "launcher_pid", se->launcher);
	jsonw_bool_field(&w, "restricted", se->restricted);
	jsonw_string_field(&w, "policy_sha256", se->policy ? se->policy_sha : NULL);
	if (se->parent) {
		char pid[16];

		snprintf(pid, sizeof(pid), "s-%x", se->parent->id);
		jsonw_string_field(&w, "parent", pid);
	} else {
		jsonw_key(&w, "parent");
		jsonw_null(&w);
	}
	if (se->boundary && !strcmp(event, "start")) {
		jsonw_key(&w, "boundary");
		jsonw_raw(&w, se->boundary, strlen(se->boundary));
	}
	if (!strcmp(event, "end")) {
		jsonw_uint_field(&w, "execs", se->execs);
		jsonw_uint_field(&w, "denied", se->denied);
		jsonw_uint_field(&w, "access_denied", se->access_denied);
		jsonw_string_field(&w, "reason", why);
	}
	jsonw_end_object(&w);
	sbuf_putc(&b, '\n');
	snprintf(text, sizeof(text), "session %s %s (uid %u%s%s)", sid, event, (unsigned)se->uid,
		 se->restricted ? ", restricted" : "", why ? "; " : "");
	if (why)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s", why);
	sessions_emit(s, &b, text);
	sbuf_free(&b);
}

void session_end(struct eg_sessions *s, struct eg_session *se, const char *why)
{
	struct eg_session **pp, *x;
	bool tree_gone = se->listener >= 0;

	if (se->ended)
		return;
	se->ended = true;
	/*
	 * A top-level session's listener is gone when no process of its tree
	 * is left: the sessions started inside it end with it (they have no
	 * listener of their own to say so).
	 */
	if (tree_gone) {
	again:
		for (x = s->list; x; x = x->next) {
			struct eg_session *up;

			for (up = x->parent; up && up != se; up = up->parent)
				;
			if (up && !x->ended) {
				session_end(s, x, why);
				goto again;	/* the list changed under us */
			}
		}
	}
	/* execs still trapped fail with ENOSYS once the listener is gone: closed, not open */
	receiver_stop(s, se);
	if (se->w)
		loop_del(se->w);
	se->w = NULL;
	if (se->listener >= 0)
		close(se->listener);
	se->listener = -1;
	approvals_session_ended(s, se);
	redirect_dir_remove(se);
	offload_session_ended(s, se);
	denials_drain(s->denials);
	emit_session(s, se, "end", why);
	for (pp = &s->list; *pp; pp = &(*pp)->next) {
		if (*pp == se) {
			*pp = se->next;
			s->nsessions--;
			break;
		}
	}
	if (s->st.sessions_active)
		s->st.sessions_active--;
	session_put(s, se);
}

static bool pid_alive(pid_t pid)
{
	return !kill(pid, 0) || errno == EPERM;
}

/*
 * A session started inside another has no listener of its own to tell
 * when its processes are gone. Once its command (the launcher, which
 * exec'd in place) has exited, every task's session as the kernel keeps
 * it is read (/proc, then the task storage through a pidfd), and a nested
 * session no task is in any more ends. Returns how many ended.
 */
static unsigned int end_gone_nested(struct eg_sessions *s)
{
	uint32_t cand[256];
	unsigned int n = 0, i, ended = 0;
	struct eg_session *se;
	struct dirent *pe, *te;
	DIR *proc, *tasks;
	char dir[300];

	for (se = s->list; se && n < 256; se = se->next)
		if (se->listener < 0 && se->parent && !se->ended && !pid_alive(se->launcher))
			cand[n++] = se->id;
	if (!n)
		return 0;
	proc = opendir("/proc");
	if (!proc)
		return 0;
	while (n && (pe = readdir(proc))) {
		if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
			continue;
		snprintf(dir, sizeof(dir), "/proc/%s/task", pe->d_name);
		tasks = opendir(dir);
		if (!tasks)
			continue;
		while (n && (te = readdir(tasks))) {
			struct eg_task t;

			if (te->d_name[0] < '1' || te->d_name[0] > '9' ||
			    task_lookup(s, (pid_t)atoi(te->d_name), true, &t) || !t.session)
				continue;
			for (i = 0; i < n; i++) {
				if (cand[i] == t.session) {
					cand[i] = cand[--n];	/* still has a process: stays */
					break;
				}
			}
		}
		closedir(tasks);
	}
	closedir(proc);
	for (i = 0; i < n; i++) {
		se = session_find(s, cand[i]);
		if (se && !se->ended) {
			session_end(s, se, "every process of the session exited");
			ended++;
		}
	}
	return ended;
}

static void on_sweep(struct eg_watch *w, uint64_t n, void *arg)
{
	struct eg_sessions *s = arg;
	uint64_t now = eg_mono_ns();
	unsigned int i;
	bool held = false;

	(void)w;
	(void)n;
	end_gone_nested(s);
	for (i = 0; i < s->nverdicts; i++) {
		struct verdict *v = &s->verdicts[i];

		if (v->tid && !v->used && now - v->at_ns > VERDICT_TTL_NS) {
			free(v->rule);
			free(v->message);
			memset(v, 0, sizeof(*v));
		}
		held = held || (v->tid && !v->used);
	}
	if (!held)
		verdicts_shrink(s);
	/* nothing left to sweep: no timer until the next session */
	if (!s->list && !held && !loop_timer_set(s->sweep, 0, 0))
		s->sweep_armed = false;
}

/* ---- control ops --------------------------------------------------------- */

static unsigned int count_uid(struct eg_sessions *s, uid_t uid)
{
	struct eg_session *se;
	unsigned int n = 0;

	for (se = s->list; se; se = se->next)
		n += se->uid == uid;
	return n;
}

static uint32_t new_id(struct eg_sessions *s)
{
	uint32_t id = 0;

	do {
		if (eg_random(&id, sizeof(id)))
			id = (uint32_t)eg_mono_ns();
	} while (!id || session_find(s, id));
	return id;
}

static void on_launcher_gone(struct ctl_conn *c, void *arg)
{
	struct eg_session *se = arg;

	(void)c;
	/* the launcher left before handing its listener over: no session */
	if (!se->attached && !se->ended)
		session_end(se->owner, se, "the launcher left before its listener arrived");
	session_put(se->owner, se);
}

/*
 * What the launcher drops from the command's environment besides its own
 * list: every policy's environment.deny over the session (the daemon's,
 * its own and its outer sessions').
 */
static void env_deny_json(struct jsonw *w, struct eg_sessions *s, struct eg_session *se)
{
	const struct eg_policy_boundary *b;
	struct eg_session *x;
	size_t i;

	jsonw_key(w, "environment_deny");
	jsonw_start_array(w);
	if (*s->o.global) {
		b = policy_boundary(*s->o.global);
		for (i = 0; i < b->n_env_deny; i++)
			jsonw_string(w, b->env_deny[i]);
	}
	for (x = se; x; x = x->parent) {
		if (!x->policy)
			continue;
		b = policy_boundary(x->policy);
		for (i = 0; i < b->n_env_deny; i++)
			jsonw_string(w, b->env_deny[i]);
	}
	jsonw_end_array(w);
}

static int op_session_open(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_sessions *s = arg;
	const struct ctl_peer *peer = ctl_peer(c);
	struct eg_session *se, *outer = NULL;
	struct eg_policy *pol = NULL;
	const char *name = NULL, *workspace = NULL;
	bool restricted = false, has_policy = false;
	struct sbuf plan = {};
	struct eg_task t;
	struct sbuf b = {};
	struct jsonw w;
	char err[512], sid[16];
	int rc;

	if (ctl_get_str(req, "name", false, 63, &name, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "restricted", &restricted, err, sizeof(err)) == -EINVAL ||
	    ctl_get_bool(req, "policy", &has_policy, err, sizeof(err)) == -EINVAL ||
	    ctl_get_str(req, "workspace", false, PATH_MAX - 1, &workspace, err, sizeof(err)) == -EINVAL) {
		ctl_reply_err(c, "%s", err);
		return 0;
	}
	if (!s->amender) {
		ctl_reply_err(c, "session_open: sessions are off: this kernel refused the program that marks a "
			      "launcher's session (the daemon's log at start says why)");
		return 0;
	}
	/* the kernel must know the peer as a launcher: its image is our binary's "exec" verb */
	rc = task_lookup(s, peer->pid, false, &t);
	if (rc || !(t.flags & EG_TASK_LAUNCHER)) {
		ctl_reply_err(c, "session_open: pid %d is not an execgate launcher (start sessions with "
			      "'execgate exec', the daemon's own binary)", (int)peer->pid);
		return 0;
	}
	if (t.session) {
		outer = session_find(s, t.session);
		if (!outer) {
			ctl_reply_err(c, "session_open: the caller is in session s-%x, which this daemon does not know",
				      t.session);
			return 0;
		}
	}
	/* sessions started inside others and since gone count until found gone: look now */
	if ((s->nsessions >= SESSIONS_MAX || count_uid(s, peer->uid) >= SESSIONS_PER_UID) &&
	    end_gone_nested(s) && t.session && !(outer = session_find(s, t.session))) {
		ctl_reply_err(c, "session_open: the caller's session s-%x ended", t.session);
		return 0;
	}
	if (s->nsessions >= SESSIONS_MAX || count_uid(s, peer->uid) >= SESSIONS_PER_UID) {
		ctl_reply_err(c, "session_open: too many sessions (at most %d, %d per user)", SESSIONS_MAX,
			      SESSIONS_PER_UID);
		return 0;
	}
	if (has_policy) {
		const int sealed = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
		struct eg_diags d = {};
		int fd = ctl_take_fd(c);
		char line[600];
		struct stat st = {};
		int seals;

		if (fd < 0) {
			ctl_reply_err(c, "session_open: \"policy\" is set but no file descriptor came with it");
			return 0;
		}
		/*
		 * Read here, in the thread that serves every session: only a
		 * sealed memfd (F_GET_SEALS fails on anything but shmem, and
		 * only memfd_create makes shmem that takes these seals), so no
		 * file system is read, nobody can make us wait (a pipe's
		 * writer, a FUSE server that never answers) and nobody changes
		 * the bytes. The launcher copies its file into one.
		 */
		seals = fcntl(fd, F_GET_SEALS);
		if (seals < 0 || (seals & sealed) != sealed) {
			close(fd);
			ctl_reply_err(c, "session_open: the session policy must come as a sealed memfd "
				      "(execgate exec copies the file into one)");
			return 0;
		}
		if (fstat(fd, &st) || st.st_size > SESSION_POLICY_MAX_BYTES) {
			close(fd);
			ctl_reply_err(c, "session_open: the session policy is %lld bytes; a session's policy is at "
				      "most %u (the daemon's own policy takes more)", (long long)st.st_size,
				      SESSION_POLICY_MAX_BYTES);
			return 0;
		}
		lseek(fd, 0, SEEK_SET);
		rc = policy_load_fd_flags(fd, "session policy", POLICY_LOAD_NO_FILES, &pol, &d);
		close(fd);
		if (rc) {
			line[0] = '\0';
			if (d.n)
				eg_diag_format(&d.v[0], line, sizeof(line));
			ctl_reply_err(c, "session_open: the session policy does not load: %s", line);
			eg_diags_free(&d);
			return 0;
		}
		eg_diags_free(&d);
	}
	/* the Landlock layers its processes will live in, or why the kernel cannot hold what is asked */
	{
		struct jsonw pw;

		jsonw_init(&pw, &plan);
		rc = boundary_plan(&pw, s->landlock_abi, *s->o.global, pol, workspace, err, sizeof(err));
		if (rc || plan.oom) {
			policy_free(pol);
			sbuf_free(&plan);
			if (!rc)
				return -ENOMEM;
			ctl_reply_err(c, "session_open: %s", err);
			return 0;
		}
	}
	se = calloc(1, sizeof(*se));
	if (!se) {
		policy_free(pol);
		sbuf_free(&plan);
		return -ENOMEM;
	}
	se->boundary = strndup(plan.data, plan.len);
	se->exec_lists = se->boundary ? boundary_exec_lists(se->boundary) : NULL;
	se->owner = s;
	se->id = new_id(s);
	snprintf(se->name, sizeof(se->name), "%s", name ? name : "");
	se->uid = peer->uid;
	se->gid = peer->gid;
	se->launcher = peer->pid;
	se->policy = pol;
	if (pol)
		snprintf(se->policy_sha, sizeof(se->policy_sha), "%s", policy_sha256(pol));
	se->parent = outer;
	if (outer)
		outer->refs++;
	/* restrictions are inherited and cannot be lifted */
	se->restricted = restricted || (outer && outer->restricted);
	se->listener = -1;
	se->started_ns = eg_mono_ns();
	se->refs = 1;
	rc = task_set_session(s, peer->pid, se->id, t.exec_ktime);
	if (rc) {
		session_put(s, se);
		if (rc == -ESTALE)
			ctl_reply_err(c, "session_open: pid %d exec'd since it asked: it is no longer a launcher",
				      (int)peer->pid);
		else
			ctl_reply_err(c, "session_open: cannot mark pid %d as a session member: %s",
				      (int)peer->pid, strerror(-rc));
		return 0;
	}
	/* inside a session the outer listener traps everything already: one filter chain, one listener */
	if (outer)
		se->attached = true;
	se->next = s->list;
	s->list = se;
	sweep_arm(s);
	s->nsessions++;
	s->st.sessions_started++;
	s->st.sessions_active++;
	se->refs++;
	ctl_hold(c, on_launcher_gone, se);
	emit_session(s, se, "start", NULL);
	redirect_dir_make(s, se);

	snprintf(sid, sizeof(sid), "s-%x", se->id);
	ctl_reply_open(&w, &b);
	jsonw_string_field(&w, "session", sid);
	jsonw_uint_field(&w, "id", se->id);
	jsonw_bool_field(&w, "install_listener", !outer);
	jsonw_bool_field(&w, "restricted", se->restricted);
	jsonw_int_field(&w, "daemon_pid", getpid());
	jsonw_key(&w, "boundary");
	jsonw_raw(&w, plan.data, plan.len);
	env_deny_json(&w, s, se);
	/* the launcher puts it first in the command's PATH */
	if (se->redirect_dir)
		jsonw_string_field(&w, "redirect_dir", se->redirect_dir);
	ctl_reply_send(c, &w, &b);
	sbuf_free(&plan);
	return 0;
}

/*
 * Watches a session's listener. The trapped task and the supervisor hand
 * the CPU to each other (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6):
 * the task sleeps while the supervisor works, so waking each other on the
 * same CPU spares an inter-processor wakeup per exec, which costs tens of
 * microseconds on a VM. Older kernels refuse the flag: the usual wakeups.
 */
/* The loop serves a listener whose receiver is away (idle, or not started yet). */
static void supervise_listener(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct eg_session *se = arg;
	struct eg_sessions *s = se->owner;
	struct seccomp_notif *req = NULL;

	(void)w;
	if (events & EPOLLIN) {
		/* its receiver takes them (an event from before it did, or since it is back) */
		if (!se->loop_receives)
			return;
		req = notif_new(s);
		if (!req)
			return;
		if (seccomp_notify_receive(fd, req)) {
			/* the target withdrew (a signal) between poll and receive */
			free(req);
			return;
		}
		supervisor_handle(s, se, req);
		/*
		 * Its receiver left, idle: this one was the loop's, the next is a
		 * new receiver's (started only now, so that it cannot take the
		 * notification the loop was about to receive).
		 */
		if (!se->rx && !se->ended && se->listener >= 0)
			receiver_start(s, se, se->listener);
		return;
	}
	if (events & (EPOLLHUP | EPOLLERR))
		session_end(s, se, "every process of the session exited");
}

int listener_watch(struct eg_sessions *s, struct eg_session *se, int fd)
{
	int rc;

	/* the flags go in the argument itself, not through a pointer */
	if (se->sync_wakeup) {
		/* watched again after a failed handover: the mode stays */
	} else if (!ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)) {
		se->sync_wakeup = true;
		s->st.sync_wakeups++;
	} else if (errno != EINVAL && errno != ENOTTY)
		p_dbg("session s-%x: synchronous wakeups refused: %s", se->id, strerror(errno));
	rc = loop_add_fd(s->o.loop, fd, EPOLLIN, supervise_listener, se, &se->w);
	if (rc)
		return rc;
	/* a process waits in every notification: served before the ring buffer's records */
	loop_set_urgent(se->w);
	se->loop_receives = true;
	/* a thread of its own takes them, where one can be had; else the loop does */
	rc = receiver_start(s, se, fd);
	if (rc)
		p_dbg("session s-%x: no receiver thread (%s): the event loop serves its listener", se->id,
		      strerror(-rc));
	return 0;
}

/* The fd is a seccomp listener: its link names it, and NOTIF_ID_VALID answers ENOENT. */
static bool is_listener(int fd)
{
	char target[64];
	uint64_t id = 0;

	if (eg_fd_link(fd, target, sizeof(target)) < 0 || strcmp(target, "anon_inode:seccomp notify"))
		return false;
	eg_random(&id, sizeof(id));
	return ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0 && errno == ENOENT;
}

static int op_session_attach(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_sessions *s = arg;
	const struct ctl_peer *peer = ctl_peer(c);
	struct eg_session *se;
	int64_t id = 0, fdnum = -1;
	char err[256];
	int fd, rc;

	if (ctl_get_int(req, "id", true, 1, UINT32_MAX, &id, err, sizeof(err)) ||
	    ctl_get_int(req, "fd", true, 0, INT32_MAX, &fdnum, err, sizeof(err))) {
		ctl_reply_err(c, "%s", err);
		return 0;
	}
	se = session_find(s, (uint32_t)id);
	if (!se || se->attached || se->launcher != peer->pid) {
		ctl_reply_err(c, "session_attach: no session s-%x waits for a listener from pid %d",
			      (uint32_t)id, (int)peer->pid);
		return 0;
	}
	fd = ctl_take_fd(c);
	if (fd < 0) {
		ctl_reply_err(c, "session_attach: no listener fd came with the request");
		return 0;
	}
	/* a seccomp listener, and the very one the launcher holds at that number */
	if (!is_listener(fd)) {
		close(fd);
		ctl_reply_err(c, "session_attach: the fd is not a seccomp user-notification listener");
		return 0;
	}
	rc = syscall(SYS_kcmp, getpid(), peer->pid, KCMP_FILE, fd, (int)fdnum);
	if (rc != 0 && !(rc < 0 && errno == ENOSYS)) {
		close(fd);
		ctl_reply_err(c, "session_attach: pid %d does not hold this listener at fd %d", (int)peer->pid,
			      (int)fdnum);
		return 0;
	}
	rc = listener_watch(s, se, fd);
	if (rc) {
		close(fd);
		return rc;
	}
	se->listener = fd;
	se->attached = true;
	ctl_reply_ok(c, NULL);
	return 0;
}

static int op_whoami(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_sessions *s = arg;
	const struct ctl_peer *peer = ctl_peer(c);
	struct eg_session *se = NULL;
	struct eg_task t = {};
	struct sbuf b = {};
	struct jsonw w;
	char sid[16];
	int rc;

	(void)req;
	rc = task_lookup(s, peer->pid, false, &t);
	if (!rc)
		se = session_find(s, t.session);
	ctl_reply_open(&w, &b);
	jsonw_int_field(&w, "pid", peer->pid);
	jsonw_uint_field(&w, "uid", peer->uid);
	jsonw_bool_field(&w, "in_session", !rc && t.session);
	jsonw_key(&w, "session");
	if (!rc && t.session) {
		snprintf(sid, sizeof(sid), "s-%x", t.session);
		jsonw_string(&w, sid);
	} else {
		jsonw_null(&w);
	}
	jsonw_key(&w, "depth");
	if (!rc && (t.flags & EG_TASK_DEPTH_KNOWN))
		jsonw_int(&w, t.depth);
	else
		jsonw_null(&w);
	jsonw_key(&w, "session_depth");
	if (!rc && t.session && (t.flags & EG_TASK_SESSION_DEPTH))
		jsonw_int(&w, t.session_depth);
	else
		jsonw_null(&w);
	jsonw_bool_field(&w, "restricted", se && se->restricted);
	jsonw_string_field(&w, "session_name", se && se->name[0] ? se->name : NULL);
	ctl_reply_send(c, &w, &b);
	return 0;
}

static int op_sessions(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct eg_sessions *s = arg;
	struct eg_session *se;
	struct sbuf b = {};
	struct jsonw w;
	uint64_t now = eg_mono_ns();
	char sid[16];

	(void)req;
	if (sessions_peer_inside(s, c)) {
		ctl_reply_err(c, "sessions: a process inside a supervised session cannot list the sessions");
		return 0;
	}
	ctl_reply_open(&w, &b);
	jsonw_key(&w, "sessions");
	jsonw_start_array(&w);
	for (se = s->list; se; se = se->next) {
		jsonw_start_object(&w);
		snprintf(sid, sizeof(sid), "s-%x", se->id);
		jsonw_string_field(&w, "session", sid);
		jsonw_string_field(&w, "name", se->name[0] ? se->name : NULL);
		jsonw_uint_field(&w, "uid", se->uid);
		jsonw_int_field(&w, "launcher_pid", se->launcher);
		jsonw_bool_field(&w, "restricted", se->restricted);
		jsonw_uint_field(&w, "age_ms", (now - se->started_ns) / 1000000);
		jsonw_uint_field(&w, "execs", se->execs);
		jsonw_uint_field(&w, "denied", se->denied);
		jsonw_uint_field(&w, "access_denied", se->access_denied);
		if (se->boundary) {
			jsonw_key(&w, "boundary");
			jsonw_raw(&w, se->boundary, strlen(se->boundary));
		}
		jsonw_end_object(&w);
	}
	jsonw_end_array(&w);
	ctl_reply_send(c, &w, &b);
	return 0;
}

/* ---- what the sessions' Landlock domains refused (denials.c) ------------- */

static uint32_t denials_launcher(void *arg, pid_t pid)
{
	struct eg_sessions *s = arg;
	struct eg_session *se;

	for (se = s->list; se && se->launcher != pid; se = se->next)
		;
	return se ? se->id : 0;
}

static uint64_t denials_counted(void *arg, uint32_t id)
{
	struct eg_sessions *s = arg;
	struct eg_session *se = session_find(s, id);

	s->st.access_denied++;
	return se ? ++se->access_denied : 0;
}

static void denials_emit(void *arg, const char *json, size_t len, const char *text)
{
	struct eg_sessions *s = arg;

	if (s->o.out.emit)
		s->o.out.emit(s->o.out.arg, json, len, text);
}

static int denials_start(struct eg_sessions *s)
{
	struct eg_denials_opts o = { .loop = s->o.loop, .landlock_abi = s->landlock_abi,
				     .session_of_launcher = denials_launcher, .counted = denials_counted,
				     .emit = denials_emit, .arg = s };

	return denials_new(&o, &s->denials);
}

int sessions_new(const struct eg_sessions_opts *o, struct eg_sessions **ret)
{
	struct eg_sessions *s = calloc(1, sizeof(*s));
	bool teller_given = false;
	int err = -ENOMEM;

	if (!s)
		goto fail;
	s->o = *o;
	s->roots.fd = -1;
	s->landlock_abi = eg_landlock_abi();
	exec_plan_init();
	s->ticket = calloc(1, sizeof(*s->ticket));
	if (!s->ticket || verdicts_init(s))
		goto fail;
	/* tell_init() (in supervisor_init) owns the teller's socket from here, failing or not */
	teller_given = true;
	err = supervisor_init(s);
	if (!err)
		err = receivers_init(s);
	if (!err)
		err = loop_add_timer(o->loop, 0, 0, on_sweep, s, &s->sweep);
	if (!err)
		err = approvals_init(s);
	if (!err)
		err = denials_start(s);
	if (!err)
		err = ctl_register(o->ctl, "session_open", CTL_ANYONE, op_session_open, s);
	if (!err)
		err = ctl_register(o->ctl, "session_attach", CTL_ANYONE, op_session_attach, s);
	if (!err)
		err = ctl_register(o->ctl, "whoami", CTL_ANYONE, op_whoami, s);
	if (!err)
		err = ctl_register(o->ctl, "sessions", CTL_ADMIN, op_sessions, s);
	if (err)
		goto fail;
	*ret = s;
	return 0;
fail:
	if (!teller_given && o->teller_fd >= 0)
		close(o->teller_fd);
	sessions_free(s);
	return err;
}

void sessions_end_all(struct eg_sessions *s)
{
	if (!s)
		return;
	/* every listener closed: what a session still runs fails its execs (ENOSYS) */
	while (s->list)
		session_end(s, s->list, "the daemon stopped");
	receivers_wait(s, 1000);
}

bool sessions_free(struct eg_sessions *s)
{
	if (!s)
		return true;
	sessions_end_all(s);
	if (s->receivers) {
		/* it holds s: left for the process's exit to take, like a worker stuck in a lookup */
		p_warn("sessions: %s", "a receiver is still inside a file system lookup at exit");
		return false;
	}
	receivers_fini(s);
	approvals_free(s);
	denials_free(s->denials);
	s->denials = NULL;
	loop_del(s->sweep);
	supervisor_fini(s);
	verdicts_free(s);
	free(s->ticket);
	sbuf_free(&s->ann_rule);
	sbuf_free(&s->ann_msg);
	sbuf_free(&s->ann_id);
	free(s);
	return true;
}

/* The value below which a fraction q of the recorded latencies lie (a bucket's low end). */
static uint64_t latency_quantile(const struct eg_sessions *s, uint64_t n, double q)
{
	uint64_t want = (uint64_t)(q * n), seen = 0;
	unsigned int b;

	for (b = 0; b < LATENCY_BUCKETS; b++) {
		seen += s->latency[b];
		if (seen > want)
			return latency_bucket_low(b);
	}
	return 0;
}

void sessions_stats(const struct eg_sessions *s, struct eg_sessions_stats *ret)
{
	unsigned int b;
	uint64_t n = 0;

	*ret = s->st;
	ret->pending = s->napprovals;
	ret->lookups_waiting = offload_waiting(s);
	ret->receivers = s->receivers;
	for (b = 0; b < LATENCY_BUCKETS; b++) {
		n += s->latency[b];
		if (s->latency[b])
			ret->latency_max_us = latency_bucket_low(b);
	}
	ret->latency_count = n;
	if (n) {
		ret->latency_p50_us = latency_quantile(s, n, 0.50);
		ret->latency_p99_us = latency_quantile(s, n, 0.99);
	}
}

void sessions_boundary_status(const struct eg_sessions *s, struct jsonw *w)
{
	char err[512];
	struct sbuf plan = {};
	struct jsonw pw;

	jsonw_start_object(w);
	jsonw_int_field(w, "landlock_abi", s->landlock_abi);
	/* what a session with no policy of its own gets, started now */
	jsonw_init(&pw, &plan);
	if (boundary_plan(&pw, s->landlock_abi, *s->o.global, NULL, NULL, err, sizeof(err))) {
		jsonw_key(w, "session");
		jsonw_null(w);
		jsonw_string_field(w, "refused", err);
	} else if (!plan.oom) {
		jsonw_key(w, "session");
		jsonw_raw(w, plan.data, plan.len);
	}
	sbuf_free(&plan);
	jsonw_key(w, "denials");
	denials_status(s->denials, w);
	jsonw_end_object(w);
}
