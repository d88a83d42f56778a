// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the session layer stands on: the kernel's task storage of a task
 * (its session, depth, flags), the sessions by id and their references,
 * the records they emit, and the verdicts that wait for the tracer's
 * record of each exec a supervisor judged. Everything else in session/
 * calls down into this file; it calls nothing of theirs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "ctl/server.h"
#include "session/internal.h"
#include "trace/amend.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strv.h"

/* ---- task storage -------------------------------------------------------- */

static int pidfd_of(pid_t pid, bool thread)
{
	int fd = -1;

	if (thread)
		fd = syscall(__NR_pidfd_open, pid, PIDFD_THREAD);
	if (fd < 0)
		fd = syscall(__NR_pidfd_open, pid, 0);
	return fd < 0 ? -errno : fd;
}

int task_lookup(const struct eg_sessions *s, pid_t pid, bool thread, struct eg_task *ret)
{
	int fd = pidfd_of(pid, thread), rc = 0;

	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(s->o.tasks_fd, &fd, ret))
		rc = -errno;
	close(fd);
	return rc;
}

/*
 * The session id alone, written in the kernel (bpf/amend.bpf.c): only if
 * the process is still the launcher image looked at (exec_ktime). A map
 * update from here would put back the whole value as it was looked up,
 * and a launcher is the caller's code (LD_PRELOAD reaches it): an exec
 * made meanwhile would lose the flags it set, such as a loader's first
 * mapping still to judge.
 */
int task_set_session(struct eg_sessions *s, pid_t pid, uint32_t id, uint64_t exec_ktime)
{
	struct eg_amend a = { .op = EG_AMEND_SESSION, .exec_ktime = exec_ktime, .task.session = id };
	int fd, rc;

	if (!s->amender)
		return -EOPNOTSUPP;
	fd = pidfd_of(pid, false);
	if (fd < 0)
		return fd;
	rc = task_amender_apply(s->amender, fd, pid, &a);
	close(fd);
	if (rc)
		return rc;
	if (a.result == EG_AMEND_DONE)
		return 0;
	return a.result == EG_AMEND_CHANGED ? -ESTALE : a.result ? -ENOENT : -ESRCH;
}

/*
 * Through the socket's own pidfd of the process that connected (Linux
 * 6.5): a pid the kernel gave to another process since cannot stand in for
 * it. No storage is no session only if the process is alive after the
 * lookup said so (a reaped task has no storage either).
 */
int sessions_of_peer(const struct eg_sessions *s, const struct ctl_conn *c, uint32_t *ret_session)
{
	struct eg_task t;
	int fd, rc = 0;

	(void)s;
	if (ctl_peer(c)->api) {
		/* the HTTP API placed the process at the other end of its TCP connection */
		if (!ctl_peer(c)->api_placed)
			return -ESRCH;
		*ret_session = ctl_peer(c)->api_session;
		return 0;
	}
	fd = ctl_conn_pidfd(c);
	if (fd < 0)
		return fd;
	if (bpf_map_lookup_elem(s->o.tasks_fd, &fd, &t)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		rc = -errno;
		if (rc == -ENOENT && poll(&p, 1, 0) == 0) {
			t.session = 0;
			rc = 0;
		} else if (rc == -ENOENT) {
			rc = -ESRCH;
		}
	}
	close(fd);
	if (!rc)
		*ret_session = t.session;
	return rc;
}

/* ---- registry ------------------------------------------------------------ */

bool sessions_peer_inside(const struct eg_sessions *s, const struct ctl_conn *c)
{
	uint32_t in = 0;

	return sessions_of_peer(s, c, &in) || in;
}

uint32_t sessions_outermost(struct eg_sessions *s, uint32_t id)
{
	struct eg_session *se = session_find(s, id);

	while (se && se->parent)
		se = se->parent;
	return se ? se->id : id;
}

struct eg_session *session_find(struct eg_sessions *s, uint32_t id)
{
	struct eg_session *se;

	if (!id)
		return NULL;
	for (se = s->list; se; se = se->next)
		if (se->id == id)
			return se;
	return NULL;
}

void session_put(struct eg_sessions *s, struct eg_session *se)
{
	(void)s;
	if (!se || --se->refs > 0)
		return;
	if (se->parent)
		session_put(s, se->parent);
	policy_free(se->policy);
	free(se->boundary);
	free(se->exec_lists);
	free(se);
}

void sessions_emit(struct eg_sessions *s, struct sbuf *b, const char *text)
{
	if (!b->oom && s->o.out.emit)
		s->o.out.emit(s->o.out.arg, b->data, b->len, text);
}

/* ---- verdicts for the tracer's records --------------------------------- */

