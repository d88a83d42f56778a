/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Kernel rules: the policy's first-match evaluation over the maps the
 * policy compiler wrote (userspace/enforce/compile.c; ABI in execgate.h).
 *
 * A judgement judges one program: a file (its resolved path, name and
 * identity), the name its caller spelled, the task's effective uid, depth,
 * cgroup and the argv the program gets. Candidates come from hash lookups
 * (the file's name, the spelled name, the file's identity) plus the list
 * of rules no key can rule out; each candidate is checked whole and the
 * lowest-numbered match wins, as the policy's first match does. Globs,
 * cgroups and argv tokens are read only for candidates that need them.
 *
 * The facts live in a per-CPU buffer (kfacts.bpf.h). Loops are bpf_loop callbacks and the heavy
 * functions are global, so each is verified once whoever calls it; they
 * take the slot number and look the buffer up themselves. Every loop keeps
 * its state in that buffer too, not on the stack: the stack of a whole
 * call chain is 512 bytes on older kernels, and a counter the verifier
 * reads back from a map is one it does not follow value by value.
 */
#ifndef EG_KJUDGE_BPF_H
#define EG_KJUDGE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_KSETS * EG_KRULES_MAX);
	__type(key, __u32);
	__type(value, struct eg_krule);
} krules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EG_KINDEX_MAX);
	__type(key, struct eg_kkey);
	__type(value, struct eg_kcands);
} kindex SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EG_KMEMBER_MAX);
	__type(key, struct eg_kkey);
	__type(value, __u32);		/* 1; EG_KK_ARG: a bit per token group holding the argument */
} kmember SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EG_KGLOBS_MAX);
	__type(key, struct eg_kglob_key);
	__type(value, struct eg_kglob);
} kglobs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_KSETS);
	__type(key, __u32);
	__type(value, struct eg_kconf);
} kconf SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_kstate);
} kstate SEC(".maps");

/* Each context's limits and name, per set (key: set * EG_CONTEXTS_MAX + id). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_KSETS * EG_CONTEXTS_MAX);
	__type(key, __u32);
	__type(value, struct eg_kctx);
} kctx SEC(".maps");

static __always_inline struct eg_kstate *kstate_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&kstate, &zero);
}

/* The set in force now (eg_kstate.seq); 0: none. */
static __always_inline __u32 kstate_seq(void)
{
	struct eg_kstate *s = kstate_get();

	return s ? *(volatile __u32 *)&s->seq : 0;
}

/* The set in force holds the policy's rules (not only its contexts' identities). */
static __always_inline bool krules_commands(void)
{
	__u32 set = EG_KSET_OF(kstate_seq());
	struct eg_kconf *c = bpf_map_lookup_elem(&kconf, &set);

	return c && (c->flags & EG_KC_RULES);
}

/* Kernel rules are loaded. */
static __always_inline bool krules_loaded(void)
{
	struct eg_kstate *s = kstate_get();

	return s && s->seq;
}

/* The set in force acts on what it denies (else it only judges and reports). */
static __always_inline bool kenforcing(void)
{
	struct eg_kstate *st = kstate_get();
	struct eg_kconf *c;
	__u32 set, seq;

	if (!st)
		return false;
	seq = *(volatile __u32 *)&st->seq;
	if (!seq)
		return false;
	set = EG_KSET_OF(seq);
	c = bpf_map_lookup_elem(&kconf, &set);
	return c && (c->flags & EG_KC_ENFORCE);
}

/* ---- strings ----------------------------------------------------------------- */

static __always_inline void key_init(struct kfacts *f, __u32 kind, __u32 rule, __u32 group)
{
	__builtin_memset(&f->key, 0, sizeof(f->key));
	f->key.set = f->set;
	f->key.kind = kind;
	f->key.rule = rule;
	f->key.group = group;
}

/*
 * key.s = src[0..len) (kernel memory), the rest 0. False for a string no
 * key holds (EG_KSTR_MAX or longer: no rule names one).
 */
