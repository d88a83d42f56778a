/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * bprm_check_security (BPF LSM): a session's ticket and the kernel rules,
 * judged before the exec, refused with EPERM.
 */
#ifndef EG_LSM_BPF_H
#define EG_LSM_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"
#include "kjudge.bpf.h"
#include "kexec.bpf.h"
#include "tickets.bpf.h"

/*
 * A 32-bit system call (int $0x80, or a 32-bit process's): on x86 the
 * syscall tracepoints ignore it, so no exit of its exec comes to read or
 * clear a note (failed.bpf.h).
 */
static __always_inline bool compat_syscall(struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(task, thread_info.status) & 0x0002;	/* TS_COMPAT */
#else
	return false;
#endif
}

/*
 * Remembers why bprm_check refused, for the exec_failed record. Not for a
 * compat exec: nothing would take the note, and the thread's next native
 * exec that fails with EPERM (a seccomp filter's, say) would be told to
 * be this refusal.
 */
static __always_inline void lsm_note(struct eg_task *st, __u32 reason, __u32 kd, __u32 rule,
				     __u32 seq, __u32 kflags)
{
	if (!st || compat_syscall(bpf_get_current_task_btf()))
		return;
	st->flags |= EG_TASK_LSM_DENIED;
	st->lsm_reason = reason;
	st->lsm_kdecision = kd;
	st->lsm_rule = rule;
	st->lsm_seq = seq;
	st->lsm_kflags = kflags;
}

/* 0 to let the exec go on, -EPERM to refuse it. */
static __always_inline int lsm_check(struct linux_binprm *bprm, bool scoped)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *file = BPF_CORE_READ(bprm, file);
	__u32 slot, reason = 0, rule, seq, kfl, ctx, shells;
	__s32 cdepth;
	__u64 bprm_addr = 0;
	struct eg_task *st;
	struct kfacts *f;
	int d;

	if (!active())
		return 0;
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (lsm_ticket(st, file, &reason)) {
		lsm_note(st, reason, EG_KD_NONE, 0, 0, 0);
		return -1;
	}
	reason = 0;
	if (!krules_loaded() || (!scoped && !traced_cgroup()))
		return 0;
	slot = kf_slot(KSLOT_LSM);
	f = kf_get(slot);
	if (!f)
		return 0;
	/* this slot may be in use by a task this one preempted: leave it to the check at exec */
	if (__sync_lock_test_and_set(&f->busy, 1)) {
		COUNT(lsm_deferred);
		return 0;
	}
	/*
	 * The pointer's value as a plain number: a global function's scalar
	 * argument must be a scalar to 6.1's verifier, which refuses a cast
	 * pointer ("R2 is not a scalar").
	 */
	bpf_probe_read_kernel(&bprm_addr, sizeof(bprm_addr), &bprm);
	if (kfacts_bprm(slot, bprm_addr))
		d = EG_KD_ERROR;
	else
		d = kjudge(slot);
	f = kf_get(slot);
	if (!f)
		return 0;
	rule = f->out_rule;
	seq = f->seq;
	kfl = f->kflags;
	ctx = f->context;
	cdepth = f->ctx_depth;
	shells = f->ctx_shells;
	*(volatile __u64 *)&f->busy = 0;	/* release: a plain store after the work */
	if (d == KJ_DEFER) {
		COUNT(lsm_deferred);
		return 0;
	}
	/* past its context's limits (depth, shells in a row): refused like a deny */
	if (d != EG_KD_DENY && d != EG_KD_ERROR && d != EG_KD_BYPASS && kctx_over(ctx, cdepth, shells)) {
		d = EG_KD_DENY;
		rule = 0;
		reason = EG_REASON_CONTEXT_LIMIT;
	}
	/* an exec that goes on is judged (and counted) again at sched_process_exec */
	if ((d != EG_KD_DENY && d != EG_KD_ERROR) || !kenforcing())
		return 0;
	COUNT(kjudged);
	if (d == EG_KD_ERROR)
		COUNT(kerrors);
	COUNT(kdenied);
	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!reason)
		reason = d == EG_KD_ERROR ? EG_REASON_KERNEL_ERROR : EG_REASON_RULE;
	lsm_note(st, reason, d, rule, seq, kfl);
	return -1;
}

#endif /* EG_LSM_BPF_H */
