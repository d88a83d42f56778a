/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The kernel judge's facts of an exec: from the record being built at
 * sched_process_exec (the file that runs, the script, the committed argv)
 * and from bprm at bprm_check_security, and the verdict on the record.
 */
#ifndef EG_KEXEC_BPF_H
#define EG_KEXEC_BPF_H

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

/* ---- kernel rules ------------------------------------------------------------ */

#define KP_LEAF		0	/* a leaf-first path */
#define KP_LEAF_DELETED	1	/* ... of an unlinked file: " (deleted)", as the daemon shows it */
#define KP_PLAIN	2	/* a string as it is: a file with no path, a script not found */

static const char deleted_suffix[] = " (deleted)";

/* The program's file for a judgement: path, name (what follows the last '/'). */
static __always_inline int kf_program(__u32 slot, const char *src, __u32 len, __u32 how)
{
	struct kfacts *f = kf_get(slot);
	__u64 n = len, pl;
	__s32 slash;
	long r;

	if (!f)
		return -1;
	eg_clamp(n, EG_FILENAME_MAX);
	if (how == KP_PLAIN) {
		r = bpf_probe_read_kernel_str(f->path, EG_FILENAME_MAX, src);
		if (r <= 0)
			return -1;
		f->path_len = r - 1;
		slash = last_slash(slot, f->path, r - 1);
		f = kf_get(slot);
		if (!f)
			return -1;
		f->base_off = slash + 1;
		f->base_len = f->path_len - f->base_off;
		return 0;
	}
	/* src NULL: the path is in raw already (a walk wrote it there) */
	if (src && n && bpf_probe_read_kernel(f->raw, n, src))
		return -1;
	pl = kf_forward(slot, n, 0);
	f = kf_get(slot);
	if (!f || !pl)
		return -1;
	f->path_len = pl;
	f->base_off = pl - f->cv.leaf;
	f->base_len = f->cv.leaf;
	if (how == KP_LEAF_DELETED) {
		eg_clamp(pl, EG_FILENAME_MAX);
		bpf_probe_read_kernel(f->path + pl, sizeof(deleted_suffix) - 1, deleted_suffix);
		f->path_len += sizeof(deleted_suffix) - 1;
		f->base_len += sizeof(deleted_suffix) - 1;
	}
	return 0;
}

/* The middle scripts in the record's chain[] (an upper bound will do: the window only grows). */
static __always_inline __u32 chain_levels(struct eg_event *e)
{
	return *(volatile __u16 *)&e->chain_len ? EG_CHAIN_MAX : 0;
}

static long skip_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kwalk *w;
	long n;

	if (!f)
		return 1;
	w = &f->wk;
	if (w->index >= w->left || w->p >= w->end)
		return 1;
	/* a word of 4095 bytes (4096 with its NUL) is the longest path a caller can spell */
	n = bpf_probe_read_kernel_str(f->tmp, EG_FILENAME_MAX, (const void *)w->p);
	n = eg_str_whole(n, (const char *)w->p, EG_FILENAME_MAX, false);
	if (!n)
		return 1;
	if (w->index && n == w->n && w->p + n <= w->end &&
	    kmemeq(*slot, (const void *)w->p, (const void *)w->cb, n)) {
		f = kf_get(*slot);
		if (f)
			f->wk.hit = f->wk.index;
		return 1;
	}
	f = kf_get(*slot);
	if (!f)
		return 1;
	f->wk.p += n;
	f->wk.index++;
	return 0;
}

/*
 * Where a script's own argv starts in the committed argv: the kernel made
 * it [interpreter, optional argument, (each middle script of a chain, and
 * its optional argument,) the script as spelled, the caller's arguments].
 * The first word after argv[0], among the first `words`, that is the
 * script as spelled (rq, rlen bytes with the NUL); 0 when none is (the
 * record's argv cut before it, or unreadable).
 */