static __always_inline bool key_str(struct kfacts *f, const char *src, __u32 len)
{
	__u64 n = len;

	if (n >= EG_KSTR_MAX)
		return false;
	if (!n)
		return true;
	eg_clamp(n, EG_KSTR_MAX - 1);
	return !bpf_probe_read_kernel(f->key.s, n, src);
}

static long conv_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kconv *w;
	__u64 off, n, at;
	char *dst;
	long r;

	if (!f)
		return 1;
	w = &f->cv;
	off = w->off;
	if (off >= w->len || off >= EG_FILENAME_MAX)
		return 1;
	eg_clamp(off, EG_FILENAME_MAX - 1);
	r = bpf_probe_read_kernel_str(f->tmp, EG_KSTR_MAX, f->raw + off);
	if (r <= 0)
		return 1;
	w->off = off + r;
	n = r - 1;		/* without its NUL */
	if (!n)
		return 0;	/* the kernel has no empty names: a stray NUL adds no "//" */
	if (!w->leaf)
		w->leaf = n;
	if (w->end < n + 1 || w->end > EG_FILENAME_MAX)
		return 1;
	at = w->end - n;
	eg_clamp(at, EG_FILENAME_MAX - 1);
	eg_clamp(n, EG_KSTR_MAX - 1);
	dst = w->cgroup ? f->cgroup : f->path;
	bpf_probe_read_kernel(dst + at, n, f->tmp);
	dst[(at - 1) & (EG_FILENAME_MAX - 1)] = '/';
	w->end = at - 1;
	return 0;
}

/*
 * raw[0..len) holds components leaf first, each NUL terminated ("c\0b\0a\0"
 * is /a/b/c); writes them root first in path or cgroup and returns the
 * length, "/" alone for none; f->cv.leaf is the leaf's length. As the
 * daemon rebuilds paths (trace/record.c), so both judge the same string.
 */
static __always_inline __u32 kf_forward(__u32 slot, __u32 len, __u32 cgroup)
{
	struct kfacts *f = kf_get(slot);
	__u32 n = len, end;

	if (!f)
		return 0;
	if (n > EG_FILENAME_MAX)
		n = EG_FILENAME_MAX;
	f->cv.off = 0;
	f->cv.len = n;
	f->cv.end = n;
	f->cv.leaf = 0;
	f->cv.cgroup = cgroup;
	bpf_loop(EG_CWD_DEPTH + 1, conv_step, &slot, 0);
	f = kf_get(slot);
	if (!f)
		return 0;
	end = f->cv.end;
	if (end == n) {			/* no component */
		if (cgroup)
			f->cgroup[0] = '/';
		else
			f->path[0] = '/';
		return 1;
	}
	if (end) {
		/* stray NULs left a gap at the front: move the path down */
		__u64 from = end, k = n - end;

		eg_clamp(from, EG_FILENAME_MAX - 1);
		eg_clamp(k, EG_FILENAME_MAX - 1);
		if (cgroup) {
			bpf_probe_read_kernel(f->tmp, k, f->cgroup + from);
			bpf_probe_read_kernel(f->cgroup, k, f->tmp);
		} else {
			bpf_probe_read_kernel(f->tmp, k, f->path + from);
			bpf_probe_read_kernel(f->path, k, f->tmp);
		}
		return k;
	}
	return n;
}

static long slash_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	__u32 at = i * 8, k;
	__u64 x = 0;

	if (!f || at >= f->sl.n)
		return 1;
	bpf_probe_read_kernel(&x, 8, (const void *)(f->sl.s + at));
	for (k = 0; k < 8; k++)
		if (at + k < f->sl.n && ((x >> (k * 8)) & 0xff) == '/')
			f->sl.last = at + k;
	return 0;
}

