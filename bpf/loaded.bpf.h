/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The program a dynamic loader run as the command maps (loader.bpf.h says
 * how such an exec is found): at the first executable mapping of a file
 * after the exec, which glibc's rtld and musl's ldso make for the program
 * before anything else, the file really mapped is judged like an exec's:
 * the kernel rules (a deny kills the task before the loader jumps to it),
 * and in a session the identity the supervisor judged. What was judged is
 * exactly what was mapped: renaming another file over the path after the
 * exec changes nothing. An EG_EVENT_LOADED record tells the daemon.
 */
#ifndef EG_LOADED_BPF_H
#define EG_LOADED_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "paths.bpf.h"
#include "kfacts.bpf.h"
#include "kjudge.bpf.h"
#include "kexec.bpf.h"
#include "record.bpf.h"

#define EG_PROT_EXEC		0x4
#define EG_MAP_ANONYMOUS	0x20

static long arg_seek_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kwalk *w;
	long n;

	if (!f)
		return 1;
	w = &f->wk;
	if (!w->left || w->p >= w->end)
		return 1;
	n = bpf_probe_read_user_str(f->tmp, EG_FILENAME_MAX, (const void *)w->p);
	n = eg_str_whole(n, (const char *)w->p, EG_FILENAME_MAX, true);
	if (!n) {
		w->p = w->end;
		return 1;
	}
	w->p += n;
	w->left--;
	return 0;
}

/* Where argv[k] of the current image starts, or 0. */
static __always_inline __u64 user_arg(struct mm_struct *mm, __u32 k, __u32 slot)
{
	struct kfacts *f = kf_get(slot);

	if (!f)
		return 0;
	__builtin_memset(&f->wk, 0, sizeof(f->wk));
	f->wk.p = BPF_CORE_READ(mm, arg_start);
	f->wk.end = BPF_CORE_READ(mm, arg_end);
	f->wk.left = k;
	bpf_loop(LDR_ARGS_SCAN * 2, arg_seek_step, &slot, 0);
	f = kf_get(slot);
	return f && !f->wk.left && f->wk.p < f->wk.end ? f->wk.p : 0;
}

/*
 * The loaded record's file: its identity and the path it was mapped by (a
 * frame of its own: its walk is off loaded_check's stack while the
 * judge's own walk runs, within 6.1's 512 bytes).
 */
static __noinline void loaded_file(struct eg_event *e, char *buf, __u64 file_addr)
{
	struct file *file = (struct file *)file_addr;
	struct dentry *pd;
	struct vfsmount *pm;

	if (!file) {
		e->flags |= EG_F_FILENAME_FAULT;
		return;
	}
	e->dev = inode_dev(BPF_CORE_READ(file, f_inode));
	e->ino = BPF_CORE_READ(file, f_inode, i_ino);
	e->size = BPF_CORE_READ(file, f_inode, i_size);
	pd = BPF_CORE_READ(file, f_path.dentry);
	pm = BPF_CORE_READ(file, f_path.mnt);
	/* an overlayfs file (a container's) is mapped as its layer's: named by the path mapped */
	if (mount_internal(pm))
		backing_user_path(file, &pd, &pm);
	record_filename(e, buf, pd, pm);
}

/*
 * The context the program a loader maps enters, by that very file (its
 * identity, path and name, as an exec of it would): the task is put in it
 * before the program runs; and a shell mapped is a shell image, whatever
 * name the loader was asked for (a link named otherwise). True when the
 * task's context changed.
 */
static __always_inline bool loaded_context(__u32 slot, struct eg_task *st, __u32 tgid, struct file *file)
{
	__u32 set = EG_KSET_OF(kstate_seq()), id = 0;
	struct eg_kconf *c;
	struct kfacts *f;
	int d;

	f = kf_get(slot);
	if (!f)
		return false;
	if (!st->shells && kf_base_named(f, &shells))
		st->shells = 1;
	c = bpf_map_lookup_elem(&kconf, &set);
	/* from one context to another: a file only root could have made (kexec.bpf.h) */
	if (!c || !c->n_ident || (st->context && !kfile_roots(file)))
		return false;
	f->identities = 1;
	d = kjudge(slot);
	f = kf_get(slot);
	if (!f)
		return false;
	f->identities = 0;
	if (d == EG_KD_ALLOW && f->out_rule)
		id = f->out_rule - 1;
	if (!id || id >= EG_CONTEXTS_MAX || id == st->context)
		return false;
	st->context = id;
	st->context_depth = 0;
	st->context_ktime = st->exec_ktime;
	st->context_tgid = tgid;
	return true;
}

/*
 * Judges file, the first thing mapped executable by a loader run as the
 * command (NULL: it could not be found: fails closed where a check is due),
 * and reports it. st is the task's storage.
 */
