// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate tracer: exec depth per task in task storage, one ring-buffer
 * record per exec and per failed exec.
 *
 * An exec record says what really runs: the file the kernel opened
 * (bprm->file, walked up to the root of its mount namespace), the path as
 * the caller spelled it, a script's interpreter and the script itself, the
 * committed argv from the new mm, the credentials after the exec, the
 * namespaces and the controlling terminal.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "paths.bpf.h"
#include "scripts.bpf.h"
#include "tickets.bpf.h"
#include "kjudge.bpf.h"
#include "kexec.bpf.h"
#include "record.bpf.h"
#include "lsm.bpf.h"
#include "failed.bpf.h"
#include "loaded.bpf.h"
#include "scope.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The scripts of a '#!' exec (bprm's interpreter is not what was named),
 * kept for its record. Only the exec's record reads them back (and
 * removes them): out of scope there is none, but for a session's exec.
 * Kept there, they stayed with the task (40 KiB of slab for a chain) as
 * long as it lived.
 */
static __always_inline void keep_scripts_in_scope(struct task_struct *task, struct linux_binprm *bprm)
{
	struct eg_task *st;

	if (bprm->interp == bprm->filename || !active())
		return;
	if (!traced_cgroup()) {
		st = bpf_task_storage_get(&tasks, task, 0, 0);
		if (!st || !st->session)
			return;
	}
	keep_scripts(task);
}

SEC("tp_btf/sched_prepare_exec")
int BPF_PROG(handle_prepare_exec, struct task_struct *task, struct linux_binprm *bprm)
{
	keep_scripts_in_scope(task, bprm);
	return 0;
}

/*
 * Before 6.10 (no sched_prepare_exec): each level of an exec's binary
 * search after a script's, where exec has released the scripts before it
 * (task_works) and nothing else yet: the last level finds them all, as
 * sched_prepare_exec would. fentry, not BPF LSM: loaded where the kernel
 * allows BPF trampolines (Debian's 6.1 does, with or without lsm=bpf).
 */
SEC("fentry/security_bprm_check")
int BPF_PROG(handle_bprm_level, struct linux_binprm *bprm)
{
	/* the first level (no '#!' or binfmt_misc has changed what runs yet) released nothing */
	keep_scripts_in_scope(bpf_get_current_task_btf(), bprm);
	return 0;
}

/* Host-wide: every exec in scope (--cgroup, or the whole host). */
SEC("lsm/bprm_check_security")
int BPF_PROG(enforce_bprm, struct linux_binprm *bprm, int ret)
{
	if (ret)
		return ret;
	return lsm_check(bprm, false) ? -1 /* EPERM */ : 0;
}

/* Attached to each --cgroup: the kernel runs it for tasks in that subtree only. */
SEC("lsm_cgroup/bprm_check_security")
int BPF_PROG(enforce_bprm_cgroup, struct linux_binprm *bprm)
{
	return lsm_check(bprm, true) ? 0 : 1;
}

/* ---- fork / exec / exit ------------------------------------------------- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	struct eg_task *pst, *cst;

	if (!active())
		return 0;
	pst = bpf_task_storage_get(&tasks, parent, 0, 0);
	if (!pst)
		return 0;
	cst = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!cst) {
		COUNT(storage_failed);
		return 0;
	}
	/* everything a lineage carries: depths, session, container, context */
	__builtin_memcpy(cst, pst, sizeof(*cst));
	cst->flags = pst->flags & EG_TASK_INHERITED;	/* and so does trace/amend.c for a thread it finds */
	cst->lsm_rule = 0;
	cst->lsm_seq = 0;
	cst->lsm_kflags = 0;
	cst->lsm_kdecision = 0;
	cst->lsm_reason = 0;
	cst->loader_dev = 0;
	cst->loader_ino = 0;
	cst->loader_arg = 0;
	return 0;
}

/* What may stop the exec in the record: kernel rules, a session's ticket. Then it goes out. */
static __always_inline void exec_check(struct task_struct *task, __u32 size, __u64 now,
				       struct eg_task *st)
{
	struct eg_event *e;
	__u64 off;
	char *buf;

