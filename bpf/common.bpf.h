/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What every part of the tracer shares: the knobs fixed at load (rodata),
 * the ring buffer, task storage, the counters, the
 * generation switch, the record scratch buffer and the cgroup scope.
 */
#ifndef EG_COMMON_BPF_H
#define EG_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

/* Fixed at load time by the daemon (skel->rodata). */
const volatile __u32 max_argv_bytes = EG_ARGV_DEFAULT;
const volatile __u32 scope_on = 0;		/* 0: every cgroup; else the subtrees in "scope" */
const volatile __u32 scope_max_level = 0;	/* the deepest of them */
const volatile __u64 wakeup_bytes = 1 << 20;	/* queued bytes that force a wakeup */
const volatile __u32 my_gen = 0;		/* acts only while control.active_gen is this */
const volatile __u32 report_failures = 1;	/* exec_failed records (--exec-failed=none: 0) */
const volatile __u32 lsm_tickets = 0;		/* bprm_check_security checks tickets per file */
const volatile __u32 host_pid_ns = 0;		/* the daemon's pid namespace: not a container */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EG_RINGBUF_DEFAULT);
} events SEC(".maps");

/*
 * Set by the daemon (a store into its mapping of .bss, no system call)
 * while records keep coming and a drain every delay takes them: a record
 * then wakes no one unless it crosses the fill threshold. Clear, the
 * first record into a drained ring wakes the daemon, which sleeps with
 * no timer. Each copy of the programs has its own (not pinned): a new
 * daemon starts clear.
 */
volatile __u32 drain_busy = 0;

/*
 * Records the ring buffer had no room for, of every kind (the counters
 * map has them by kind), bumped after the map's counter: the daemon reads
 * the map at a drain only when this moved (a load from its mapping of
 * .bss, where the map costs a system call), and once a second anyway.
 */
volatile __u64 ring_losses = 0;

/* The ring buffer's wakeup for a record of size bytes (see drain_busy). */
static __always_inline __u64 ring_wakeup(__u64 size)
{
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + size >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return drain_busy ? BPF_RB_NO_WAKEUP : 0;
}

EG_TASKS_MAP;

/* The names of the context ids tasks carry (struct eg_ctxname): the daemon's, kept with "tasks". */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EG_CONTEXTS_MAX);
	__type(key, __u32);
	__type(value, struct eg_ctxname);
} ctxnames SEC(".maps");

/*
 * The names of shells (dash, bash, ...), 32 bytes zero-padded (struct
 * eg_ldso_opt): the record counts shell images in a row (eg_event.shells),
 * which a context's max_consecutive_shells limits. Filled by the daemon.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct eg_ldso_opt);
	__type(value, __u32);
} shells SEC(".maps");

/* Interpreters (node, python3, ...): their first argument, an absolute path, is a script a context's identity may name. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct eg_ldso_opt);
	__type(value, __u32);
} interps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_counters);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_control);
} control SEC(".maps");

/* This copy of the programs is the one that acts (see struct eg_control). */
static __always_inline bool active(void)
{
	__u32 zero = 0;
	struct eg_control *c = bpf_map_lookup_elem(&control, &zero);

	return !c || c->active_gen == my_gen;
}

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EG_LAUNCHERS_MAX);
	__type(key, struct eg_file_key);
	__type(value, __u32);
} launchers SEC(".maps");

/*
 * Records are built here and copied into the ring buffer at their exact
 * size: a record can reach megabytes, larger than the BPF stack or a
 * per-CPU value. One entry per CPU (max_entries set at load), value size
 * EG_SCRATCH_SIZE(max_argv_bytes) set at load. The programs that use it run
 * in task context with preemption disabled, so a CPU's entry has one user.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, EG_SCRATCH_SIZE(EG_ARGV_DEFAULT));
} scratch SEC(".maps");

static __always_inline struct eg_counters *counters_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

#define COUNT(field)						\
	do {							\
		struct eg_counters *__c = counters_get();	\
		if (__c)					\
			__sync_fetch_and_add(&__c->field, 1);	\
	} while (0)

/* A record the ring buffer had no room for: its kind's counter, then ring_losses. */
#define COUNT_LOSS(c, field)					\
	do {							\
		__sync_fetch_and_add(&(c)->field, 1);		\
		__sync_fetch_and_add(&ring_losses, 1);		\
	} while (0)

static __always_inline char *scratch_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

/*
 * The cgroups traced and enforced (--cgroup, repeatable): ids of subtree
 * roots. Twice the scopes: room for a restarted container's new id while
 * the old one's removal is still to come.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * EG_SCOPES_MAX);
	__type(key, __u64);
	__type(value, __u32);
} scope SEC(".maps");

/* The current task is in scope: its cgroup or an ancestor is a --cgroup. */
static __noinline bool traced_cgroup(void)
{
	__u32 level;

	if (!scope_on)
		return true;
	for (level = 0; level < 32; level++) {
		__u64 id;

		if (level > scope_max_level)
			break;
		id = bpf_get_current_ancestor_cgroup_id(level);
		if (!id)
			break;
		if (bpf_map_lookup_elem(&scope, &id))
			return true;
	}
	return false;
}

/* s (kernel memory, len bytes, not terminated) is a key of names (32 bytes, zero-padded). */
static __always_inline bool is_named_n(void *names, const char *s, __u32 len)
{
	struct eg_ldso_opt k = {};
	__u32 i;

	if (!len || len >= sizeof(k.s))
		return false;
	/* a fixed size for older verifiers; what follows the name is zeroed */
	if (bpf_probe_read_kernel(k.s, sizeof(k.s), s))
		return false;
	for (i = 0; i < sizeof(k.s); i++)
		if (i >= len)
			k.s[i] = 0;
	return bpf_map_lookup_elem(names, &k);
}

/* s (kernel memory, a NUL-terminated name) is a key of names (32 bytes, zero-padded). */
static __always_inline bool is_named(void *names, const char *s)
{
	struct eg_ldso_opt k = {};
	long n = bpf_probe_read_kernel_str(k.s, sizeof(k.s), s);

	return n > 1 && n < (long)sizeof(k.s) && bpf_map_lookup_elem(names, &k);
}

/*
 * A file's device number as stat() gives it, which the daemon compares
 * with: its super block's, but on btrfs its subvolume's own (each
 * subvolume, the top one too, numbers its inodes from its own start, so
 * the super block's number with an inode number names no one file).
 * btrfs's types come from its BTF (vmlinux, or the module's when it is
 * loaded as the programs load); without them, the super block's.
 */
#define EG_BTRFS_MAGIC	0x9123683e

struct btrfs_root___eg {
	dev_t anon_dev;
} __attribute__((preserve_access_index));

struct btrfs_inode___eg {
	struct btrfs_root___eg *root;
	struct inode vfs_inode;
} __attribute__((preserve_access_index));

static __always_inline __u64 inode_dev(struct inode *inode)
{
	__u64 dev = BPF_CORE_READ(inode, i_sb, s_dev);

	if (bpf_core_type_exists(struct btrfs_inode___eg) &&
	    BPF_CORE_READ(inode, i_sb, s_magic) == EG_BTRFS_MAGIC) {
		struct btrfs_inode___eg *bi = (struct btrfs_inode___eg *)
			((char *)inode - bpf_core_field_offset(struct btrfs_inode___eg, vfs_inode));
		__u32 anon = BPF_CORE_READ(bi, root, anon_dev);

		if (anon)
			dev = anon;
	}
	return dev;
}

#endif /* EG_COMMON_BPF_H */
