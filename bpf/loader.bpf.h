/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The dynamic loader run as a command (`ld-linux-x86-64.so.2 PROG ARGS`):
 * a program launcher like a '#!' interpreter. Loaders are known by file
 * identity (map "loaders", filled by the daemon from the host's PT_INTERP
 * and every ld-linux*, ld-musl* it finds), never by name. At exec the
 * program it was asked to run is found in its argv (after the loader's own
 * options); the file it then maps executable first is that program, and
 * is judged as one (loaded.bpf.h).
 */
#ifndef EG_LOADER_BPF_H
#define EG_LOADER_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "kfacts.bpf.h"
#include "kstrings.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EG_LOADERS_MAX);
	__type(key, struct eg_file_key);
	__type(value, __u32);
} loaders SEC(".maps");

static __always_inline bool is_loader(__u64 dev, __u64 ino)
{
	struct eg_file_key k = { .dev = dev, .ino = ino };

	return bpf_map_lookup_elem(&loaders, &k);
}

#define LDR_ARGS_SCAN	64	/* options before the program: ld.so has a dozen kinds */


/*
 * The loader's own options (map "ldso_opts", key: the argument zero-padded
 * to 32 bytes; value: EG_LDSO_OPT_*), filled by the daemon from the list
 * in execgate.h that its own judge reads too: one lookup per argument
 * rather than a comparison with each (the verifier walks every branch).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct eg_ldso_opt);
	__type(value, __u32);
} ldso_opts SEC(".maps");

static long ldr_step(__u32 i, __u32 *slot)
{
	struct kfacts *f = kf_get(*slot);
	struct kwalk *w;
	__u32 *opt;
	long n;

	if (!f)
		return 1;
	w = &f->wk;
	if (w->p >= w->end)
		return 1;
	n = bpf_probe_read_kernel_str(f->tmp, EG_FILENAME_MAX, (const void *)w->p);
	n = eg_str_whole(n, (const char *)w->p, EG_FILENAME_MAX, false);
	if (!n) {
		w->hit = EG_LOADER_ARG_UNKNOWN;	/* a word this long: where the program is cannot be told */
		return 1;
	}
	__builtin_memset(f->rbase, 0, 32);
	if (n <= 32)
		bpf_probe_read_kernel(f->rbase, n & 63, f->tmp);
	w->p += n;
	if (w->index++ == 0)
		return 0;	/* the loader's own argv[0] */
	if (w->skip) {
		w->skip = 0;
		return 0;
	}
	opt = n <= 32 ? bpf_map_lookup_elem(&ldso_opts, f->rbase) : NULL;
	if (opt) {
		w->skip = *opt == EG_LDSO_OPT_VALUE;
		return 0;
	}
	/* rtld stops at the first word that is not one of its options: the program */
	w->hit = w->index - 1;
	w->n = n - 1;		/* its length; the word is in f->tmp */
	return 1;
}

/*
 * Whether the program loader_target() just found is named as a shell (its
 * last name, as it was asked for): `ld.so /bin/sh` is a shell image in a
 * row, as the shell's own exec would be.
 */
static __noinline bool loader_target_shell(void)
{
	__u32 slot = kf_slot(KSLOT_EXEC), off;
	struct kfacts *f = kf_get(slot);

	if (!f || !f->wk.hit || !f->wk.n)
		return false;
	off = last_slash(slot, f->tmp, f->wk.n) + 1;
	f = kf_get(slot);
	if (!f || off >= f->wk.n)
		return false;
	return is_named_n(&shells, f->tmp + (off & (EG_FILENAME_MAX - 1)), f->wk.n - off);
}

/*
 * The argv index of the program a loader was asked to run, in argv[0..len)
 * (the committed argv, in scratch); 0 when there is none (`ld.so --help`),
 * EG_LOADER_ARG_UNKNOWN when it cannot be told (more options than read). The walk's state is in the judgement's buffer (a
 * counter on the stack would be followed value by value by the verifier).
 */
static __noinline __u16 loader_target(const char *argv, __u32 len)
{
	__u32 slot = kf_slot(KSLOT_EXEC);
	struct kfacts *f = kf_get(slot);

	if (!f)
		return 0;
	__builtin_memset(&f->wk, 0, sizeof(f->wk));
	f->wk.p = (__u64)argv;
	f->wk.end = (__u64)argv + len;
	bpf_loop(LDR_ARGS_SCAN, ldr_step, &slot, 0);
	f = kf_get(slot);
	if (!f)
		return EG_LOADER_ARG_UNKNOWN;
	if (!f->wk.hit && f->wk.p < f->wk.end)
		return EG_LOADER_ARG_UNKNOWN;
	return f->wk.hit;
}

#endif /* EG_LOADER_BPF_H */