/*
 * Verdicts wait here for the tracer's record of their exec (key: thread
 * id, up to VERDICT_PROBES slots probed). A thread may exec again before
 * the daemon reads the record of its last exec, so a thread can have
 * several verdicts waiting: each record takes the oldest that fits it.
 * The slot comes from a multiplicative hash of the tid: new threads get
 * consecutive tids, and with the tid itself as the index a burst of forks
 * whose records the daemon has not read yet filled every slot a thread
 * could probe, so a verdict took the place of another waiting one (seen:
 * a failed exec's record annotated with its thread's next verdict).
 */
#define VERDICT_PROBES	32

static struct verdict *slot_at(struct verdict *t, unsigned int n, uint32_t tid, unsigned int i)
{
	return &t[(tid * 2654435761u + i) & (n - 1)];
}

static struct verdict *verdict_at(struct eg_sessions *s, uint32_t tid, unsigned int i)
{
	return slot_at(s->verdicts, s->nverdicts, tid, i);
}

static bool slot_free(const struct verdict *v)
{
	return v->used || !v->tid;
}

static struct verdict *free_slot_in(struct verdict *t, unsigned int n, uint32_t tid)
{
	unsigned int i;

	for (i = 0; i < VERDICT_PROBES; i++) {
		struct verdict *v = slot_at(t, n, tid, i);

		if (slot_free(v))
			return v;
	}
	return NULL;
}

/*
 * The table starts small and doubles when a thread finds no free slot,
 * up to VERDICTS_MAX: the slots a verdict's hash spreads over are pages
 * the daemon touches, and a table that is mostly empty (a session runs a
 * few execs at a time; a verdict waits only until the next drain) costs
 * a first-touch fault per exec and its pages kept. False when it cannot
 * grow (at its maximum, or no memory): the caller takes the place of the
 * oldest verdict, as before.
 */
static bool verdicts_grow(struct eg_sessions *s)
{
	unsigned int n = s->nverdicts * 2, i;
	struct verdict *t;

	if (n > VERDICTS_MAX)
		return false;
	t = calloc(n, sizeof(*t));
	if (!t)
		return false;
	for (i = 0; i < s->nverdicts; i++) {
		struct verdict *v = &s->verdicts[i], *to;

		if (slot_free(v))
			continue;
		to = free_slot_in(t, n, v->tid);
		if (!to) {
			/* its thread's slots in the new table all taken (by others): it goes, as when full */
			free(v->rule);
			free(v->message);
			continue;
		}
		*to = *v;
	}
	free(s->verdicts);
	s->verdicts = t;
	s->nverdicts = n;
	return true;
}

static struct verdict *verdict_free_slot(struct eg_sessions *s, uint32_t tid)
{
	struct verdict *oldest = NULL, *v;
	unsigned int i;

	while (!(v = free_slot_in(s->verdicts, s->nverdicts, tid)))
		if (!verdicts_grow(s))
			break;
	if (v)
		return v;
	for (i = 0; i < VERDICT_PROBES; i++) {
		v = verdict_at(s, tid, i);
		if (!oldest || v->seq < oldest->seq)
			oldest = v;
	}
	return oldest;
}

int verdicts_init(struct eg_sessions *s)
{
	s->verdicts = calloc(VERDICTS_MIN, sizeof(*s->verdicts));
	s->nverdicts = s->verdicts ? VERDICTS_MIN : 0;
	return s->verdicts ? 0 : -ENOMEM;
}

void verdicts_shrink(struct eg_sessions *s)
{
	struct verdict *t;
	unsigned int i;

	if (s->nverdicts <= VERDICTS_MIN)
		return;
	for (i = 0; i < s->nverdicts; i++)
		if (!slot_free(&s->verdicts[i]))
			return;
	t = calloc(VERDICTS_MIN, sizeof(*t));
	if (!t)
		return;		/* the big one stays */
	verdicts_free(s);
	s->verdicts = t;
	s->nverdicts = VERDICTS_MIN;
}

void verdicts_free(struct eg_sessions *s)
{
	unsigned int i;

	for (i = 0; i < s->nverdicts; i++) {
		free(s->verdicts[i].rule);
		free(s->verdicts[i].message);
	}
	free(s->verdicts);
	s->verdicts = NULL;
	s->nverdicts = 0;
}

static void verdict_drop(struct verdict *v)
{
	free(v->rule);
	free(v->message);
	v->rule = v->message = NULL;
	v->used = true;
}