/* The last '/' in s[0..n) (kernel memory), -1 if none. */
static __always_inline __s32 last_slash(__u32 slot, const char *s, __u32 n)
{
	struct kfacts *f = kf_get(slot);

	if (!f)
		return -1;
	f->sl.s = (__u64)s;
	f->sl.n = n;
	f->sl.last = -1;
	bpf_loop(EG_FILENAME_MAX / 8, slash_step, &slot, 0);
	f = kf_get(slot);
	return f ? f->sl.last : -1;
}

static long cmp8_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	__u64 x = 0, y = 0, mask = ~0ull;
	__u32 at = i * 8, left;

	if (!f || at >= f->cm.len)
		return 1;
	left = f->cm.len - at;
	if (left < 8)
		mask = (1ull << (left * 8)) - 1;
	if (bpf_probe_read_kernel(&x, 8, (const void *)(f->cm.a + at)) ||
	    bpf_probe_read_kernel(&y, 8, (const void *)(f->cm.b + at)) || ((x ^ y) & mask)) {
		f->cm.differ = 1;
		return 1;
	}
	return 0;
}

/* a[0..len) == b[0..len), kernel memory (eight bytes a step) */
static __always_inline bool kmemeq(__u32 slot, const void *a, const void *b, __u32 len)
{
	struct kfacts *f = kf_get(slot);

	if (!f)
		return false;
	f->cm.a = (__u64)a;
	f->cm.b = (__u64)b;
	f->cm.len = len;
	f->cm.differ = 0;
	bpf_loop(EG_TICKET_ARGV_MAX / 8, cmp8_step, &slot, 0);
	f = kf_get(slot);
	return f && !f->cm.differ;
}

/*
 * The name the caller spelled, s[0..n) with n counting a NUL at the end
 * (a kernel string copied whole): its last component goes to f->rbase
 * unless it equals the file's own name.
 */
static __always_inline void kf_spelled(__u32 slot, const char *s, __u32 n)
{
	struct kfacts *f = kf_get(slot);
	__u32 from, len;
	__s32 slash;
	char c = 1;

	if (!f)
		return;
	f->rbase_len = 0;
	if (!n || n > EG_FILENAME_MAX)
		return;
	bpf_probe_read_kernel(&c, 1, s + n - 1);
	if (!c)
		n--;		/* the NUL */
	if (!n)
		return;
	slash = last_slash(slot, s, n);
	from = slash + 1;
	if (from >= n)
		return;
	len = n - from;
	if (len >= EG_KSTR_MAX)
		return;
	f = kf_get(slot);
	if (!f)
		return;
	bpf_probe_read_kernel(f->rbase, len & (EG_KSTR_MAX - 1), s + from);
	if (len == f->base_len &&
	    kmemeq(slot, f->rbase, f->path + (f->base_off & (EG_FILENAME_MAX - 1)), len))
		return;
	f = kf_get(slot);
	if (f)
		f->rbase_len = len;
}

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
	return f && f->gs.matched;
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

/* ---- one rule ---------------------------------------------------------------------- */

static __always_inline bool kmember_str(struct kfacts *f, __u32 kind, __u32 rule, const char *s,
					__u32 n)
{
	key_init(f, kind, rule, 0);
	if (!key_str(f, s, n))
		return false;
	return bpf_map_lookup_elem(&kmember, &f->key);
}

static __always_inline bool kmember_id(struct kfacts *f, __u32 kind, __u32 rule, __u64 a, __u64 b)
{
	key_init(f, kind, rule, 0);
	f->key.a = a;
	f->key.b = b;
	return bpf_map_lookup_elem(&kmember, &f->key);
}

/*
 * 1: kernel rule k matches; 0: it does not; 2: it may, but it reads what
 * is not final yet (argv, or the uid of a set-id file, at bprm_check).
 * Cheap tests first, like the daemon's rule_matches().
 */