	buf = scratch_get();
	if (!buf)
		return;
	e = (struct eg_event *)buf;
	e->ktime_ns = now;	/* here: exec_record() has five arguments already */
	if (krules_loaded()) {
		/* an agent's identity: the task enters its context, whoever started it */
		__u32 ctx = kcontext_exec();

		/* nested: the innermost; its own re-exec (or a copy of it) keeps the first one's */
		if (ctx && ctx != e->context) {
			e->context = ctx;
			e->context_depth = 0;
			e->context_ktime = now;
			e->context_tgid = e->pid;
			e->flags |= EG_F_CONTEXT_ENTERED;
		}
	}
	/* the kernel rules (--enforce): a denied exec dies before its image runs */
	if (krules_loaded() && krules_commands()) {
		int d = kjudge_exec(e);

		COUNT(kjudged);
		if (d == EG_KD_ERROR)
			COUNT(kerrors);
		/* past a context's limits (its depth, shells in a row): refused like a deny */
		if (d != EG_KD_ERROR && d != EG_KD_BYPASS && kcontext_over(e)) {
			d = EG_KD_DENY;
			e->kdecision = d;
			e->krule = 0;
			e->reason = EG_REASON_CONTEXT_LIMIT;
		}
		if ((d == EG_KD_DENY || d == EG_KD_ERROR) && kenforcing()) {
			COUNT(kdenied);
			if (!e->reason)
				e->reason = d == EG_KD_ERROR ? EG_REASON_KERNEL_ERROR : EG_REASON_RULE;
			kill_current(e, task);
		}
	}
	/* a session exec runs only as its supervisor allowed it */
	if (*(volatile __u32 *)&e->session && !(e->flags & EG_F_KILLED)) {
		off = strings_end(e);
		eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);
		e->reason = check_ticket(e, buf + off, e->argv_len, e->argv_bytes, st);
		if (e->reason)
			kill_current(e, task);
		else
			e->flags |= EG_F_TICKET_OK;
	}
	if (traced_cgroup() || (e->flags & EG_F_KILLED))
		submit(buf, size, EG_EVENT_EXEC);
}

/* The task's depth and exec id for its next exec (the procs view reads them too). */
static __noinline void exec_update(struct task_struct *task, bool launcher, __u64 now,
				   bool have_record, struct eg_task *st)
{
	struct eg_event *e;
	__u32 task_flags, pidns;
	__s32 cdepth;
	bool known;

	if (!st)
		return;
	e = have_record ? (struct eg_event *)scratch_get() : NULL;
	known = st->flags & EG_TASK_KNOWN;
	pidns = e ? e->pid_ns : task_pid_ns(task);
	if (pidns == host_pid_ns)
		pidns = 0;
	/* the container's count as the record says it, from the storage before this exec */
	cdepth = pidns ? container_depth_of(st, task, 1) : 0;

	st->parent_tgid = known ? st->exec_tgid : 0;
	st->parent_ktime = known ? st->exec_ktime : 0;
	task_flags = (st->flags & (EG_TASK_DEPTH_KNOWN | EG_TASK_KNOWN | EG_TASK_MUST_DIE |
				   EG_TASK_SESSION_DEPTH | EG_TASK_INFERRED)) | EG_TASK_KNOWN;
	/* the host's depth: nothing resets it, a launcher neither */
	st->depth = known ? st->depth + 1 : 0;
	if (task_flags & EG_TASK_SESSION_DEPTH)
		st->session_depth++;
	/*
	 * A launcher outside any session starts the session's count: the
	 * command it execs is session depth 0. Inside a session the count
	 * goes on, so a nested session never makes anything look "direct".
	 */
	if (launcher) {
		task_flags |= EG_TASK_LAUNCHER;
		if (!st->session) {
			st->session_depth = -1;
			task_flags |= EG_TASK_SESSION_DEPTH;
		}
	}
	st->cont_pidns = pidns;
	st->container_depth = cdepth;
	/*
	 * The agent context: what the record says (entered here, or carried);
	 * without a record the task keeps its own, one exec deeper.
	 */
	if (e) {
		st->context = e->context;
		st->context_depth = e->context_depth;
		st->context_ktime = e->context_ktime;
		st->context_tgid = e->context_tgid;
		st->shells = e->shells;
	} else if (st->context) {
		st->context_depth++;
	}
	/* a loader run as the command: the program it maps is judged (loaded.bpf.h) */
	if (e && (e->flags & EG_F_LOADER) && !(e->flags & EG_F_KILLED)) {
		task_flags |= EG_TASK_LOADER | (st->flags & EG_TASK_LOADER_TICKET);
		st->loader_arg = e->loader_arg;
	}
	st->flags = task_flags;
	st->exec_ktime = now;
	st->exec_tgid = task->tgid;
	st->exec_seq = (__u32)task->self_exec_id;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 now = bpf_ktime_get_boot_ns();
	struct mm_struct *mm;
	struct eg_task *st;
	bool launcher;
	__u32 size;

	if (!active())
		return 0;
	mm = task->mm;
	launcher = is_launcher(bprm->file, mm->arg_start, mm->arg_end);
	/* one lookup for the record and the update (created: the task is known from here on) */
	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		COUNT(storage_failed);
	size = exec_record(task, old_pid, bprm, launcher, st);
	/* no record read the scripts back (the task left the scope since sched_prepare_exec, say) */
	if (!size && bprm->interp != bprm->filename)
		scripts_drop(task);
	if (size)
		exec_check(task, size, now, st);
	exec_update(task, launcher, now, size != 0, st);
	return 0;
}

/* ---- exits ------------------------------------------------------------- */

const volatile __u32 report_exits = 1;	/* exit records (--exit-events=none: 0) */

#define EG_SIGNAL_GROUP_EXIT	0x00000004	/* include/linux/sched/signal.h */