static __always_inline __u32 script_skip(__u32 slot, const char *argv, __u32 argv_len,
					 const char *rq, __u32 rlen, __u32 words)
{
	struct kfacts *f = kf_get(slot);

	if (!f || !rlen || rlen > EG_FILENAME_MAX)
		return 0;
	__builtin_memset(&f->wk, 0, sizeof(f->wk));
	f->wk.p = (__u64)argv;
	f->wk.end = (__u64)argv + argv_len;
	f->wk.cb = (__u64)rq;
	f->wk.n = rlen;
	f->wk.left = words;
	bpf_loop(2 * (EG_CHAIN_MAX + 1) + 1, skip_step, &slot, 0);
	f = kf_get(slot);
	return f ? f->wk.hit : 0;
}

/*
 * A middle script of the record's '#!' chain (level k, outermost first) into
 * slot's facts, the rest of which kfacts_exec() filled. skip: where the
 * caller's argv starts (0: not known; then rules on argv cannot tell).
 */
__noinline int kfacts_chain(__u32 slot, __u32 k, __u32 skip)
{
	struct eg_chain_ent ent = {};
	struct kfacts *f = kf_get(slot);
	char *buf = scratch_get();
	struct eg_event *e;
	__u64 off, end;
	__u32 i, how;

	if (!f || !buf || k >= EG_CHAIN_MAX)
		return -1;
	e = (struct eg_event *)buf;
	off = EG_EVENT_HDR + *(volatile __u16 *)&e->filename_len + *(volatile __u16 *)&e->requested_len +
	      *(volatile __u16 *)&e->interp_len + *(volatile __u16 *)&e->script_len;
	end = off + *(volatile __u16 *)&e->chain_len;
	for (i = 0; i < EG_CHAIN_MAX; i++) {
		if (off + sizeof(ent) > end)
			return 1;
		eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX - sizeof(ent));
		if (bpf_probe_read_kernel(&ent, sizeof(ent), buf + off))
			return -1;
		if (i == k)
			break;
		off += sizeof(ent) + ent.len;
	}
	if (i != k || off + sizeof(ent) + ent.len > end)
		return 1;
	f->dev = ent.dev;
	f->ino = ent.ino;
	f->args_from = skip;
	if (!skip)
		f->flags |= KF_NO_ARGV;
	if (ent.flags & EG_CE_TRUNC)
		f->flags |= KF_PATH_CUT;
	else
		f->flags &= ~KF_PATH_CUT;
	if (ent.flags & EG_CE_USER_MOUNT)
		f->flags |= KF_USER_MOUNT;
	else
		f->flags &= ~KF_USER_MOUNT;
	how = (ent.flags & EG_CE_ANON) ? KP_PLAIN : (ent.flags & EG_CE_DELETED) ? KP_LEAF_DELETED : KP_LEAF;
	off += sizeof(ent);
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX - EG_FILENAME_MAX);
	if (kf_program(slot, buf + off, ent.len, how))
		return -1;
	f = kf_get(slot);
	if (f)
		f->rbase_len = 0;	/* how the '#!' line above spelled it is not known here */
	return 0;
}

/*
 * The facts of one program of the exec in the record (scratch), for
 * kjudge() at sched_process_exec: prog 0 is the file that runs with the
 * committed argv; prog 1, for a script, the script with its caller's
 * argv; prog 2.., the middle scripts of a '#!' chain (outermost first),
 * judged with the caller's argv as well (where each one's own words start
 * in argv is not known here: a rule on them reads the caller's
 * arguments). Returns 0, 1 when there is no such program, -1 on error.
 */
