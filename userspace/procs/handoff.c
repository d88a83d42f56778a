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
#include "util/hfields.h"
#include "util/log.h"

/* The plain fields of a shell state, of a process and of its log: one table each, both ways. */
static const struct eg_hfield state_fields[] = {
	EG_HF(struct shstate, busy, EG_HF_BOOL, "busy"),
	EG_HF(struct shstate, uid, EG_HF_UINT, "uid"),
	EG_HF(struct shstate, gid, EG_HF_UINT, "gid"),
	EG_HF(struct shstate, name, EG_HF_STR, "name"),
	EG_HF(struct shstate, cwd, EG_HF_B64, "cwd"),
	EG_HF(struct shstate, oldpwd, EG_HF_B64, "oldpwd"),
	EG_HF(struct shstate, ws, EG_HF_B64, "workspace"),
	EG_HF(struct shstate, last, EG_HF_INT, "last"),
	EG_HF(struct shstate, used_ms, EG_HF_UINT, "used_ms"),
};

static const struct eg_hfield proc_fields[] = {
	EG_HF(struct proc, id, EG_HF_STR, "id"),
	EG_HF(struct proc, pid, EG_HF_INT, "pid"),
	EG_HF(struct proc, pidfd, EG_HF_FD, "pidfd"),
	EG_HF(struct proc, uid, EG_HF_UINT, "uid"),
	EG_HF(struct proc, session, EG_HF_STR, "session"),
	EG_HF(struct proc, background, EG_HF_BOOL, "background"),
	EG_HF(struct proc, pty, EG_HF_BOOL, "pty"),
	EG_HF(struct proc, in_fd, EG_HF_FD, "in_fd"),
	EG_HF(struct proc, poll_off, EG_HF_UINT, "poll_off"),
	EG_HF(struct proc, deadline_ms, EG_HF_UINT, "deadline_ms"),
	EG_HF(struct proc, timed_out, EG_HF_BOOL, "timed_out"),
	EG_HF(struct proc, exited, EG_HF_BOOL, "exited"),
	EG_HF(struct proc, ws, EG_HF_INT, "ws"),
	EG_HF(struct proc, cg.v2, EG_HF_STR_NULL, "cgroup"),
	EG_HF(struct proc, cg.v2_root, EG_HF_UINT, "cgroup_root"),
	EG_HF(struct proc, cg.v1_pids, EG_HF_STR_NULL, "cgroup_v1_pids"),
	EG_HF(struct proc, start_ms, EG_HF_UINT, "start_ms"),
	EG_HF(struct proc, end_ms, EG_HF_UINT, "end_ms"),
	EG_HF(struct proc, state_fd, EG_HF_FD, "state_fd"),
	EG_HF(struct proc, state_bad, EG_HF_BOOL, "state_bad"),
};

/* its own only when it is not in_fd (a pty's master is both) */
static const struct eg_hfield out_fd_field[] = {
	EG_HF(struct proc, out_fd, EG_HF_FD, "out_fd"),
};

static const struct eg_hfield log_fields[] = {
	EG_HF(struct eg_plog, path, EG_HF_B64, "path"),
	EG_HF(struct eg_plog, bound, EG_HF_UINT, "bound"),
	EG_HF(struct eg_plog, fd, EG_HF_FD, "fd"),
	EG_HF(struct eg_plog, old_fd, EG_HF_FD, "old_fd"),
	EG_HF(struct eg_plog, base, EG_HF_UINT, "base"),
	EG_HF(struct eg_plog, old_base, EG_HF_UINT, "old_base"),
	EG_HF(struct eg_plog, size, EG_HF_UINT, "size"),
	EG_HF(struct eg_plog, failed, EG_HF_UINT, "failed"),
	EG_HF(struct eg_plog, rotations, EG_HF_UINT, "rotations"),
};

#define N(t) (sizeof(t) / sizeof((t)[0]))

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
		err = eg_argv_add(v, n, s, len);
		free(s);
		if (err)
			return err;
	}
	return 0;
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
	struct eg_hf_fds keep = { .fds = fds, .n = nfds, .max = max };
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
			eg_hf_write(w, st, state_fields, N(state_fields), NULL);
			b64_strv(w, "env", st->env, st->n);
			b64_strv(w, "dirs", st->dirs, st->nd);
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
		eg_hf_write(w, p, proc_fields, N(proc_fields), &keep);
		b64_field(w, "command", p->cmd, strlen(p->cmd));
		/* a pty's master is both ends: one fd */
		if (p->out_fd != p->in_fd)
			eg_hf_write(w, p, out_fd_field, 1, &keep);
		else
			jsonw_int_field(w, "out_fd", p->out_fd);
		if (p->log.path[0]) {
			jsonw_key(w, "log");
			jsonw_start_object(w);
			eg_hf_write(w, &p->log, log_fields, N(log_fields), &keep);
			jsonw_end_object(w);
		}
		for (j = 0; p->st && j < STATES_MAX && &ps->st[j] != p->st; j++)
			;
		jsonw_int_field(w, "state", p->st ? j : -1);
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
	eg_hf_read(e, p, proc_fields, N(proc_fields));
	if (!p->id[0])
		snprintf(p->id, sizeof(p->id), "p-?");
	p->out_fd = fd_get(e, "out_fd");
	p->cg.procs_fd = p->cg.v1_procs_fd = -1;
	if (p->cg.v2_root > strlen(p->cg.v2))
		p->cg.v2_root = 0;
	if (lg && (eg_hf_read(lg, &p->log, log_fields, N(log_fields)) || !p->log.bound))
		p->log.path[0] = 0;
	cloexec(p->pidfd);
	cloexec(p->in_fd);
	cloexec(p->out_fd);
	cloexec(p->state_fd);
	cloexec(p->log.fd);
	cloexec(p->log.old_fd);
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
		if (eg_hf_read(e, st, state_fields, N(state_fields)) ||
		    b64_strv_get(e, "env", &st->env, &st->n) || b64_strv_get(e, "dirs", &st->dirs, &st->nd))
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
