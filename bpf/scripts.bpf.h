/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The script behind an interpreter: found among the files exec released
 * (task_works) at sched_prepare_exec, kept in task storage, read back into
 * the exec record.
 */
#ifndef EG_SCRIPTS_BPF_H
#define EG_SCRIPTS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "paths.bpf.h"
#include "kfacts.bpf.h"

/*
 * fput() defers the final release to task work: a script's struct file is
 * on the exec'ing task's task_works list when sched_process_exec fires
 * (fs/file_table.c). The callback's address tells those entries apart.
 */
const volatile __u64 fput_addr = 0;	/* ____fput's address; 0: /proc/kallsyms does not name it */

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eg_script);
} scripts SEC(".maps");

/*
 * The scripts between the first and the interpreter of a '#!' chain
 * (s1 -> s2 -> ... -> interpreter: s2..), found with the first, read at
 * exec into the record's chain[] (map "chains", task storage).
 */
struct eg_chain_lvl {
	__u64 dev;
	__u64 ino;
	__u32 len;		/* bytes of path, leaf first */
	__u32 flags;		/* EG_CE_* */
	char path[EG_FILENAME_MAX];
};

struct eg_chain_store {
	__u32 n;		/* levels in lvl[], outermost first */
	__u32 cut;		/* more scripts than EG_CHAIN_MAX, or one unreadable */
	struct eg_chain_lvl lvl[EG_CHAIN_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eg_chain_store);
} chains SEC(".maps");

/* CO-RE flavors: fields renamed or moved between kernels. */
struct file___old {			/* before the 2023 struct file rework: f_rcuhead */
	struct callback_head f_rcuhead;
} __attribute__((preserve_access_index));

/* ---- the script behind an interpreter ------------------------------------ */

static long script_step(__u32 i, __u32 *slot)
{
	struct kfacts *fa = kf_get(*slot);
	struct callback_head *cb;
	struct kwalk *w;
	struct file *f;

	if (!fa)
		return 1;
	w = &fa->wk;
	cb = (struct callback_head *)w->cb;
	if (!cb)
		return 1;
	if ((__u64)BPF_CORE_READ(cb, func) == fput_addr) {
		if (bpf_core_field_exists(struct file, f_task_work))
			f = (struct file *)((char *)cb - bpf_core_field_offset(struct file, f_task_work));
		else
			f = (struct file *)((char *)cb - bpf_core_field_offset(struct file___old, f_rcuhead));
		/* opened by exec (open_exec: __FMODE_EXEC in f_flags); the list is newest first */
		if (BPF_CORE_READ(f, f_flags) & EG___FMODE_EXEC) {
			w->found = (__u64)f;
			__u32 at = w->n;

			barrier_var(at);
			if (at < EG_CHAIN_MAX + 1)
				w->files[at] = (__u64)f;
			w->n = at + 1;
		}
	}
	w->cb = (__u64)BPF_CORE_READ(cb, next);
	return 0;
}

/*
 * exec_binprm() replaced the script by its interpreter and fput() it; the
 * release waits on current->task_works, newest first, so the script the
 * caller named is the last exec-opened file there. At sched_prepare_exec
 * (Linux 6.10+) the scripts are the only such files; later, the old
 * image's files join them (and an io_uring cancel may run the list).
 */
/* The exec-opened files on task_works into slot's wk: files[], n, found (the oldest). */
static __always_inline void find_scripts(struct task_struct *task, __u32 max, __u32 slot)
{
	struct kfacts *f = kf_get(slot);

	if (!f)
		return;
	__builtin_memset(&f->wk, 0, sizeof(f->wk));
	if (!fput_addr)
		return;
	f->wk.cb = (__u64)BPF_CORE_READ(task, task_works);
	bpf_loop(max, script_step, &slot, 0);
}

/* What keep_scripts() kept for the task's exec goes (a record reads it back, or nothing does). */
static __always_inline void scripts_drop(struct task_struct *task)
{
	bpf_task_storage_delete(&scripts, task);
	bpf_task_storage_delete(&chains, task);
}

