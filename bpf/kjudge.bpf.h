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
#include "kmaps.bpf.h"
#include "kstrings.bpf.h"
#include "kmatch.bpf.h"

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
			/*
			 * A path through a user's mount is theirs to spell: it
			 * lets nothing run (an allow, an audit); it still
			 * denies, and still puts a task in a context (an
			 * identity: more rules, not fewer). The file's
			 * identity above is not theirs to spell.
			 */
			if ((f->flags & KF_USER_MOUNT) && !f->identities &&
			    (r->decision == EG_KD_ALLOW || r->decision == EG_KD_AUDIT))
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
	/*
	 * The range of kernel rules this judgement reads: the commands', or the
	 * contexts' identities, which come after them (each an allow that says
	 * which context starts, never what may run).
	 */
	f->klo = f->identities ? c->ident_first : 0;
	f->khi = f->identities ? c->ident_first + c->n_ident : c->n_ident ? c->ident_first : c->nrules;
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
	if (c->dir_slashes) {
		kwalk_dirs(slot, c->dir_slashes);
		/*
		 * A path cut short (deeper than a walk reads) has lost its front,
		 * and with it the directories the rules are found by: each such
		 * rule is a candidate, its path cannot be told (KF_PATH_CUT), and
		 * where the rest of it matches the exec is refused as an error.
		 */
		f = kf_get(slot);
		if (!f)
			return EG_KD_ERROR;
		if (f->flags & KF_PATH_CUT)
			kwalk(slot, EG_KK_DIRCUT, 0, 0, 0, 0);
	}
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