__noinline int kcheck_rule(__u32 slot, __u32 k)
{
	struct kfacts *f = kf_get(slot);
	struct eg_krule *r;
	__u32 idx, flags;
	bool named, unknown = false;
	__s32 depth;

	if (!f || k >= EG_KRULES_MAX)
		return 0;
	idx = (f->set & 1) * EG_KRULES_MAX + k;
	r = bpf_map_lookup_elem(&krules, &idx);
	if (!r)
		return 0;
	flags = r->flags;
	/* a rule scoped to contexts: bit 0 is "none", bit N the context N */
	if (r->ctx_mask && !(r->ctx_mask & (1u << (f->context & (EG_CONTEXTS_MAX - 1)))))
		return 0;
	/* a rule scoped to cgroups judges the depth in the container, where there is one */
	depth = ((flags & EG_KR_CGROUPS) && (f->flags & KF_CONTAINER)) ? f->cdepth : f->depth;
	if (depth < r->min_depth || depth > r->max_depth)
		return 0;
	if ((flags & EG_KR_UIDS) && !(f->flags & KF_NO_UID) &&
	    !kmember_id(f, EG_KK_UID, k, f->euid, 0))
		return 0;
	if (flags & EG_KR_NAMES) {
		named = kmember_str(f, EG_KK_NAME, k, f->path + (f->base_off & (EG_FILENAME_MAX - 1)),
				    f->base_len);
		/* a rule that is not an allow also meets the name the caller spelled */
		if (!named && r->decision != EG_KD_ALLOW && f->rbase_len)
			named = kmember_str(f, EG_KK_NAME, k, f->rbase, f->rbase_len);
		/* an allow, a name root's own links give the file (a package alias, /etc/alternatives) */
		if (!named && r->decision == EG_KD_ALLOW && f->ino)
			named = kmember_id(f, EG_KK_ALIAS, k, f->dev, f->ino);
		if (!named)
			return 0;
	}
	if (flags & EG_KR_CGROUPS) {
		if (!f->cg_state)
			kf_read_cgroup(slot);
		/* a cgroup path too deep or unreadable: the rule cannot be told (unknown) */
		if (f->cg_state != 1)
			unknown = true;
		else if (!kglobs_any(slot, r->cg_first, r->n_cgroups, KS_CGROUP, f->cg_len))
			return 0;
	}
	if (flags & (EG_KR_PATHS | EG_KR_IDENTS)) {
		/* a literal path names its file: the same file by another path matches */
		if (!(flags & EG_KR_IDENTS) || !f->ino || !kmember_id(f, EG_KK_IDENT, k, f->dev, f->ino)) {
			if (!(flags & EG_KR_PATHS))
				return 0;
			if (f->flags & KF_PATH_CUT)
				unknown = true;
			else if (!kglobs_any(slot, r->glob_first, r->n_globs, KS_PATH, f->path_len))
				return 0;
		}
	}
	if ((flags & EG_KR_UIDS) && (f->flags & KF_NO_UID))
		return 2;
	if (flags & EG_KR_ARGS) {
		if (f->flags & KF_NO_ARGV)
			return 2;
		if (!kargs_match(slot, k, r->n_arg_groups))
			return 0;
	}
	/*
	 * The rule would match but for what could not be read: its verdict
	 * cannot be known, so the judgement fails closed (an error), whether
	 * the rule allows or denies.
	 */
	if (unknown) {
		f = kf_get(slot);
		if (f)
			f->error = 1;
		return 0;
	}
	return 1;
}

/* ---- candidates -------------------------------------------------------------------- */