/* The end of a process that exec'd while traced: its exec id, status and lifetime. */
static __noinline void report_exit(struct task_struct *task, const struct eg_task *st)
{
	struct signal_struct *sig = task->signal;
	__u64 flags = ring_wakeup(sizeof(struct eg_exit_event));	/* as submit() */
	struct eg_exit_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		struct eg_counters *c = counters_get();

		if (c)
			COUNT_LOSS(c, lost_exit);
		return;
	}
	e->type = EG_EVENT_EXIT;
	e->flags = st->flags & EG_TASK_DEPTH_KNOWN ? EG_F_DEPTH_KNOWN : 0;
	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->exec_ktime_ns = st->exec_ktime;
	e->pid = task->tgid;
	e->tid = task->pid;
	/* a group exit (exit_group, a fatal signal) gives every thread its code */
	e->exit_code = (sig->flags & EG_SIGNAL_GROUP_EXIT) ? sig->group_exit_code : task->exit_code;
	e->uid = (__u32)bpf_get_current_uid_gid();
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->session = st->session;
	e->depth = st->depth;
	e->pad = 0;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, flags);
	COUNT(exits);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u32 tgid = task->tgid;
	__u32 tid = task->pid;
	struct eg_task *st;

	if (!active())
		return 0;
	/*
	 * A ticket for an exec this thread will never make. Only session tasks
	 * get tickets; a task with no storage (older than the tracer) is
	 * cleaned too. The storage lookup costs far less than a locked delete.
	 */
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!st || st->session)
		ticket_drop(tid);

	/*
	 * The process is gone when its last thread is: do_exit() counts the
	 * live threads down before this tracepoint (a leader that called
	 * pthread_exit() keeps the entry while the others run).
	 */
	/* only an image that exec'd in this process ends here */
	if (task->signal->live.counter == 0 && report_exits && st && (st->flags & EG_TASK_KNOWN) &&
	    st->exec_tgid == tgid && traced_cgroup())
		report_exit(task, st);
	return 0;
}

/* ---- the procs view ------------------------------------------------------ */

/*
 * PIN/procs, pinned as an iterator: `cat` runs this once per task. A line
 * per live process whose current image exec'd while traced (its task
 * storage says so, of this very exec), from what exec_update keeps and the
 * task as it is now: nothing is written at exec or exit for it, the reader
 * pays. The process is gone once its last thread has exited (a leader that
 * called pthread_exit() keeps it while the others run; a zombie does not).
 */
SEC("iter/task")
int iter_procs(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *task = ctx->task;
	struct eg_task *st;

	if (ctx->meta->seq_num == 0)
		BPF_SEQ_PRINTF(seq, EG_PROCS_HEADER);
	if (!task || task->pid != task->tgid || !task->signal->live.counter)
		return 0;
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!st || !(st->flags & EG_TASK_KNOWN) || st->exec_tgid != task->tgid)
		return 0;
	/* an exec no tracer saw (between two daemons) left the image before it in storage */
	if (st->exec_seq && st->exec_seq != (__u32)task->self_exec_id)
		return 0;
	BPF_SEQ_PRINTF(seq, "%u %d %u %u %u %llu %u %llu %u %llu %s\n", task->tgid, st->depth,
		       task->real_parent->tgid, task->cred->uid.val, st->session, st->exec_ktime,
		       st->parent_tgid, st->parent_ktime, st->flags & ~EG_TASK_MUST_DIE,
		       BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id), task->comm);
	return 0;
}


SEC("tracepoint/syscalls/sys_exit_execve")
int handle_exit_execve(struct trace_event_raw_sys_exit *ctx)
{
	report_failed(ctx->ret, false);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_execveat")
int handle_exit_execveat(struct trace_event_raw_sys_exit *ctx)
{
	report_failed(ctx->ret, true);
	return 0;
}

/* A dynamic loader run as the command maps its program: judged here (loaded.bpf.h). */
SEC("tracepoint/syscalls/sys_exit_mmap")
int handle_exit_mmap(struct trace_event_raw_sys_exit *ctx)
{
	if (!active())
		return 0;
	loader_mapped(ctx->ret);
	return 0;
}

/* A cgroup made at a --cgroup scope's path: in scope before any task is in it (scope.bpf.h). */
SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(handle_cgroup_mkdir, struct cgroup *cgrp, const char *path)
{
	struct scope_find c;
	__s32 i;

	if (!active())
		return 0;
	i = scope_of(cgrp, path, &c);
	if (i >= 0)
		scope_change(BPF_CORE_READ(cgrp, kn, id), i, EG_SCOPE_BACK);
	cgroup_made(cgrp, path);
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(handle_cgroup_rmdir, struct cgroup *cgrp, const char *path)
{
	struct scope_find c;
	__s32 i;

	if (!active())
		return 0;
	i = scope_of(cgrp, path, &c);
	if (i >= 0)
		scope_change(BPF_CORE_READ(cgrp, kn, id), i, EG_SCOPE_GONE);
	return 0;
}