__noinline int kfacts_exec(__u32 prog)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__u32 slot = kf_slot(KSLOT_EXEC), flen, rlen, ilen, slen, skip, how;
	struct eg_event *e;
	struct kfacts *f;
	char *buf = scratch_get();
	const char *rq;
	__u64 off;

	f = kf_get(slot);
	if (!buf || !f)
		return -1;
	e = (struct eg_event *)buf;
	flen = *(volatile __u16 *)&e->filename_len;
	rlen = *(volatile __u16 *)&e->requested_len;
	ilen = *(volatile __u16 *)&e->interp_len;
	slen = *(volatile __u16 *)&e->script_len;
	off = EG_EVENT_HDR + flen;
	eg_clamp(off, EG_EVENT_HDR + EG_FILENAME_MAX);
	rq = buf + off;
	f->flags = (e->flags & EG_F_DEPTH_KNOWN) ? 0 : KF_DEPTH_UNKNOWN;
	/* a path cut short (too deep, too long) or unreadable: path rules cannot tell */
	if (e->flags & (EG_F_FILENAME_FAULT |
			(prog ? ((e->flags & EG_F_SCRIPT_FOUND) ? EG_F_SCRIPT_TRUNC : EG_F_REQUESTED_TRUNC)
			      : EG_F_FILENAME_TRUNC)))
		f->flags |= KF_PATH_CUT;
	f->depth = e->depth < 0 ? 0 : e->depth;
	f->cdepth = e->container_depth;
	if (e->flags & EG_F_CONTAINER)
		f->flags |= KF_CONTAINER;
	f->euid = e->euid;
	f->mnt_ns = e->mnt_ns;
	f->context = e->context;
	f->arg_start = BPF_CORE_READ(mm, arg_start);
	f->arg_end = BPF_CORE_READ(mm, arg_end);
	f->kflags = 0;
	if (!prog) {
		f->cg_state = 0;
		/* an overlay view: the file behind it is the one a literal path names */
		f->dev = (e->flags & EG_F_BACKING) ? e->backing_dev : e->dev;
		f->ino = (e->flags & EG_F_BACKING) ? e->backing_ino : e->ino;
		f->args_from = 0;
		if (e->flags2 & EG_F2_USER_MOUNT)
			f->flags |= KF_USER_MOUNT;
		how = (e->flags & EG_F_ANON_FILE) ? KP_PLAIN :
		      (e->flags & EG_F_FILE_DELETED) ? KP_LEAF_DELETED : KP_LEAF;
		if (kf_program(slot, buf + EG_EVENT_HDR, flen, how))
			return -1;
		/* a script's interpreter is judged by the name its '#!' line spells */
		if (e->flags & EG_F_SCRIPT) {
			off += rlen;
			eg_clamp(off, EG_EVENT_HDR + 2 * EG_FILENAME_MAX);
			kf_spelled(slot, buf + off, ilen);
		} else {
			kf_spelled(slot, rq, rlen);
		}
		return 0;
	}
	if (!(e->flags & EG_F_SCRIPT))
		return 1;
	off = EG_EVENT_HDR + flen + rlen + ilen + slen + *(volatile __u16 *)&e->chain_len +
	      *(volatile __u16 *)&e->cwd_len;
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);
	/* each level of a chain put its name (and maybe an argument) before the caller's */
	skip = script_skip(slot, buf + off, e->argv_len, rq, rlen, 2 * (chain_levels(e) + 1) + 1);
	f = kf_get(slot);
	if (!f)
		return -1;
	if (prog >= 2)
		return kfacts_chain(slot, prog - 2, skip);
	/*
	 * Where its own argv starts cannot be told: the script is judged all
	 * the same (its file, path and name), a rule on its argv cannot tell
	 * (an error), as for the chain's scripts. Left out, it had no verdict.
	 */
	f->args_from = skip;
	if (!skip)
		f->flags |= KF_NO_ARGV;
	if (e->flags & EG_F_SCRIPT_FOUND) {
		f->dev = e->script_dev;
		f->ino = e->script_ino;
		if (e->flags2 & EG_F2_SCRIPT_USER_MOUNT)
			f->flags |= KF_USER_MOUNT;
		off = EG_EVENT_HDR + flen + rlen + ilen;
		eg_clamp(off, EG_EVENT_HDR + 3 * EG_FILENAME_MAX);
		how = (e->flags & EG_F_SCRIPT_DELETED) ? KP_LEAF_DELETED : KP_LEAF;
		if (kf_program(slot, buf + off, slen, how))
			return -1;
	} else {
		/* a path only as spelled names nothing an allow by path may trust */
		f->dev = 0;
		f->ino = 0;
		f->flags |= KF_USER_MOUNT;
		if (kf_program(slot, rq, rlen, KP_PLAIN))
			return -1;
	}
	kf_spelled(slot, rq, rlen);
	return 0;
}