static __always_inline struct eg_kcands *cand_chunk(struct kfacts *f)
{
	key_init(f, f->cd.kind, f->cd.chunk, 0);
	if (f->cd.src != KSRC_PREFIX && f->cd.src != KSRC_SUFFIX) {
		f->key.a = f->cd.a;
		f->key.b = f->cd.b;
	}
	if (f->cd.src == KSRC_RBASE) {
		if (!key_str(f, f->rbase, f->cd.slen))
			return NULL;
	} else if (f->cd.src == KSRC_PREFIX) {
		if (!key_str(f, f->path, f->cd.slen))
			return NULL;
	} else if (f->cd.src == KSRC_SUFFIX) {
		if (f->cd.slen > f->path_len ||
		    !key_str(f, f->path + ((f->path_len - f->cd.slen) & (EG_FILENAME_MAX - 1)), f->cd.slen))
			return NULL;
	} else if (f->cd.slen) {
		if (!key_str(f, f->path + (f->base_off & (EG_FILENAME_MAX - 1)), f->cd.slen))
			return NULL;
	}
	return bpf_map_lookup_elem(&kindex, &f->key);
}

/* One candidate per step; the first that matches (or may) ends the list. */
/* The lowest set bit's number (x not 0), without a count-trailing-zeros insn (BPF has none). */
static const __u8 ctz_table[64] = { 0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6 };

static __always_inline __u32 ctz64(__u64 x)
{
	return ctz_table[((x & -x) * 0x03f79d71b4cb0a89ull) >> 58];
}

/*
 * A walk over several keys (a path's directory prefixes, its tails): the
 * next one, its list from the start. False when there is none left.
 */
static __always_inline bool next_key(struct kfacts *f)
{
	__u32 n;

	if (f->cd.src == KSRC_PREFIX) {
		n = ++f->cd.pad;
		if (n >= f->npfx || n >= KPFX_MAX)
			return false;
		f->cd.slen = f->pfx[n];
	} else if (f->cd.src == KSRC_SUFFIX) {
		/* the next length a key has (cd.a: the lengths left, bit n - 1 for n bytes) */
		f->cd.a &= f->cd.a - 1;
		if (!f->cd.a)
			return false;
		f->cd.slen = ctz64(f->cd.a) + 1;
	} else {
		return false;
	}
	f->cd.chunk = 0;
	f->cd.i = 0;
	return true;
}

static long cand_step(__u32 step, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct eg_kcands *c;
	__u32 i, k;
	int m;

	if (!f)
		return 1;
	c = cand_chunk(f);		/* rebuilt each time: a rule check reuses f->key */
	if (!c)
		return next_key(f) ? 0 : 1;
	i = f->cd.i;
	if (i >= c->n || i >= EG_KCHUNK) {
		if (!c->more)
			return next_key(f) ? 0 : 1;
		f->cd.chunk++;
		f->cd.i = 0;
		return 0;
	}
	k = c->idx[i];
	if (k >= f->best || k >= f->defer || k >= f->khi)
		return next_key(f) ? 0 : 1;	/* ascending: nothing later in this list can win */
	if (k < f->klo) {
		f->cd.i = i + 1;		/* another judgement's rule (identities, or the commands') */
		return 0;
	}
	f->cd.i = i + 1;
	m = kcheck_rule(*slot, k);
	f = kf_get(*slot);
	if (!f || f->error)
		return 1;
	/* this list goes on past k only: the next key's list may still hold a lower rule */
	if (m == 1) {
		f->best = k;
		return next_key(f) ? 0 : 1;
	}
	if (m == 2) {
		f->defer = k;
		return next_key(f) ? 0 : 1;
	}
	return 0;
}

static __always_inline void kwalk(__u32 slot, __u32 kind, __u64 a, __u64 b, __u32 slen, __u32 src)
{
	struct kfacts *f = kf_get(slot);

	if (!f)
		return;
	f->cd.kind = kind;
	f->cd.a = a;
	f->cd.b = b;
	f->cd.slen = slen;
	f->cd.src = src;
	f->cd.pad = 0;		/* the first of the keys a multi-key walk takes (next_key) */
	f->cd.chunk = 0;
	f->cd.i = 0;
	bpf_loop(1 << 20, cand_step, &slot, 0);
}

struct kdirs_ctx {
	__u32 slot;
	__u64 mask;
};