/*
 * At sched_prepare_exec of a '#!' exec (or at security_bprm_check of each
 * level after the first, before 6.10: exec has released every script
 * before it by then, and nothing else): the first script (the file the
 * caller named) into "scripts", the ones between it and the interpreter
 * into "chains". What an earlier exec left never stands for this one.
 */
static __noinline void keep_scripts(struct task_struct *task)
{
	__u32 slot = kf_slot(KSLOT_EXEC), flags = 0, k, n;
	struct eg_chain_store *ch;
	struct eg_script *sc;
	struct kfacts *fa;
	struct file *f;
	__u64 len, files[EG_CHAIN_MAX + 1];
	char *buf;

	find_scripts(task, 64, slot);
	fa = kf_get(slot);
	if (!fa)
		return;
	f = (struct file *)fa->wk.found;
	n = fa->wk.n;
	__builtin_memcpy(files, fa->wk.files, sizeof(files));
	buf = f ? scratch_get() : NULL;
	if (!buf) {
		if (f)
			COUNT(scratch_missing);
		scripts_drop(task);
		return;
	}
	sc = bpf_task_storage_get(&scripts, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!sc) {
		COUNT(storage_failed);
		return;
	}
	len = file_path(f, EG_EVENT_HDR, &flags, EG_F_SCRIPT_TRUNC, EG_F_SCRIPT_DELETED);
	eg_clamp(len, EG_FILENAME_MAX);
	if (len && bpf_probe_read_kernel(sc->path, len, buf + EG_EVENT_HDR))
		len = 0;
	sc->len = len;
	sc->flags = flags;
	sc->dev = inode_dev(BPF_CORE_READ(f, f_inode));
	sc->ino = BPF_CORE_READ(f, f_inode, i_ino);
	if (n < 2) {
		bpf_task_storage_delete(&chains, task);
		return;
	}
	ch = bpf_task_storage_get(&chains, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ch) {
		COUNT(storage_failed);
		/* the first script alone would pass for the whole chain: the record says the chain is cut */
		sc->flags |= EG_F_CHAIN_CUT;
		return;
	}
	ch->n = 0;
	ch->cut = n > EG_CHAIN_MAX + 1;
	if (n > EG_CHAIN_MAX + 1)
		n = EG_CHAIN_MAX + 1;
	/* files[] is newest first: files[n-1] is the first script, files[n-2] the next */
	for (k = 0; k < EG_CHAIN_MAX; k++) {
		struct eg_chain_lvl *lv;
		__u32 i;

		if (k + 2 > n)
			break;
		i = n - 2 - k;
		if (i > EG_CHAIN_MAX)
			break;
		f = (struct file *)files[i];
		if (!f)
			break;
		lv = &ch->lvl[k];
		flags = 0;
		len = file_path(f, EG_EVENT_HDR, &flags, EG_F_SCRIPT_TRUNC, EG_F_SCRIPT_DELETED);
		eg_clamp(len, EG_FILENAME_MAX);
		if (len && bpf_probe_read_kernel(lv->path, len, buf + EG_EVENT_HDR))
			len = 0;
		lv->len = len;
		lv->flags = ((flags & EG_F_SCRIPT_TRUNC) ? EG_CE_TRUNC : 0) |
			    ((flags & EG_F_SCRIPT_DELETED) ? EG_CE_DELETED : 0) |
			    ((flags & EG_F_ANON_FILE) ? EG_CE_ANON : 0) |
			    ((flags & EG_SC_USER_MOUNT) ? EG_CE_USER_MOUNT : 0);
		if (!len)
			ch->cut = 1;
		lv->dev = inode_dev(BPF_CORE_READ(f, f_inode));
		lv->ino = BPF_CORE_READ(f, f_inode, i_ino);
		ch->n = k + 1;
	}
}

/*
 * The script's path at scratch+off, from what keep_scripts() stored at
 * sched_prepare_exec (Linux 6.10+), or before 6.10 at each level of the
 * exec after a script's (fentry on security_bprm_check: the last one has
 * them all), where the kernel allows BPF trampolines. Without either the
 * script stays unresolved: by sched_process_exec the old image's files
 * sit on the same list and an io_uring cancel may have run it, so a guess
 * could name the wrong file. Returns the length (0: not found).
 */
