/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Strings for the kernel judge: map keys built in place, a leaf-first path
 * turned forward, the last '/', comparisons, the name a caller spelled.
 * State in the per-CPU facts (kfacts.bpf.h), loops as bpf_loop callbacks.
 */
#ifndef EG_KSTRINGS_BPF_H
#define EG_KSTRINGS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"

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

#endif /* EG_KSTRINGS_BPF_H */
