/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What a candidate rule reads beyond names and identities, only when it
 * needs it: path and cgroup globs, the task's cgroup path, argv tokens.
 */
#ifndef EG_KMATCH_BPF_H
#define EG_KMATCH_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"
#include "kmaps.bpf.h"
#include "kstrings.bpf.h"

/* ---- globs --------------------------------------------------------------------- */

/*
 * fnmatch(pat, s, 0) for patterns of literal bytes, '*' and '?' (the
 * compiler sends nothing else; '*' and '?' also match '/'): the two-pointer
 * walk with one backtrack point, one step per callback.
 */
static long glob_step(__u32 k, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kglob_st *w;
	char sc = 0, pc = 0;

	if (!f)
		return 1;
	w = &f->gl;
	if (!f->steps) {
		w->result = -1;
		return 1;
	}
	f->steps--;
	if (w->j < w->m)
		bpf_probe_read_kernel(&pc, 1, (const void *)(w->p + w->j));
	if (w->i >= w->n) {
		/* the subject is used up: only stars may be left */
		if (w->j < w->m && pc == '*') {
			w->j++;
			return 0;
		}
		w->result = w->j >= w->m;
		return 1;
	}
	bpf_probe_read_kernel(&sc, 1, (const void *)(w->s + w->i));
	if (w->j < w->m && pc == '*') {
		w->star = w->j + 1;
		w->mark = w->i;
		w->j++;
		return 0;
	}
	if (w->j < w->m && (pc == '?' || pc == sc)) {
		w->i++;
		w->j++;
		return 0;
	}
	if (w->star >= 0) {
		w->j = w->star;
		w->mark++;
		w->i = w->mark;
		return 0;
	}
	w->result = 0;
	return 1;
}

/*
 * Does glob id (in the current set) match the subject's first n bytes
 * (KS_PATH, KS_CGROUP) or the file's name (KS_BASE)? Out of steps: f->error,
 * and the judgement fails closed.
 */
__noinline int kglob_match(__u32 slot, __u32 id, __u32 sel, __u32 n)
{
	struct kfacts *f = kf_get(slot);
	struct eg_kglob_key gk;
	struct eg_kglob *g;
	const char *s;

	if (!f)
		return 0;
	gk.set = f->set;
	gk.id = id;
	g = bpf_map_lookup_elem(&kglobs, &gk);
	if (!g)
		return 0;
	if (sel == KS_CGROUP) {
		s = f->cgroup;
	} else if (sel == KS_BASE) {
		s = f->path + (f->base_off & (EG_FILENAME_MAX - 1));
		n = f->base_len;
	} else {
		s = f->path;
	}
	if (g->flags & EG_KG_LITERAL)
		return g->len == n && kmemeq(slot, s, g->pat, n);
	f->gl.s = (__u64)s;
	f->gl.p = (__u64)g->pat;
	f->gl.n = n;
	f->gl.m = g->len;
	f->gl.i = 0;
	f->gl.j = 0;
	f->gl.mark = 0;
	f->gl.star = -1;
	/* a walk that does not finish (the loop's own bound hit first) fails closed */
	f->gl.result = -1;
	bpf_loop(KGLOB_STEPS, glob_step, &slot, 0);
	f = kf_get(slot);
	if (!f)
		return 0;
	if (f->gl.result < 0) {
		f->error = 1;
		return 0;
	}
	return f->gl.result > 0;
}

/*
 * One of globs first..first+count-1 matches: the path (KS_PATH), or for
 * cgroups (KS_CGROUP) the task's cgroup or one of its ancestors ("/a/b"
 * covers /a/b and /a/b/c; a glob every cgroup below one it matches, as
 * eg_cgroup_under() says). One (glob, cut) pair per step.
 */
static long globs_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kglobs_st *w;
	__u32 cut, g;
	char c;

	if (!f)
		return 1;
	w = &f->gs;
	g = w->g;
	if (g >= w->count)
		return 1;
	if (w->sel != KS_CGROUP) {
		if (kglob_match(*slot, w->first + g, w->sel, w->n))
			goto hit;
		w->g = g + 1;
		return 0;
	}
	cut = w->cut;
	if (cut >= w->n) {
		/* the cgroup itself, then the next glob */
		if (kglob_match(*slot, w->first + g, KS_CGROUP, w->n))
			goto hit;
		w->g = g + 1;
		w->cut = 1;
		return 0;
	}
	w->cut = cut + 1;
	c = f->cgroup[cut & (EG_FILENAME_MAX - 1)];
	/* an ancestor ends before each '/' but the first */
	if (c == '/' && kglob_match(*slot, w->first + g, KS_CGROUP, cut))
		goto hit;
	return 0;
hit:
	f = kf_get(*slot);
	if (f)
		f->gs.matched = 1;
	return 1;
}

static __always_inline bool kglobs_any(__u32 slot, __u32 first, __u32 count, __u32 sel, __u32 n)
{
	struct kfacts *f = kf_get(slot);

	if (!f)
		return false;
	f->gs.first = first;
	f->gs.count = count;
	f->gs.sel = sel;
	f->gs.n = n;
	f->gs.g = 0;
	f->gs.cut = 1;
	f->gs.matched = 0;
	bpf_loop(1 << 22, globs_step, &slot, 0);
	f = kf_get(slot);
	if (!f)
		return false;
	/* out of loop steps before the last glob (a cgroup path's every ancestor, for each): cannot tell */
	if (!f->gs.matched && f->gs.g < f->gs.count)
		f->error = 1;
	return f->gs.matched;
}

