// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The registry of daemon-run processes (procs/internal.h): its entries and
 * their slots, who may drive one, what its status says, and the
 * environment vectors a run is given. The bottom of procs/.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ctl/proto.h"
#include "ctl/server.h"
#include "procs/internal.h"
#include "procs/text.h"
#include "util/clock.h"

#define REAP_MS		(3600u * 1000)	/* exited entries are kept this long */

/* Sets NAME=VALUE in v (replacing NAME). */
int procs_strv_set(char ***v, size_t *n, const char *kv)
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
	return eg_argv_add(v, n, kv, strlen(kv));
}

/*
 * Whether what the run started still runs: its first process, or its
 * cgroup (what it left behind when it exited: `cmd &`, also a process
 * that left the group with setsid), or else the process group it led (the
 * group's number is not given to another process while it has members).
 */
bool proc_alive(const struct proc *p)
{
	int pop;

	if (!p->exited)
		return true;
	pop = runcg_populated(&p->cg);
	return pop >= 0 ? pop > 0 : !kill(-p->pid, 0);
}

/*
 * sig to everything the run started: its cgroup, and its process group. 0
 * if anything got it. Once its leader is reaped, the cgroup alone where
 * there is one: a group whose members all left (setsid) frees its number,
 * and kill(-pid) from root would reach whatever group took it since.
 */
int proc_signal(struct proc *p, int sig)
{
	int pop = p->exited ? runcg_populated(&p->cg) : -ENOENT, a, b;

	if (pop >= 0) {
		if (!pop)
			return -ESRCH;
		a = runcg_signal(&p->cg, sig);
		/* it had members: they got it (cgroup.kill may have emptied it before the look after) */
		return a == -ESRCH ? 0 : a;
	}
	a = runcg_signal(&p->cg, sig);
	b = kill(-p->pid, sig) ? -errno : 0;

	if (b && !p->exited)
		b = kill(p->pid, sig) ? -errno : 0;
	return !a || !b ? 0 : b;
}

bool proc_may(const struct ctl_conn *c, const struct proc *p)
{
	const struct ctl_peer *peer = ctl_peer(c);

	return peer->uid == 0 || peer->uid == p->uid;
}

/*
 * A path looked up with uid's and gid's rights (setfsuid: this thread only),
 * so the daemon does not go where its caller may not: the child checks
 * again with the caller's supplementary groups (spawn.c).
 */
int procs_open_as(uid_t uid, gid_t gid, const char *path, int flags)
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

void proc_status_text(const struct proc *p, char *buf, size_t len)
{
	char sig[16];

	if (!p->exited)
		snprintf(buf, len, "running");
	else if (WIFSIGNALED(p->ws))
		snprintf(buf, len, "killed by %s", eg_signal_name(WTERMSIG(p->ws), sig, sizeof(sig)));
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(p->ws));
}

void proc_status_json(struct jsonw *w, const struct proc *p)
{
	char s[64], sig[16];

	proc_status_text(p, s, sizeof(s));
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

void proc_release(struct proc *p)
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
 * entries already; else uid's own oldest finished entry (and its log)
 * goes, one whose leader exited and whose processes are all gone (a
 * finished run that left a server behind keeps its timeout and its kill).
 * Another user's entries never do. NULL: no room (-ENOSPC, or -EUSERS when
 * uid's own share is running).
 */
struct proc *proc_slot(struct eg_procs *ps, uid_t uid, int *ret_err)
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
		/* finished, and nothing of it still runs: its timeout and kill go with the entry */
		if (p->exited && !p->fg && !p->ow && (!oldest || p->end_ms < oldest->end_ms) && !proc_alive(p))
			oldest = p;
	}
	if (free_slot && (!uid || mine < PROCS_PER_UID))
		return free_slot;
	for (i = 0; !uid && !oldest && i < PROCS_MAX; i++) {
		/* root: anyone's oldest finished entry, as before the shares */
		struct proc *p = &ps->p[i];

		if (p->used && p->exited && !p->fg && !p->ow && (!oldest || p->end_ms < oldest->end_ms) &&
		    !proc_alive(p))
			oldest = p;
	}
	if (oldest)
		proc_release(oldest);
	*ret_err = uid && mine >= PROCS_PER_UID ? -EUSERS : -ENOSPC;
	return oldest;
}

struct proc *proc_find(struct eg_procs *ps, struct ctl_conn *c, const json_t *req)
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
			if (!proc_may(c, &ps->p[i]))
				break;
			return &ps->p[i];
		}
	ctl_reply_err(c, "no process %s (of yours): see 'execgate ps'", id);
	return NULL;
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