/*
 * The kernel's verdict on the exec in the record, at sched_process_exec:
 * the file that runs, and for a script the script too; the stronger
 * verdict stands. Fills e->k* and returns the decision (EG_KD_*).
 */
static __always_inline int kjudge_exec(struct eg_event *e)
{
	__u32 slot = kf_slot(KSLOT_EXEC), rule = 0, kfl = 0, seq = 0, rank = KRANK_ERROR, p, seq0 = 0;
	struct kfacts *f;
	int d, d2, r;

	d = kfacts_exec(0) ? EG_KD_ERROR : kjudge(slot);
	f = kf_get(slot);
	/* the set that judged, an error too: a verdict always names its rules (kseq) */
	seq = kstate_seq();
	if (f && d != EG_KD_ERROR) {
		rule = f->out_rule;
		kfl = f->kflags;
		seq = f->seq;
		seq0 = f->seq;
		rank = f->out_rank;
	}
	/* the strongest verdict stands; the file that runs keeps a tie, then the outer script */
	for (p = 1; p < 2 + EG_CHAIN_MAX && d != EG_KD_ERROR && (e->flags & EG_F_SCRIPT); p++) {
		if (p >= 2 && !*(volatile __u16 *)&e->chain_len)
			break;
		r = kfacts_exec(p);
		d2 = r < 0 ? EG_KD_ERROR : r ? EG_KD_NONE : kjudge(slot);
		/* a rule that waits for argv this level cannot give: it cannot be told */
		if (d2 == KJ_DEFER)
			d2 = EG_KD_ERROR;
		f = kf_get(slot);
		/*
		 * A reload switched sets between two levels: the strongest of a
		 * verdict from each policy could allow what both deny (one the
		 * script, the other its interpreter). Neither policy's: refused.
		 */
		if (!r && d2 != EG_KD_ERROR && (!f || f->seq != seq0)) {
			COUNT(kretries);
			d2 = EG_KD_ERROR;
		}
		if (d2 == EG_KD_ERROR) {
			d = d2;
			rule = 0;
		} else if (f && d2 != EG_KD_NONE &&
			   (f->out_rank > rank || (d == EG_KD_BYPASS && d2 != EG_KD_BYPASS))) {
			/* a bypassed interpreter bypasses nothing of its script: the script's verdict, and its limits */
			d = d2;
			rule = f->out_rule;
			kfl = f->kflags | (p == 1 ? EG_KF_SCRIPT_RULE : EG_KF_CHAIN_RULE);
			seq = f->seq;
			rank = f->out_rank;
		}
		if (r > 0 && p >= 2)
			break;
	}
	/*
	 * A chain longer than the record holds: its missing levels cannot be
	 * judged; nor an overlay view whose file behind it was not found, nor
	 * what a 32-bit loader run as the command maps.
	 */
	if (d != EG_KD_ERROR &&
	    ((e->flags & EG_F_CHAIN_CUT) || (e->flags2 & (EG_F2_BACKING_UNKNOWN | EG_F2_LOADER_32)))) {
		d = EG_KD_ERROR;
		rule = 0;
	}
	e->kdecision = d;
	e->krule = rule;
	e->kflags = kfl;
	e->klayer = EG_KL_KILL;
	e->kseq = seq;
	return d;
}


/* ---- agent contexts --------------------------------------------------------------- */

/*
 * An interpreter's script given as its argument (`node /usr/lib/.../cli.js`):
 * the first argument after argv[0] that does not start with '-', when it is
 * an absolute path, as the facts of a program named that (no identity: a
 * string); from argument from on (1: after argv[0]; after a loader's
 * program: `ld.so /usr/bin/node cli.js`). Or, at > 0, argument at, whatever
 * it looks like: the program a dynamic loader was asked for (`ld.so
 * ./agent`). 0, or 1 when there is none.
 */