static __noinline void loaded_check(struct task_struct *task, struct eg_task *st, __u64 file_addr)
{
	struct file *file = (struct file *)file_addr;
	struct mm_struct *mm = task->mm;
	__u32 slot = kf_slot(KSLOT_EXEC), n, arg = st->loader_arg;
	struct kfacts *f;
	struct eg_event *e;
	__u64 target, off;
	char *buf;
	int d = EG_KD_NONE;

	buf = scratch_get();
	if (!buf) {
		COUNT(scratch_missing);
		if ((st->flags & EG_TASK_LOADER_TICKET) || (krules_loaded() && kenforcing()))
			bpf_send_signal(9);
		return;
	}
	e = (struct eg_event *)buf;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_LOADED;
	e->ktime_ns = st->exec_ktime;		/* the loader's exec: the same exec id */
	e->pid = task->tgid;
	e->tid = task->pid;
	e->depth = st->depth;
	e->session = st->session;
	if (st->flags & EG_TASK_DEPTH_KNOWN)
		e->flags |= EG_F_DEPTH_KNOWN;
	e->loader_arg = arg;
	fill_task(e, task);
	loaded_file(e, buf, file_addr);
	/* the program's name as the loader was asked for it */
	target = arg && arg != EG_LOADER_ARG_UNKNOWN ? user_arg(mm, arg, slot) : 0;
	if (target) {
		n = read_user_str(buf, strings_end(e), (const char *)target, &e->flags, EG_F_REQUESTED_TRUNC,
				  EG_F_FILENAME_FAULT);
		e->requested_len = cut16(n, EG_FILENAME_MAX);
	}

	/* the kernel rules, on the file mapped, with the argv from the program's own name on */
	if (krules_loaded()) {
		if (!file || kfacts_file(slot, file_addr)) {
			d = EG_KD_ERROR;
		} else {
			kf_depths(slot, st, 0);
			f = kf_get(slot);
			if (f) {
				f->arg_start = target ? BPF_CORE_READ(mm, arg_start) : 0;
				f->arg_end = target ? BPF_CORE_READ(mm, arg_end) : 0;
				f->args_from = arg;
				if (!target)
					f->flags |= KF_NO_ARGV;
			}
			off = EG_EVENT_HDR + *(volatile __u16 *)&e->filename_len;
			eg_clamp(off, EG_EVENT_HDR + EG_FILENAME_MAX);
			if (target)
				kf_spelled(slot, buf + off, *(volatile __u16 *)&e->requested_len);
			if (loaded_context(slot, st, task->tgid, file))
				kf_depths(slot, st, 0);
			d = krules_commands() ? kjudge(slot) : EG_KD_NONE;
			if (d == KJ_DEFER)
				d = EG_KD_ERROR;
		}
	}
	/* the contexts alone (no --enforce): no verdict, as at the exec (exec_check) */
	if (krules_loaded() && krules_commands()) {
		f = kf_get(slot);
		e->kdecision = d;
		e->klayer = EG_KL_KILL;
		e->kseq = kstate_seq();
		if (f && d != EG_KD_ERROR) {
			e->krule = f->out_rule;
			e->kseq = f->seq;
			e->kflags = f->kflags | EG_KF_TARGET_RULE;
		}
		/* past its context's limits (a shell mapped one too many in a row): refused like a deny */
		if (d != EG_KD_ERROR && d != EG_KD_BYPASS && kctx_over(st->context, st->context_depth, st->shells)) {
			d = EG_KD_DENY;
			e->kdecision = d;
			e->krule = 0;
			e->reason = EG_REASON_CONTEXT_LIMIT;
		}
		COUNT(kjudged);
		if (d == EG_KD_ERROR)
			COUNT(kerrors);
		if ((d == EG_KD_DENY || d == EG_KD_ERROR) && kenforcing()) {
			COUNT(kdenied);
			if (!e->reason)
				e->reason = d == EG_KD_ERROR ? EG_REASON_KERNEL_ERROR : EG_REASON_RULE;
			kill_current(e, task);
		}
	}
	/* the context the program runs in, as the record's judge in userspace reads it */
	e->context = st->context;
	e->context_depth = st->context_depth;
	e->context_ktime = st->context_ktime;
	e->context_tgid = st->context_tgid;
	e->shells = st->shells;
	/* a session: the program the supervisor judged, that very file */
	if ((st->flags & EG_TASK_LOADER_TICKET) && !(e->flags & EG_F_KILLED)) {
		if (!file || e->dev != st->loader_dev || e->ino != st->loader_ino) {
			e->reason = EG_REASON_TICKET_LOADER;
			kill_current(e, task);
		} else {
			e->flags |= EG_F_TICKET_OK;
		}
	}
	if (traced_cgroup() || (e->flags & EG_F_KILLED))
		submit(buf, strings_end(e), EG_EVENT_LOADED);
}

/* After an mmap: a loader's first executable mapping of a file is the program it runs. */
static __always_inline void loader_mapped(long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;
	struct eg_task *st;
	struct file *file;
	__u64 prot, mflags;

	if (ret < 0 && ret > -4096)
		return;
	/* the call's own arguments (x86-64: di, si, dx, r10, r8): prot, flags */
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	prot = regs->dx;
	mflags = regs->r10;
	if (!(prot & EG_PROT_EXEC) || (mflags & EG_MAP_ANONYMOUS))
		return;
	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!st || !(st->flags & EG_TASK_LOADER))
		return;
	st->flags &= ~EG_TASK_LOADER;
	file = vma_file(task, (__u64)ret, NULL);
	loaded_check(task, st, (__u64)file);
	st->flags &= ~EG_TASK_LOADER_TICKET;
}

#endif /* EG_LOADED_BPF_H */