static __noinline __u32 read_script(struct task_struct *task, char *buf, __u32 off,
				    struct eg_event *e)
{
	struct eg_script *sc;
	__u64 len, o = off;

	if (off > EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX)
		return 0;
	sc = bpf_task_storage_get(&scripts, task, 0, 0);
	if (!sc)
		return 0;
	len = sc->len;
	eg_clamp(len, EG_FILENAME_MAX);
	eg_clamp(o, EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX);
	if (len && bpf_probe_read_kernel(buf + o, len, sc->path))
		len = 0;
	e->flags |= sc->flags & (EG_F_SCRIPT_TRUNC | EG_F_SCRIPT_DELETED | EG_F_CHAIN_CUT);
	if (sc->flags & EG_SC_USER_MOUNT)
		e->flags2 |= EG_F2_SCRIPT_USER_MOUNT;
	e->script_dev = sc->dev;
	e->script_ino = sc->ino;
	bpf_task_storage_delete(&scripts, task);
	if (len)
		e->flags |= EG_F_SCRIPT_FOUND;
	return len;
}

static long chain_step(__u32 k, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct eg_chain_store *ch;
	struct eg_chain_lvl *lv;
	struct eg_chain_ent ent = {};
	struct kwalk *w;
	__u64 o, len;
	char *buf = scratch_get();

	if (!f || !buf || k >= EG_CHAIN_MAX)
		return 1;
	w = &f->wk;
	ch = (struct eg_chain_store *)w->found;
	if (!ch || k >= w->n)
		return 1;
	o = w->off;
	len = 0;
	if (bpf_probe_read_kernel(&ent.dev, sizeof(ent.dev), &ch->lvl[k].dev) ||
	    bpf_probe_read_kernel(&ent.ino, sizeof(ent.ino), &ch->lvl[k].ino) ||
	    bpf_probe_read_kernel(&len, sizeof(__u32), &ch->lvl[k].len) ||
	    bpf_probe_read_kernel(&ent.flags, sizeof(ent.flags), &ch->lvl[k].flags)) {
		w->fault = 1;
		return 1;
	}
	eg_clamp(len, EG_FILENAME_MAX);
	/* the chain's room in the record is EG_CHAIN_BYTES for all levels */
	if (o > EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX - sizeof(ent) ||
	    o - w->start + sizeof(ent) + len > EG_CHAIN_BYTES) {
		w->fault = 1;
		return 1;
	}
	eg_clamp(o, EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX - sizeof(ent));
	ent.len = len;
	if (bpf_probe_read_kernel(buf + o, sizeof(ent), &ent)) {
		w->fault = 1;
		return 1;
	}
	o += sizeof(ent);
	eg_clamp(o, EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX);
	lv = &ch->lvl[k];
	if (len && bpf_probe_read_kernel(buf + o, len, lv->path)) {
		w->fault = 1;
		return 1;
	}
	w->off = o + len;
	return 0;
}

/*
 * The middle scripts of a '#!' chain at scratch+off (struct eg_chain_ent and
 * its path, each), from what sched_prepare_exec stored. Returns the length.
 * A chain that does not fit is cut, and says so.
 */
static __noinline __u32 read_chain(struct task_struct *task, __u32 off, struct eg_event *e)
{
	__u32 slot = kf_slot(KSLOT_EXEC), n;
	struct eg_chain_store *ch;
	struct kfacts *f;

	ch = bpf_task_storage_get(&chains, task, 0, 0);
	f = kf_get(slot);
	if (!ch || !f)
		return 0;
	__builtin_memset(&f->wk, 0, sizeof(f->wk));
	f->wk.found = (__u64)ch;
	f->wk.n = ch->n;
	f->wk.off = off;
	f->wk.start = off;
	if (ch->cut)
		e->flags |= EG_F_CHAIN_CUT;
	bpf_loop(EG_CHAIN_MAX, chain_step, &slot, 0);
	bpf_task_storage_delete(&chains, task);
	f = kf_get(slot);
	if (!f)
		return 0;
	if (f->wk.fault)
		e->flags |= EG_F_CHAIN_CUT;
	n = f->wk.off - off;
	return n;
}

#endif /* EG_SCRIPTS_BPF_H */