/* Eight bytes of the path a step: the prefixes ending at a '/' some key is as deep as. */
static long dirs_step(__u32 i, struct kdirs_ctx *c)
{
	struct kfacts *f = kf_get(c->slot);
	__u32 at = i * 8, k, n;
	__u64 x = 0;

	if (!f || at >= f->path_len)
		return 1;
	bpf_probe_read_kernel(&x, 8, f->path + (at & (EG_FILENAME_MAX - 1)));
	for (k = 0; k < 8; k++) {
		if (at + k >= f->path_len || ((x >> (k * 8)) & 0xff) != '/')
			continue;
		n = ++f->pfx_slashes;
		/* longer than a key: no key is that deep, nor deeper */
		if (n > 64 || at + k + 1 >= EG_KSTR_MAX)
			return 1;
		if (!((c->mask >> (n - 1)) & 1) || f->npfx >= KPFX_MAX)
			continue;
		f->pfx[f->npfx & (KPFX_MAX - 1)] = at + k + 1;
		f->npfx++;
	}
	return 0;
}

/*
 * Rules found by the path's directory prefixes that some DIR key is as
 * deep as (mask bit k: k + 1 slashes), in one walk over those keys.
 */
static __always_inline void kwalk_dirs(__u32 slot, __u64 mask)
{
	struct kfacts *f = kf_get(slot);
	struct kdirs_ctx c = { .slot = slot, .mask = mask };

	if (!f || f->path[0] != '/')
		return;
	f->npfx = 0;
	f->pfx_slashes = 0;
	bpf_loop(EG_FILENAME_MAX / 8, dirs_step, &c, 0);
	f = kf_get(slot);
	if (!f || !f->npfx)
		return;
	kwalk(slot, EG_KK_DIR, 0, 0, f->pfx[0], KSRC_PREFIX);
}

/* ... and by the path's tails as long as some SUFFIX key (mask bit n - 1: n bytes). */
static __always_inline void kwalk_suffixes(__u32 slot, __u64 mask)
{
	kwalk(slot, EG_KK_SUFFIX, mask, 0, ctz64(mask) + 1, KSRC_SUFFIX);
}

/* internal_bypass: a file the policy's entries named at load, in the host's mount namespace. */
static long bypass_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct eg_kglob_key gk;
	struct eg_kglob *g;

	if (!f || i >= f->bp.count)
		return 1;
	gk.set = f->set;
	gk.id = f->bp.first + i;
	g = bpf_map_lookup_elem(&kglobs, &gk);
	if (!g)
		return 0;
	/* an entry with no '/' ("*.real") is matched against the file's name */
	if (kglob_match(*slot, gk.id, (g->flags & EG_KG_BASE) ? KS_BASE : KS_PATH, f->path_len)) {
		f = kf_get(*slot);
		if (f)
			f->bp.hit = 1;
		return 1;
	}
	return 0;
}

/*
 * Judges the program described in slot's facts against the set in force.
 * Returns the decision (EG_KD_*), KJ_DEFER when a rule that may match
 * waits for argv or uid, KJ_RETRY when the rules were swapped meanwhile;
 * f->out_rule says which rule decided.
 */