#define ARGWORD_AT_MAX	64	/* the loader's options it skips: loader.bpf.h's LDR_ARGS_SCAN */

static long argword_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kwalk *w;
	char c = 0;
	long n;

	if (!f)
		return 1;
	w = &f->wk;
	if (w->index >= (w->start ? ARGWORD_AT_MAX : w->skip + 7) || w->p >= w->end)
		return 1;
	n = bpf_probe_read_user_str(f->tmp, EG_FILENAME_MAX, (const void *)w->p);
	n = eg_str_whole(n, (const char *)w->p, EG_FILENAME_MAX, true);
	if (!n)
		return 1;
	bpf_probe_read_kernel(&c, 1, f->tmp);
	if (w->start) {
		if (w->index++ == w->start) {
			w->hit = c ? w->index - 1 : 0;
			w->found = w->p;
			return 1;
		}
	} else if (w->index++ >= w->skip && c != '-') {
		w->hit = c == '/' ? w->index - 1 : 0;
		w->found = w->p;
		return 1;
	}
	w->p += n;
	return 0;
}

__noinline int kfacts_argscript(__u32 slot, __u32 word, __u32 from)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	struct kfacts *f = kf_get(slot);
	__u32 at;

	if (!f)
		return -1;
	__builtin_memset(&f->wk, 0, sizeof(f->wk));
	f->wk.p = BPF_CORE_READ(mm, arg_start);
	f->wk.end = BPF_CORE_READ(mm, arg_end);
	f->wk.start = word;
	f->wk.skip = from;
	bpf_loop(ARGWORD_AT_MAX + 8, argword_step, &slot, 0);
	f = kf_get(slot);
	if (!f || !f->wk.hit)
		return 1;
	at = f->wk.hit;
	if (kf_program(slot, (const char *)f->tmp, EG_FILENAME_MAX, KP_PLAIN))
		return -1;
	f = kf_get(slot);
	if (!f)
		return -1;
	f->dev = 0;
	f->ino = 0;
	f->args_from = at;
	f->rbase_len = 0;
	f->flags &= ~(KF_PATH_CUT | KF_NO_ARGV);
	return 0;
}

/*
 * Whether only root could have made file what it is: owned by root and
 * written by no one else. A user copies a program as their own file; a
 * root-owned one cannot be linked elsewhere by a user (protected_hardlinks)
 * nor changed.
 */
static __always_inline bool kfile_roots(struct file *file)
{
	struct inode *inode = BPF_CORE_READ(file, f_inode);

	return inode && !BPF_CORE_READ(inode, i_uid.val) && !(BPF_CORE_READ(inode, i_mode) & 0022);
}

/*
 * The context an exec enters: the first of the policy's contexts one of
 * whose identities a program of the exec matches (the file, a script, a
 * chain's scripts, an interpreter's script argument, the program a dynamic
 * loader run as the command was asked for, by the name it was asked for,
 * and an interpreter's script argument after it);
 * 0: none. What the identities read is the exec's own, as for any
 * judgement. A name spelled can only put a task in a context, never take
 * it out of one: a task in a context already (the record's, from its
 * parent) is moved only by the program the kernel opened, or later by the
 * file a loader maps, and only one root made (kfile_roots()); a script,
 * an interpreter's argument
 * or the name a loader was asked for would let any task in an agent's
 * context leave its rules for another's, and start its depth again.
 */
