// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Changes to a running process's task storage that user space asks for
 * (an agent context found at the daemon's start, a depth set by `execgate
 * task`, a launcher's session id), made here, field by field, by a task
 * iterator over the threads of the one process a pidfd names.
 *
 * From user space a map update replaces the whole value: a lookup, a
 * change and an update put back whatever the task's own programs wrote in
 * between, if it exec'd then. That is the exec id and depth of the image
 * before, and flags the exec set and a later program acts on: a dynamic
 * loader's first mapping still to judge, a kill still to send. A denied
 * program could then run. Here only the fields asked are written, and
 * flags only by an atomic or.
 *
 * A context or depth written here can still be lost to an exec that read
 * the task's storage just before and writes it back after (exec_update):
 * the callers look again and ask once more (trace/amend.c).
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

/* The image looked up is still the one there: no exec since (nor one under way, for a session). */
static __always_inline bool same_image(struct task_struct *task, const struct eg_task *st, bool strict)
{
	if (req.exec_ktime && st->exec_ktime != req.exec_ktime)
		return false;
	/* an exec under way: the kernel counted it (self_exec_id) before exec_update runs */
	return !strict || (st->exec_seq && st->exec_seq == (__u32)task->self_exec_id);
}

SEC("iter/task")
int amend_task(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	bool session = req.op == EG_AMEND_SESSION;
	struct eg_task *st;

	/* the process's storage is its leader's, as a process's pidfd names it */
	if (!task || task->pid != task->tgid || (req.tid && task->pid != req.tid))
		return 0;
	if (!req.op) {
		req.result = EG_AMEND_DONE;	/* the probe at open */
		return 0;
	}
	/* a depth makes the storage; a context needs a task the tracer knows */
	st = bpf_task_storage_get(&tasks, task, 0, req.op == EG_AMEND_DEPTH ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!st || (req.op == EG_AMEND_CONTEXT && !(st->flags & EG_TASK_KNOWN))) {
		req.result = EG_AMEND_NO_STORAGE;
		return 0;
	}
	/* a session's id: the launcher the daemon looked at, and no exec since or under way */
	if (!same_image(task, st, session) ||
	    (session && (!(st->flags & EG_TASK_LAUNCHER) || !req.exec_ktime))) {
		req.result = EG_AMEND_CHANGED;
		return 0;
	}
	if (req.op == EG_AMEND_CONTEXT && !st->context) {
		st->context_depth = req.context_depth;
		st->context_ktime = 0;
		st->context_tgid = req.context_tgid;
		st->context = req.context;
	} else if (req.op == EG_AMEND_DEPTH) {
		st->depth = req.depth;
		__sync_fetch_and_or(&st->flags, EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN);
	} else if (session) {
		st->session = req.session;	/* nothing else writes it: exec_update keeps it */
	}
	req.result = EG_AMEND_DONE;
	return 0;
}