__noinline int kjudge_run(__u32 slot)
{
	struct kfacts *f = kf_get(slot);
	struct eg_kstate *st = kstate_get();
	struct eg_kconf *c;
	struct eg_krule *r;
	__u32 set, idx, d;

	if (!f || !st)
		return EG_KD_ERROR;
	f->seq = *(volatile __u32 *)&st->seq;
	set = EG_KSET_OF(f->seq);
	f->set = set;
	f->best = ~0u;
	f->defer = ~0u;
	f->error = 0;
	f->steps = KGLOB_STEPS;
	f->out_rule = 0;
	f->out_rank = 0;
	c = bpf_map_lookup_elem(&kconf, &set);
	if (!c)
		return EG_KD_ERROR;
	/* the range of kernel rules this judgement reads: the commands', or the contexts' identities */
	f->klo = f->identities ? c->ident_first : 0;
	f->khi = f->identities ? c->ident_first + c->n_ident : c->nrules;
	/* the depth as rules count it */
	if (!(c->flags & EG_KC_UNKNOWN_DIRECT) && f->depth < 1 && (f->flags & KF_DEPTH_UNKNOWN))
		f->depth = 1;

	/* internal_bypass first, whatever the rules say */
	if (!f->identities && (c->flags & EG_KC_BYPASS) && f->mnt_ns == c->host_mnt_ns && f->ino &&
	    f->path[0] == '/' &&
	    kmember_id(f, EG_KK_BYPASS, 0, f->dev, f->ino)) {
		f->bp.first = c->bypass_first;
		f->bp.count = c->n_bypass;
		f->bp.hit = 0;
		bpf_loop(4096, bypass_step, &slot, 0);
		f = kf_get(slot);
		if (!f)
			return EG_KD_ERROR;
		if (f->bp.hit) {
			d = EG_KD_BYPASS;
			goto out;
		}
	}

	kwalk(slot, EG_KK_NAME, 0, 0, f->base_len, KSRC_BASE);
	f = kf_get(slot);
	if (!f)
		return EG_KD_ERROR;
	if (f->rbase_len)
		kwalk(slot, EG_KK_NAME, 0, 0, f->rbase_len, KSRC_RBASE);
	f = kf_get(slot);
	if (!f)
		return EG_KD_ERROR;
	if (f->ino) {
		kwalk(slot, EG_KK_IDENT, f->dev, f->ino, 0, 0);
		kwalk(slot, EG_KK_ALIAS, f->dev, f->ino, 0, 0);
	}
	/* path globs by their literal directory, and by their literal tail */
	c = bpf_map_lookup_elem(&kconf, &set);
	if (!c)
		return EG_KD_ERROR;
	if (c->dir_slashes)
		kwalk_dirs(slot, c->dir_slashes);
	c = bpf_map_lookup_elem(&kconf, &set);
	if (!c)
		return EG_KD_ERROR;
	if (c->suffix_lens)
		kwalk_suffixes(slot, c->suffix_lens);
	kwalk(slot, EG_KK_ALL, 0, 0, 0, 0);

	f = kf_get(slot);
	if (!f)
		return EG_KD_ERROR;
	if (f->error) {
		d = EG_KD_ERROR;
		f->out_rank = KRANK_ERROR;
		goto out;
	}
	if (f->defer < f->best) {
		d = KJ_DEFER;
		goto out;
	}
	if (f->best == ~0u) {
		c = bpf_map_lookup_elem(&kconf, &set);
		if (!c)
			return EG_KD_ERROR;
		/* no identity matched: no context to enter */
		d = f->identities ? EG_KD_NONE : c->default_decision;
		f->out_rank = f->identities ? 0 : c->default_rank;
		goto out;
	}
	idx = set * EG_KRULES_MAX + (f->best & (EG_KRULES_MAX - 1));
	r = bpf_map_lookup_elem(&krules, &idx);
	if (!r)
		return EG_KD_ERROR;
	d = r->decision;
	f->out_rule = r->rule + 1;
	f->out_rank = r->rank;
out:
	st = kstate_get();
	f = kf_get(slot);
	if (!st || !f || st->seq != f->seq)
		return KJ_RETRY;
	return d;
}

/* kjudge_run(), again while a reload swaps the rules under it; then it fails closed. */
static __always_inline int kjudge(__u32 slot)
{
	int d = kjudge_run(slot);

	if (d == KJ_RETRY) {
		COUNT(kretries);
		d = kjudge_run(slot);
	}
	if (d == KJ_RETRY) {
		COUNT(kretries);
		d = kjudge_run(slot);
	}
	return d == KJ_RETRY ? EG_KD_ERROR : d;
}

#endif /* EG_KJUDGE_BPF_H */
