// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Handing the registry and the shell states to the next daemon (SIGUSR2,
 * procs.h): written as one JSON object with the fds it names, read back
 * and its watches put in the new loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "procs/internal.h"
#include "util/b64.h"
#include "util/clock.h"
#include "util/log.h"

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
		err = procs_strv_add(v, n, s, len);
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
		proc_state_close(p);		/* a state that did not come over: nothing to carry */
	if (!p->exited && p->pidfd < 0)
		p->pidfd = syscall(SYS_pidfd_open, p->pid, 0);
	err = 0;
	if (p->pidfd >= 0 && loop_add_fd(ps->o.loop, p->pidfd, EPOLLIN, proc_on_exit, p, &p->pw))
		err = -errno;
	if (p->out_fd >= 0 && loop_add_fd(ps->o.loop, p->out_fd, EPOLLIN, proc_on_out, p, &p->ow))
		err = -errno;
	if (p->state_fd >= 0 && loop_add_fd(ps->o.loop, p->state_fd, EPOLLIN, proc_on_state, p, &p->sw))
		err = -errno;
	if (proc_alive(p) && p->deadline_ms &&
	    loop_add_timer(ps->o.loop, p->deadline_ms > now ? p->deadline_ms - now : 1, 0, proc_on_timeout, p, &p->timer))
		err = -errno;
	return err;
}

int procs_import(struct eg_procs *ps, const json_t *o)
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