__noinline int kcontext_exec(void)
{
	__u32 slot = kf_slot(KSLOT_EXEC), set, p, n = 5 + EG_CHAIN_MAX, id = 0;
	struct eg_event *ev = (struct eg_event *)scratch_get();
	struct eg_kconf *c;
	struct kfacts *f;
	int r, d;

	set = EG_KSET_OF(kstate_seq());
	c = bpf_map_lookup_elem(&kconf, &set);
	if (!c || !c->n_ident || !ev)
		return 0;
	/*
	 * From one context to another: only by the image itself, a file only
	 * root could have put there (kfile_roots()). A copy the agent made of
	 * another agent's program (or a script it wrote) would take it out of
	 * its own context's rules and reset its limits.
	 */
	if (ev->context)
		n = kfile_roots(BPF_CORE_READ(bpf_get_current_task_btf(), mm, exe_file)) ? 1 : 0;
	for (p = 0; p < n && !id; p++) {
		if (p < 2 + EG_CHAIN_MAX) {
			r = kfacts_exec(p);
		} else if (p == 2 + EG_CHAIN_MAX) {
			/* the interpreter's own name says whether its argument is a script */
			f = kf_get(slot);
			if (!f || kfacts_exec(0) || !kf_base_named(f, &interps))
				continue;
			r = kfacts_argscript(slot, 0, 1);
		} else {
			/* a loader's program: the file it maps is judged then (loaded.bpf.h); its context starts here */
			struct eg_event *e = (struct eg_event *)scratch_get();
			__u32 at;

			if (!e)
				break;
			at = e->loader_arg;
			if (!(e->flags & EG_F_LOADER) || !at || at >= ARGWORD_AT_MAX || kfacts_exec(0))
				break;
			r = kfacts_argscript(slot, at, 0);
			/* ... and an interpreter it was asked for: its script, as for the interpreter's own exec */
			if (!r && p == 4 + EG_CHAIN_MAX) {
				f = kf_get(slot);
				if (!f || !kf_base_named(f, &interps) || kfacts_exec(0))
					break;
				r = kfacts_argscript(slot, 0, at + 1);
			}
		}
		if (r)
			continue;	/* no such program (or unreadable: no identity is claimed from it) */
		f = kf_get(slot);
		if (!f)
			break;
		f->identities = 1;
		d = kjudge(slot);
		f = kf_get(slot);
		if (!f)
			break;
		f->identities = 0;
		if (d == EG_KD_ALLOW && f->out_rule)
			id = f->out_rule - 1;
	}
	return id < EG_CONTEXTS_MAX ? id : 0;
}

/* A context's limits: true when an exec at that depth in it, after that many shells in a row, goes past them. */
static __always_inline bool kctx_over(__u32 ctx, __s32 depth, __u32 shells)
{
	__u32 key = EG_KSET_OF(kstate_seq()) * EG_CONTEXTS_MAX + (ctx & (EG_CONTEXTS_MAX - 1));
	struct eg_kctx *x;

	if (!ctx)
		return false;
	x = bpf_map_lookup_elem(&kctx, &key);
	if (!x)
		return false;
	return (x->max_depth >= 0 && depth > x->max_depth) ||
	       (x->max_shells >= 0 && shells > (__u32)x->max_shells);
}

/* The exec in the record goes past its context's limits. */
static __always_inline bool kcontext_over(struct eg_event *e)
{
	return kctx_over(e->context, e->context_depth, e->shells);
}

/* ---- bprm_check_security: refuse before the exec (BPF LSM) ------------------ */

/*
 * The facts of a file (its identity, path and name) and of the current
 * task (effective uid, mount namespace) for kjudge() in slot; the caller
 * adds the depths, argv and the name as spelled.
 */