uint64_t verdict_put(struct eg_sessions *s, uint32_t tid, uint32_t session, const char *decision,
		     const char *action, const char *rule, const char *message, const char *approval_id,
		     uint64_t dev, uint64_t ino, uint64_t issued_ns)
{
	struct verdict *v = verdict_free_slot(s, tid);
	static uint64_t seq;

	if (!v)
		return 0;
	free(v->rule);
	free(v->message);
	memset(v, 0, sizeof(*v));
	v->tid = tid;
	v->session = session;
	v->at_ns = eg_mono_ns();
	v->issued_ns = issued_ns ? issued_ns : eg_boot_ns();
	v->seq = ++seq;
	v->dev = dev;
	v->ino = ino;
	eg_copy_str(v->decision, sizeof(v->decision), decision);
	eg_copy_str(v->action, sizeof(v->action), action);
	v->rule = rule ? strdup(rule) : NULL;
	v->message = message ? strdup(message) : NULL;
	if (approval_id)
		eg_copy_str(v->approval_id, sizeof(v->approval_id), approval_id);
	return v->seq;
}

/* The verdict of an answer that could not be given: no exec will come to take it. */
void verdict_forget(struct eg_sessions *s, uint32_t tid, uint64_t seq)
{
	unsigned int i;

	for (i = 0; seq && i < VERDICT_PROBES; i++) {
		struct verdict *v = verdict_at(s, tid, i);

		if (v->tid == tid && v->seq == seq && !v->used) {
			verdict_drop(v);
			return;
		}
	}
}

/* A refused exec never reached the kernel: the tracer has no record of it. */
static bool verdict_refused(const struct verdict *v)
{
	return !strcmp(v->decision, "deny") || !strcmp(v->decision, "error");
}

/* An allow of no file (a failed exec let through) or a refusal: only a failed exec's record could take it. */
static bool verdict_fileless(const struct verdict *v)
{
	return !v->ino || verdict_refused(v);
}

/*
 * The verdict of a record made at t (CLOCK_BOOTTIME): the thread's newest
 * one issued before t. A thread makes one exec at a time and each exec's
 * ticket is issued before the exec goes on, so an older verdict's exec
 * ended before this one began, and a later one's began after: with no
 * record of its own (a failed exec not reported, or its record lost) an
 * older verdict is never another exec's. An exec record takes an allowed
 * exec of its file, a failed exec's record anything but a refusal; other
 * than that, no verdict is the record's. The older ones go: their
 * records came before this one, or never will. While records may be held
 * back (a loader's exec, hold.c: read after later ones), an older allowed
 * exec of a file may be a held record's, and stays; only what a failed
 * exec's record could take goes (those are never held).
 *
 * t == 0 (no time): the thread's oldest waiting one, an exec record
 * skipping (and dropping) refusals and verdicts for another file, a
 * failed exec's record refusals.
 */
static struct verdict *verdict_for(struct eg_sessions *s, uint32_t tid, uint32_t session, bool exec,
				   uint64_t dev, uint64_t ino, uint64_t t, bool held)
{
	struct verdict *best;
	unsigned int i;

	for (;;) {
		best = NULL;
		for (i = 0; i < VERDICT_PROBES; i++) {
			struct verdict *v = verdict_at(s, tid, i);

			if (v->tid != tid || v->session != session || v->used || (t && v->issued_ns > t))
				continue;
			if (!best || (t ? v->seq > best->seq : v->seq < best->seq))
				best = v;
		}
		if (!best || (exec ? best->ino && best->dev == dev && best->ino == ino
				   : !verdict_refused(best)))
			break;
		if (t)
			return NULL;
		verdict_drop(best);
	}
	for (i = 0; best && t && i < VERDICT_PROBES; i++) {
		struct verdict *v = verdict_at(s, tid, i);

		if (v->tid == tid && v->session == session && !v->used && v->seq < best->seq &&
		    (!held || verdict_fileless(v)))
			verdict_drop(v);
	}
	return best;
}

bool sessions_annotate(struct eg_sessions *s, const struct eg_event *h, struct eg_annotation *a, bool held)
{
	bool killed = h->flags & EG_F_KILLED;
	struct verdict *v = verdict_for(s, h->tid, h->session, h->type == EG_EVENT_EXEC, h->dev, h->ino,
					h->ktime_ns, held);

	memset(a, 0, sizeof(*a));
	a->layer = "seccomp";
	if (!v) {
		/* no allowed exec to match: only the kernel's kill is known */
		if (!killed)
			return false;
		a->decision = "deny";
		a->rule = "ticket";
		a->action = "killed";
		return true;
	}
	v->used = true;
	sbuf_reset(&s->ann_rule);
	sbuf_reset(&s->ann_msg);
	if (v->rule)
		sbuf_puts(&s->ann_rule, v->rule);
	if (v->message)
		sbuf_puts(&s->ann_msg, v->message);
	a->decision = strcmp(v->decision, "approval") ? v->decision : "allow";
	a->rule = v->rule ? sbuf_cstr(&s->ann_rule) : NULL;
	a->message = v->message ? sbuf_cstr(&s->ann_msg) : NULL;
	a->action = killed ? "killed" : v->action;
	verdict_drop(v);
	return true;
}