/* ---- the cgroup ------------------------------------------------------------------ */

struct kernfs_node___old {			/* before 6.15 it was "parent" */
	struct kernfs_node *parent;
} __attribute__((preserve_access_index));

static long kn_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kernfs_node *kn, *up;
	__u64 pos;
	long n;

	if (!f)
		return 1;
	kn = (struct kernfs_node *)f->kn.kn;
	if (!kn)
		return 1;
	if (bpf_core_field_exists(struct kernfs_node, __parent))
		up = BPF_CORE_READ(kn, __parent);
	else
		up = BPF_CORE_READ((struct kernfs_node___old *)kn, parent);
	if (!up) {
		f->kn.kn = 0;	/* the root has no name of its own */
		return 1;
	}
	pos = f->kn.pos;
	if (pos > EG_FILENAME_MAX - EG_NAME_MAX) {
		f->kn.fault = 1;
		return 1;
	}
	eg_clamp(pos, EG_FILENAME_MAX - EG_NAME_MAX);
	n = bpf_probe_read_kernel_str(f->raw + pos, EG_NAME_MAX, BPF_CORE_READ(kn, name));
	if (n <= 0) {
		f->kn.fault = 1;
		return 1;
	}
	f->kn.pos = pos + n;
	f->kn.kn = (__u64)up;
	return 0;
}

/* The current task's cgroup v2 path into f->cgroup (cg_state 1), or unknown (2). */
__noinline int kf_read_cgroup(__u32 slot)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct kfacts *f = kf_get(slot);
	__u32 n;

	if (!f)
		return 0;
	f->cg_state = 2;
	f->kn.pos = 0;
	f->kn.fault = 0;
	f->kn.kn = (__u64)BPF_CORE_READ(task, cgroups, dfl_cgrp, kn);
	if (!f->kn.kn)
		return 0;
	bpf_loop(EG_CWD_DEPTH, kn_step, &slot, 0);
	f = kf_get(slot);
	if (!f || f->kn.fault || f->kn.kn)
		return 0;	/* unreadable, or deeper than a path holds */
	n = kf_forward(slot, f->kn.pos, 1);
	f = kf_get(slot);
	if (!f || !n)
		return 0;
	f->cg_len = n;
	f->cg_state = 1;
	return 0;
}

/* ---- argv tokens ------------------------------------------------------------------ */

static long args_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kargs *w;
	__u32 *groups;
	char last = 0;
	long n;

	if (!f)
		return 1;
	w = &f->ar;
	if (w->p >= w->end)
		return 1;
	__builtin_memset(f->key.s, 0, sizeof(f->key.s));
	n = bpf_probe_read_user_str(f->key.s, EG_KSTR_MAX, (const void *)w->p);
	if (n <= 0) {
		w->fault = 1;
		return 1;
	}
	if (n == EG_KSTR_MAX &&
	    (bpf_probe_read_user(&last, 1, (const void *)(w->p + EG_KSTR_MAX - 1)) || last)) {
		/* longer than any token: step over it a piece at a time */
		w->p += EG_KSTR_MAX - 1;
		w->skipping = 1;
		return 0;
	}
	w->p += n;
	if (w->skipping) {
		w->skipping = 0;
		w->index++;
		return 0;
	}
	if (w->index++ <= w->from)
		return 0;	/* argv[0], and a script interpreter's own words */
	f->key.set = f->set;
	f->key.kind = EG_KK_ARG;
	f->key.rule = w->rule;
	f->key.group = 0;
	f->key.a = 0;
	f->key.b = 0;
	/* the value: the rule's token groups this argument is in */
	groups = bpf_map_lookup_elem(&kmember, &f->key);
	if (groups)
		w->found |= *groups;
	return (w->found & w->all) == w->all;
}

/* Each of the rule's token groups has a whole argument in argv[from+1..]. */
static __always_inline bool kargs_match(__u32 slot, __u32 rule, __u32 groups)
{
	struct kfacts *f = kf_get(slot);

	if (!f || !groups || groups > EG_KARG_GROUPS || !f->arg_start)
		return false;
	f->ar.rule = rule;
	f->ar.all = (1u << groups) - 1;
	f->ar.p = f->arg_start;
	f->ar.end = f->arg_end;
	f->ar.from = f->args_from;
	f->ar.index = 0;
	f->ar.found = 0;
	f->ar.skipping = 0;
	f->ar.fault = 0;
	f->kflags |= EG_KF_ARGV_SCANNED;
	bpf_loop(EG_KARGS_SCAN, args_step, &slot, 0);
	f = kf_get(slot);
	if (!f)
		return false;
	if ((f->ar.found & f->ar.all) == f->ar.all)
		return true;
	/* not all of argv was read (more arguments than a scan takes, a fault): cannot tell */
	if (f->ar.p < f->ar.end || f->ar.fault) {
		f->kflags |= EG_KF_ARGS_CUT;
		f->error = 1;
	}
	return false;
}

#endif /* EG_KMATCH_BPF_H */