__noinline int kfacts_file(__u32 slot, __u64 file_addr)
{
	struct file *file = (struct file *)file_addr;
	struct task_struct *task = bpf_get_current_task_btf();
	struct vfsmount *mnt = BPF_CORE_READ(file, f_path.mnt);
	struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
	struct kfacts *f = kf_get(slot);
	struct path_walk w;
	__u32 n;
	long r;

	if (!f)
		return -1;
	f->flags = 0;
	f->euid = BPF_CORE_READ(task, cred, euid.val);
	f->mnt_ns = BPF_CORE_READ(task, nsproxy, mnt_ns, ns.inum);
	f->dev = inode_dev(BPF_CORE_READ(file, f_inode));
	f->ino = BPF_CORE_READ(file, f_inode, i_ino);
	f->arg_start = 0;
	f->arg_end = 0;
	f->args_from = 0;
	f->cg_state = 0;
	f->kflags = 0;
	f->depth = 0;
	f->cdepth = 0;
	f->rbase_len = 0;
	/* a file mapped through overlayfs (a container's) is its layer's: judged by the path mapped */
	if (mount_internal(mnt) && !backing_user_path(file, &d, &mnt)) {
		r = bpf_probe_read_kernel_str(f->path, EG_NAME_MAX, BPF_CORE_READ(d, d_name.name));
		if (r <= 0)
			return -1;
		f->path_len = r - 1;
		f->base_off = 0;
		f->base_len = r - 1;
		return 0;
	}
	PATH_WALK(w, d, mnt, NULL, NULL, 0, EG_F_FILENAME_TRUNC, EG_F_FILENAME_FAULT, EG_F_FILE_DELETED);
	w.kslot = slot + 1;
	n = read_path(&w);
	if (w.flags & EG_F_FILENAME_FAULT)
		return -1;
	if (kf_program(slot, NULL, n, (w.flags & EG_F_FILE_DELETED) ? KP_LEAF_DELETED : KP_LEAF))
		return -1;
	f = kf_get(slot);
	if (!f)
		return -1;
	if (w.flags & EG_F_FILENAME_TRUNC)
		f->flags |= KF_PATH_CUT;
	if (on_user_mount(mnt))
		f->flags |= KF_USER_MOUNT;
	return 0;
}

/*
 * The depths of the current task's next image (next: 1) or of its current
 * one (0), as the tracer will count them at exec, into slot's facts.
 */
static __always_inline void kf_depths(__u32 slot, struct eg_task *st, __u32 next)
{
	struct kfacts *f = kf_get(slot);
	__u32 pidns;

	if (!f)
		return;
	if (st && (st->flags & EG_TASK_KNOWN)) {
		f->depth = st->depth + next < 0 ? 0 : st->depth + next;
		if (!(st->flags & EG_TASK_DEPTH_KNOWN))
			f->flags |= KF_DEPTH_UNKNOWN;
	} else {
		f->flags |= KF_DEPTH_UNKNOWN;
	}
	/* the context the exec runs in (entering one is seen at exec: it needs the argv) */
	f->context = st ? st->context : 0;
	f->ctx_depth = st && st->context ? st->context_depth + next : 0;
	pidns = task_pid_ns(bpf_get_current_task_btf());
	if (pidns && pidns != host_pid_ns) {
		f->flags |= KF_CONTAINER;
		f->cdepth = container_depth_of(st, bpf_get_current_task_btf(), next);
	}
}

/* The facts of the program bprm->file is now, for kjudge() in slot. */
__noinline int kfacts_bprm(__u32 slot, __u64 bprm_addr)
{
	struct linux_binprm *bprm = (struct linux_binprm *)bprm_addr;
	struct task_struct *task = bpf_get_current_task_btf();
	struct file *file = BPF_CORE_READ(bprm, file);
	struct kfacts *f;
	umode_t mode;
	long r;

	if (kfacts_file(slot, (__u64)file))
		return -1;
	f = kf_get(slot);
	if (!f)
		return -1;
	mode = BPF_CORE_READ(file, f_inode, i_mode);
	/* the new credentials are computed after this hook: a set-id file's euid is not known */
	f->flags |= KF_NO_ARGV | ((mode & (04000 | 02000)) ? KF_NO_UID : 0);
	kf_depths(slot, bpf_task_storage_get(&tasks, task, 0, 0), 1);
	f = kf_get(slot);
	if (!f)
		return -1;
	/* the name as spelled: bprm->interp is the path, or the '#!' line's interpreter */
	f->ctx_shells = 0;
	if (f->context && kf_base_named(f, &shells)) {
		struct eg_task *st = bpf_task_storage_get(&tasks, task, 0, 0);

		f->ctx_shells = st ? st->shells + 1 : 1;
	}
	r = bpf_probe_read_kernel_str(f->tmp, EG_FILENAME_MAX, BPF_CORE_READ(bprm, interp));
	if (r > 0)
		kf_spelled(slot, f->tmp, r);
	else
		f->rbase_len = 0;
	return 0;
}

#endif /* EG_KEXEC_BPF_H */
