/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Failed execs, reported from the syscall's exit with the registers the
 * call was made with.
 */
#ifndef EG_FAILED_BPF_H
#define EG_FAILED_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "paths.bpf.h"
#include "tickets.bpf.h"
#include "record.bpf.h"	/* fill_lineage, fill_task: a failed exec carries what an exec does */

/* ---- failed execs: reported from the syscall's exit ---------------------- */

/*
 * A failed execve leaves the caller's registers as they were: the
 * arguments the syscall used are still in pt_regs at sys_exit (after any
 * change by ptrace or seccomp, which happen before the call). So no entry
 * tracepoint has to stash them: one program run per exec fewer. The exit
 * tracepoint also fires for a call a seccomp filter refused without
 * running it: a container's or a service's filter (reported: someone
 * tried), or a session's supervisor (not reported here: see below).
 */
struct argv_walk {
	const char *const *argv;
	__u32 off;		/* where argv starts in scratch */
	__u32 pos;		/* bytes of whole arguments copied */
	__u32 argc;
	__u32 bytes;		/* real size, NULs included, as far as known */
	__u32 flags;
	bool full;		/* cap reached: only count from here on */
};

static long argv_step(__u32 i, struct argv_walk *w)
{
	const char *arg = NULL;
	__u64 off = w->off, pos = w->pos, room;
	char *buf, last = 1;
	long n;

	if (bpf_probe_read_user(&arg, sizeof(arg), &w->argv[i])) {
		w->flags |= EG_F_ARGV_FAULT;
		return 1;
	}
	if (!arg)
		return 1;
	/*
	 * argc is only counted, never compared here: a compared counter would
	 * make every iteration a distinct verifier state.
	 */
	w->argc++;
	if (i == EG_ARGC_SCAN - 1)
		w->flags |= EG_F_ARGC_INEXACT;
	if (w->full)
		return 0;
	if (off > EG_EVENT_HDR + EG_STRINGS_MAX || pos >= max_argv_bytes || pos >= EG_ARGV_LIMIT) {
		w->full = true;
		w->flags |= EG_F_ARGV_TRUNC;
		return 0;
	}
	buf = scratch_get();
	if (!buf)
		return 1;
	room = max_argv_bytes - pos;
	eg_clamp(room, EG_ARG_READ_MAX);
	eg_clamp(pos, max_argv_bytes);
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);	/* for 6.1: see path_step() */
	n = bpf_probe_read_user_str(buf + off + pos, room, arg);
	if (n < 0) {
		w->flags |= EG_F_ARGV_FAULT;
		w->full = true;
		return 0;
	}
	/*
	 * n == room is either a string that fits exactly (its NUL is the last
	 * byte) or one that was cut: the source's byte at room-1 tells.
	 */
	if (n == room && (bpf_probe_read_user(&last, 1, arg + room - 1) || last)) {
		w->full = true;
		w->flags |= EG_F_ARGV_TRUNC;
		return 0;
	}
	w->pos = pos + n;
	w->bytes += n;
	return 0;
}

static __always_inline void report_failed(long ret, bool at)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;
	struct argv_walk aw = {};
	struct eg_task *st;
	struct eg_event *e;
	const char *filename;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 off, n, lsm = 0, lsm_rule = 0, lsm_seq = 0, lsm_kd = 0, lsm_reason = 0, lsm_kflags = 0;
	__u64 filename_ptr, argv_ptr;
	bool session_refused = false;
	char next = 0;
	long rn;
	char *buf;

	if (!active())
		return;
	/* a task older than the tracer has no storage: its failures are reported all the same */
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (st) {
		/* the kill at exec was refused: this is the last stop before user mode */
		if (st->flags & EG_TASK_MUST_DIE) {
			if (!bpf_send_signal(9))
				st->flags &= ~EG_TASK_MUST_DIE;
		}
		if (ret < 0 && st->session) {
			__u32 tid = (__u32)pid_tgid;

			/*
			 * The exec failed: its ticket must not serve a later one.
			 * No ticket: the supervisor refused it before the call ran
			 * (seccomp answered; the exit tracepoint fires all the
			 * same) and wrote its record itself.
			 */
			if (ticket_drop(tid))
				session_refused = true;
		}
		/* bprm_check_security refused it: say so in the record */
		lsm = st->flags & EG_TASK_LSM_DENIED;
		if (lsm) {
			lsm_rule = st->lsm_rule;
			lsm_seq = st->lsm_seq;
			lsm_kflags = st->lsm_kflags;
			lsm_kd = st->lsm_kdecision;
			lsm_reason = st->lsm_reason;
			st->flags &= ~EG_TASK_LSM_DENIED;
		}
	}
	if (ret >= 0 || session_refused || !report_failures || !traced_cgroup())
		return;

	e = record_begin(EG_EVENT_EXEC_FAILED);
	if (!e)
		return;
	buf = (char *)e;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->err = ret;
	fill_lineage(e, st, st && (st->flags & EG_TASK_KNOWN) ? st->depth + 1 : 0);
	fill_task(e, task);
	/* the syscall's own arguments (x86-64: di, si, dx, r10, r8) */
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (at) {
		e->flags |= EG_F_EXECVEAT;
		e->dirfd = (int)regs->di;
		filename_ptr = regs->si;
		argv_ptr = regs->dx;
		e->at_flags = (__u32)regs->r8;
	} else {
		filename_ptr = regs->di;
		argv_ptr = regs->si;
	}
	if (lsm && ret == -1 /* EPERM */) {
		e->klayer = EG_KL_LSM;
		e->kdecision = lsm_kd;
		e->krule = lsm_rule;
		e->kseq = lsm_seq;
		e->kflags = lsm_kflags;
		e->reason = lsm_reason;
	}

	/* the path as passed; an error from the read is never taken for a length */
	off = EG_EVENT_HDR;
	filename = (const char *)filename_ptr;
	rn = bpf_probe_read_user_str(buf + off, EG_FILENAME_MAX, filename);
	if (rn <= 0) {
		e->flags |= EG_F_FILENAME_FAULT;
		rn = 0;
	} else if (rn >= EG_FILENAME_MAX) {
		bpf_probe_read_user(&next, 1, filename + EG_FILENAME_MAX - 1);
		if (next)
			e->flags |= EG_F_FILENAME_TRUNC;
		rn = EG_FILENAME_MAX;
	}
	n = rn;
	barrier_var(n);
	if (n > EG_FILENAME_MAX)
		n = EG_FILENAME_MAX;
	e->filename_len = n;
	off += n;

	n = read_cwd(task, off, &e->flags);
	e->cwd_len = n;
	off += n;

	aw.argv = (const char *const *)argv_ptr;
	aw.off = off;
	if (aw.argv)
		bpf_loop(EG_ARGC_SCAN, argv_step, &aw, 0);
	e->flags |= aw.flags;
	e->argc = aw.argc;
	e->argv_bytes = aw.bytes;
	n = aw.pos;
	barrier_var(n);
	if (n > EG_ARGV_LIMIT)
		n = EG_ARGV_LIMIT;
	e->argv_len = n;
	submit(buf, off + n, EG_EVENT_EXEC_FAILED);
}

#endif /* EG_FAILED_BPF_H */
