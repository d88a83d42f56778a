// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The shell states of stateful runs (procs/internal.h, wrapper.h): one per
 * (uid, session name), each user's share bounded; what the command's own
 * shell sends on the state socket, read and checked, becomes its state
 * when it exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "procs/internal.h"
#include "procs/text.h"
#include "procs/wrapper.h"
#include "util/clock.h"
#include "util/log.h"

#define STATE_MAX	(4u << 20)

void shstate_drop(struct shstate *s)
{
	eg_argv_free(s->env, s->n);
	eg_argv_free(s->dirs, s->nd);
	memset(s, 0, sizeof(*s));
}

/*
 * A new state takes a free slot unless uid has STATES_PER_UID already; else
 * uid's own least recently used state goes. Another user's never does.
 */
struct shstate *shstate_get(struct eg_procs *ps, uid_t uid, const char *name, bool create)
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
		shstate_drop(oldest);
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

/* What the parser left out (procs/wrapper.h), named in the run's warning. */
struct warn_buf {
	char *warn;
	size_t len, used;
};

static void state_dropped(void *arg, const char *kv, size_t len, const char *why)
{
	struct warn_buf *w = arg;
	int name = (int)strcspn(kv, "=");

	(void)why;
	if (w->used < w->len)
		w->used += snprintf(w->warn + w->used, w->len - w->used, "%s%.*s (%zu bytes)", w->used ? ", " : "",
				    name > 64 ? 64 : name, kv, len);
}

/*
 * Replaces st's environment and directories with what buf says; unchanged
 * on failure. A variable the next exec could not take is dropped and named
 * in warn, so that the next command can start.
 */
static int state_load(struct shstate *st, const char *buf, size_t len, char *warn, size_t warnlen)
{
	struct warn_buf w = { warn, warnlen, 0 };
	struct eg_state_out out;
	int fd;

	if (eg_state_parse(buf, len, &out, state_dropped, &w))
		return -ENOMEM;
	eg_argv_free(st->env, st->n);
	eg_argv_free(st->dirs, st->nd);
	st->env = out.env;
	st->n = out.n;
	st->dirs = out.dirs;
	st->nd = out.nd;
	/* a directory its user may enter (the next run checks again, as the user) */
	if (out.pwd[0] == '/' &&
	    (fd = procs_open_as(st->uid, st->gid, out.pwd, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		snprintf(st->cwd, sizeof(st->cwd), "%s", out.pwd);
		close(fd);
	}
	snprintf(st->oldpwd, sizeof(st->oldpwd), "%s", out.oldpwd);
	return 0;
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

void proc_state_close(struct proc *p)
{
	loop_del(p->sw);
	p->sw = NULL;
	if (p->state_fd >= 0)
		close(p->state_fd);
	p->state_fd = -1;
}

void proc_on_state(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct proc *p = arg;

	(void)w;
	(void)fd;
	(void)events;
	if (!state_drain(p))
		proc_state_close(p);
}

/* The command's shell has exited with wait status ws: what it sent becomes its state's. */
void proc_state_end(struct proc *p, int ws)
{
	if (p->state_fd >= 0)
		state_drain(p);
	proc_state_close(p);
	if (!p->state_bad && p->state.len &&
	    state_load(p->st, p->state.data, p->state.len, p->state_warn, sizeof(p->state_warn)))
		p_warn("run %s: out of memory; the shell state is not kept", p->id);
	p->st->last = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	p->st->busy = false;
	p->st->used_ms = eg_mono_ms();
	p->st = NULL;
	sbuf_free(&p->state);
}
