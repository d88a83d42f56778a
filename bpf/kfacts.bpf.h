/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The facts one kernel judgement works on (struct kfacts): a per-CPU buffer
 * in map kscratch, two slots per CPU: one for sched_process_exec (and the
 * syscall tracepoints), which run with preemption off, one for
 * bprm_check_security, which may be preempted and so takes its slot with
 * an atomic exchange. Loops keep their state here, not on the 512-byte stack.
 */
#ifndef EG_KFACTS_BPF_H
#define EG_KFACTS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"

#define KF_NO_ARGV	(1u << 0)	/* argv not final (bprm_check_security): rules reading it wait */
#define KF_NO_UID	(1u << 1)	/* the effective uid not final (a set-id file) */
#define KF_DEPTH_UNKNOWN (1u << 2)	/* the tracer never saw the tree start */
#define KF_PATH_CUT	(1u << 3)	/* the path is not whole (too deep or long, a fault) */
#define KF_CONTAINER	(1u << 4)	/* in a container: rules scoped to cgroups judge cdepth */
#define KF_USER_MOUNT	(1u << 5)	/* the path passes a user's mount: no allow by path holds */

#define KSLOT_EXEC	0
#define KSLOT_LSM	1

/* a path, with room for " (deleted)" and for one more name past the end (the verifier's bound) */
#define KPATH_SIZE	(EG_FILENAME_MAX + EG_KSTR_MAX)
#define KGLOB_STEPS	65536			/* glob steps one judgement may take */
#define KJ_DEFER	0x100			/* kjudge_run(): undecided until argv/uid are final */
#define KJ_RETRY	0x200			/* kjudge_run(): the rules were swapped meanwhile */
#define KRANK_ERROR	5			/* the kernel could not judge: above any rule's deny */

/* Subjects of a glob (kglob_match's sel). */
#define KS_PATH		0
#define KS_CGROUP	1
#define KS_BASE		2

/* Loop state, one per loop (no loop runs inside itself). */
struct kconv { __u32 off, len, end, leaf, cgroup; };
struct kslash { __u64 s; __u32 n; __s32 last; };
struct kcmp { __u64 a, b; __u32 len, differ; };
struct kglob_st { __u64 s, p; __u32 n, m, i, j; __s32 star; __u32 mark; __s32 result; __u32 pad; };
struct kglobs_st { __u32 first, count, sel, n, g, cut, matched, pad; };
struct kkn { __u64 kn; __u32 pos, fault; };
struct kargs { __u64 p, end; __u32 rule, all, found, index, from, skipping, fault, pad; };
struct kcand { __u64 a, b; __u32 kind, slen, src, chunk, i, pad; };
/* where a candidate walk's key string comes from (kcand.src) */
#define KSRC_BASE	0	/* the file's name */
#define KSRC_RBASE	1	/* the name as spelled */
#define KSRC_PREFIX	2	/* the path's first slen bytes (a directory, '/' included) */
#define KSRC_SUFFIX	3	/* the path's last slen bytes */
#define KPFX_MAX	64	/* directory prefixes a judgement looks up */
struct kbyp { __u32 first, count, hit, pad; };
/* the small walks around a judgement: argv words, task_works, a record's chain */
struct kwalk {
	__u64 p, end, cb, found;
	__u64 files[EG_CHAIN_MAX + 1];
	__u32 index, skip, n, hit, off, start, fault, left;
};

struct kfacts {
	struct eg_kkey key;		/* built in place for each lookup */
	__u64 dev, ino;			/* the file's identity; ino 0: unknown */
	__u64 mnt_ns;
	__u64 arg_start, arg_end;	/* the program's argv in the current mm; 0: none */
	__u64 busy;			/* KSLOT_LSM: in use */
	__u32 euid;
	__s32 depth;			/* the host's, as rules count it (unknown is 1) */
	__s32 cdepth;			/* KF_CONTAINER: depth from the container's first exec */
	__u32 cpad;
	__u32 flags;			/* KF_* */
	__u32 set, seq;
	__u32 path_len, base_off, base_len;
	__u32 rbase_len;		/* the spelled name when it differs from the file's; 0: none */
	__u32 cg_state;			/* 0: not read yet, 1: read, 2: unknown */
	__u32 cg_len;
	__u32 args_from;		/* argv index of the program's argv[0] */
	__u32 best;			/* lowest kernel rule that matched; ~0: none */
	__u32 defer;			/* lowest rule that may match once argv/uid are final */
	__u32 steps;			/* glob steps left */
	__u32 error;
	__u32 kflags;			/* EG_KF_* gathered */
	__u32 context;			/* the task's agent context (0: none), as rules' ctx_mask see it */
	__u32 identities;		/* judge the contexts' identities, not the commands' rules */
	__s32 ctx_depth;		/* LSM: the exec's depth in the task's context */
	__u32 ctx_shells;		/* LSM: shell images in a row, this one included (0: not a shell) */
	__u32 out_rule;			/* the verdict's policy rule + 1; 0: default or none */
	__u32 out_rank;			/* its strength, as the daemon merges a script's two verdicts */
	struct kconv cv;
	struct kslash sl;
	struct kcmp cm;
	struct kglob_st gl;
	struct kglobs_st gs;
	struct kkn kn;
	struct kargs ar;
	struct kcand cd;
	struct kbyp bp;
	struct kwalk wk;
	__u16 pfx[KPFX_MAX];		/* lengths of the path's directory prefixes worth looking up */
	__u32 npfx;
	__u32 pfx_slashes;
	__u32 klo, khi;			/* the kernel rules a judgement reads: [klo, khi) */
	char rbase[EG_KSTR_MAX];
	char raw[EG_FILENAME_MAX];	/* a leaf-first path (input) */
	char path[KPATH_SIZE];		/* the resolved path, '/'-separated */
	char cgroup[KPATH_SIZE];	/* the task's cgroup v2 path, read when a rule asks */
	char tmp[EG_FILENAME_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);			/* 2 per CPU, set at load */
	__type(key, __u32);
	__type(value, struct kfacts);
} kscratch SEC(".maps");

static __always_inline struct kfacts *kf_get(__u32 slot)
{
	return bpf_map_lookup_elem(&kscratch, &slot);
}

/* The program's own name (its path's last part) is one of names (a map of eg_ldso_opt keys). */
static __always_inline bool kf_base_named(struct kfacts *f, void *names)
{
	return is_named_n(names, f->path + (f->base_off & (EG_FILENAME_MAX - 1)), f->base_len);
}

/* This CPU's slot for a caller (KSLOT_*). */
static __always_inline __u32 kf_slot(__u32 kind)
{
	return bpf_get_smp_processor_id() * 2 + kind;
}

#endif /* EG_KFACTS_BPF_H */
