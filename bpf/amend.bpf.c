// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Changes to a running process's task storage that user space asks for
 * (an agent context found at the daemon's start or a reload, a depth set
 * by `execgate task`, a launcher's session id), made here, field by field,
 * by a task iterator over the threads of the one process a pidfd names.
 *
 * From user space a map update replaces the whole value: a lookup, a
 * change and an update put back whatever the task's own programs wrote in
 * between, if it exec'd then. That is the exec id and depth of the image
 * before, and flags the exec set and a later program acts on: a dynamic
 * loader's first mapping still to judge, a kill still to send. A denied
 * program could then run. Here only the fields asked are written, and
 * flags only by an atomic or.
 *
 * Each thread has storage of its own, and what a thread forks copies the
 * thread's: a context or a depth on the leader alone leaves a worker
 * thread's children outside it. So they go to every thread; a thread the
 * tracer never saw start has no storage and gets the process's entry
 * whole (eg_amend.task), as its clone would have copied it, and only if it
 * still has none (an exec meanwhile made its own: that one stays).
 *
 * A context or depth written here can still be lost to an exec that read
 * the task's storage just before and writes it back after (exec_update):
 * the callers look again and ask once more (trace/amend.c). Such an exec
 * is the process's only thread after it (de_thread), so looking at the
 * process's entry again sees it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the tracer's map, shared (bpf_map__reuse_fd): never created by this object */
EG_TASKS_MAP;

/* the change asked, and its result: one per run, written by user space through its mapping */
struct eg_amend req = {};

#define EG_PF_EXITING	0x00000004	/* include/linux/sched.h: no storage is made for it */

/* The image looked up is still the one there: no exec since (nor one under way, for a session). */
static __always_inline bool same_image(struct task_struct *task, const struct eg_task *st, bool strict)
{
	if (req.exec_ktime && st->exec_ktime != req.exec_ktime)
		return false;
	/* an exec under way: the kernel counted it (self_exec_id) before exec_update runs */
	return !strict || (st->exec_seq && st->exec_seq == (__u32)task->self_exec_id);
}

/* One thread: EG_AMEND_* as a result. */
static __always_inline __u32 amend_thread(struct task_struct *task, bool leader)
{
	bool session = req.op == EG_AMEND_SESSION;
	struct eg_task *st;

	st = bpf_task_storage_get(&tasks, task, 0, 0);
	/* a context needs a process the tracer knows: the leader's storage says so, a thread's may be made */
	if (!st && !session && (req.op != EG_AMEND_CONTEXT || !leader)) {
		/* made with the change in it, unless an exec made its own meanwhile */
		st = bpf_task_storage_get(&tasks, task, &req.task, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st)
			return EG_AMEND_DONE;
		if (!leader && !(task->flags & EG_PF_EXITING))
			req.missed++;
	}
	if (!st || (req.op == EG_AMEND_CONTEXT && !(st->flags & EG_TASK_KNOWN)))
		return EG_AMEND_NO_STORAGE;
	if (req.op == EG_AMEND_FILL)
		return EG_AMEND_DONE;	/* storage there already: what the tracer or an exec made */
	/* a session's id: the launcher the daemon looked at, and no exec since or under way */
	if (!same_image(task, st, session) ||
	    (session && (!(st->flags & EG_TASK_LAUNCHER) || !req.exec_ktime)))
		return EG_AMEND_CHANGED;
	if (req.op == EG_AMEND_CONTEXT && !st->context) {
		st->context_depth = req.task.context_depth;
		st->context_ktime = req.task.context_ktime;
		st->context_tgid = req.task.context_tgid;
		st->context = req.task.context;
	} else if (req.op == EG_AMEND_DEPTH) {
		st->depth = req.task.depth;
		__sync_fetch_and_or(&st->flags, EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN);
	} else if (session) {
		st->session = req.task.session;	/* nothing else writes it: exec_update keeps it */
	}
	return EG_AMEND_DONE;
}

SEC("iter/task")
int amend_task(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	bool leader;
	__u32 r;

	/* the one process's threads (a walk over every task: those of the leader's id) */
	if (!task || (req.tid && task->tgid != req.tid))
		return 0;
	leader = task->pid == task->tgid;
	if (!req.op) {
		if (leader)
			req.result = EG_AMEND_DONE;	/* the probe at open */
		return 0;
	}
	/* a session is the launcher's: its leader alone */
	if (!leader && req.op == EG_AMEND_SESSION)
		return 0;
	r = amend_thread(task, leader);
	/* the leader's storage is the process's, the one user space looks up through a pidfd */
	if (leader)
		req.result = r;
	return 0;
}
