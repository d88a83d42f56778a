// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Daemon-run processes (procs.h): setup and teardown. Everything runs in
 * the daemon's event loop; nothing blocks: a process's exit is its pidfd
 * becoming readable, its output a pipe or pty master in the loop, its
 * timeout a timer. The rest of procs/ is laid out in procs/internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ctl/server.h"
#include "procs/internal.h"
#include "util/log.h"

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
	procs_clean_old_logs(ps);
	err = procs_ops_register(ps);
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
		eg_argv_free(ps->st[i].env, ps->st[i].n);
		eg_argv_free(ps->st[i].dirs, ps->st[i].nd);
	}
	if (ps->ws_fd >= 0)
		close(ps->ws_fd);
	runcg_free(ps->cg);
	free(ps);
}
