// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate tracer: exec depth per task in task storage, one ring-buffer
 * record per exec (committed argv from the new mm) and per failed exec
 * (argv as the caller passed it).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Fixed at load time by the daemon (skel->rodata). */
const volatile __u32 max_argv_bytes = EG_ARGV_DEFAULT;
const volatile __u64 filter_cgroup_id = 0;	/* 0: every cgroup */
const volatile __u32 filter_cgroup_level = 0;
const volatile __u64 wakeup_bytes = 1 << 20;	/* queued bytes that force a wakeup */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EG_RINGBUF_DEFAULT);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eg_task);
} tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct eg_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct eg_counters);
} counters SEC(".maps");

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

static __always_inline char *scratch_get(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

static __always_inline bool traced_cgroup(void)
{
	if (!filter_cgroup_id)
		return true;
	return bpf_get_current_ancestor_cgroup_id(filter_cgroup_level) == filter_cgroup_id;
}

/* ---- working directory -------------------------------------------------- */

struct cwd_walk {
	struct dentry *dentry;
	struct vfsmount *vfsmnt;
	struct dentry *root_dentry;
	struct vfsmount *root_mnt;
	__u32 off;		/* where the cwd region starts in scratch */
	__u32 pos;		/* bytes written so far */
	__u32 flags;
	bool done;
};

static long cwd_step(__u32 i, struct cwd_walk *w)
{
	struct dentry *d = w->dentry, *mnt_root, *up;
	struct vfsmount *vm = w->vfsmnt;
	const unsigned char *name;
	__u32 off = w->off, pos = w->pos;
	char *buf;
	long n;

	if (d == w->root_dentry && vm == w->root_mnt)
		goto done;
	mnt_root = BPF_CORE_READ(vm, mnt_root);
	if (d == mnt_root) {
		struct mount *m = eg_container_of(vm, struct mount, mnt);
		struct mount *parent = BPF_CORE_READ(m, mnt_parent);

		if (parent == m)
			goto done;
		w->dentry = BPF_CORE_READ(m, mnt_mountpoint);
		w->vfsmnt = (struct vfsmount *)((char *)parent +
				bpf_core_field_offset(struct mount, mnt));
		return 0;
	}
	up = BPF_CORE_READ(d, d_parent);
	if (!up || up == d)
		goto done;
	if (off > EG_EVENT_HDR + EG_FILENAME_MAX || pos > EG_CWD_MAX - EG_NAME_MAX) {
		w->flags |= EG_F_CWD_TRUNC;
		goto done;
	}
	buf = scratch_get();
	if (!buf)
		goto done;
	name = BPF_CORE_READ(d, d_name.name);
	n = bpf_probe_read_kernel_str(buf + off + pos, EG_NAME_MAX, name);
	if (n <= 0) {
		w->flags |= EG_F_CWD_FAULT;
		goto done;
	}
	w->pos = pos + n;
	w->dentry = up;
	return 0;
done:
	w->done = true;
	return 1;
}

/* Writes the cwd of current at scratch+off; returns its length. */
static __always_inline __u32 read_cwd(struct task_struct *task, __u32 off, __u32 *flags)
{
	struct fs_struct *fs = BPF_CORE_READ(task, fs);
	struct cwd_walk w = {};

	if (!fs) {
		*flags |= EG_F_CWD_FAULT;
		return 0;
	}
	w.dentry = BPF_CORE_READ(fs, pwd.dentry);
	w.vfsmnt = BPF_CORE_READ(fs, pwd.mnt);
	w.root_dentry = BPF_CORE_READ(fs, root.dentry);
	w.root_mnt = BPF_CORE_READ(fs, root.mnt);
	w.off = off;
	bpf_loop(EG_CWD_DEPTH, cwd_step, &w, 0);
	if (!w.done)
		w.flags |= EG_F_CWD_TRUNC;
	*flags |= w.flags;
	return w.pos;
}

/* ---- record assembly ---------------------------------------------------- */

/* A string copy that says whether it was cut: n == max and the source goes on. */
static __always_inline __u32 str_len_checked(long n, const void *src, bool user, __u32 *flags,
					     __u32 trunc_flag, __u32 fault_flag)
{
	char next = 0;

	if (n <= 0) {
		*flags |= fault_flag;
		return 0;
	}
	if (n >= EG_FILENAME_MAX) {
		n = EG_FILENAME_MAX;
		if (user)
			bpf_probe_read_user(&next, 1, (const char *)src + EG_FILENAME_MAX - 1);
		else
			bpf_probe_read_kernel(&next, 1, (const char *)src + EG_FILENAME_MAX - 1);
		if (next)
			*flags |= trunc_flag;
	}
	return n;
}

static __always_inline void submit(char *buf, __u32 size, __u32 type)
{
	__u64 flags = BPF_RB_NO_WAKEUP;
	struct eg_counters *c;
	__u32 ev_flags;
	long err;

	if (size > EG_RECORD_MAX(max_argv_bytes))
		return;
	/* Batch: wake the daemon only past the fill threshold; its timer does the rest. */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + size >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	ev_flags = ((struct eg_event *)buf)->flags;
	err = bpf_ringbuf_output(&events, buf, size, flags);
	c = counters_get();
	if (!c)
		return;
	if (err) {
		if (type == EG_EVENT_EXEC)
			__sync_fetch_and_add(&c->lost_exec, 1);
		else
			__sync_fetch_and_add(&c->lost_exec_failed, 1);
		return;
	}
	if (type == EG_EVENT_EXEC)
		__sync_fetch_and_add(&c->exec, 1);
	else
		__sync_fetch_and_add(&c->exec_failed, 1);
	if (ev_flags & EG_F_ARGV_TRUNC)
		__sync_fetch_and_add(&c->argv_truncated, 1);
	if (ev_flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT | EG_F_CWD_FAULT))
		__sync_fetch_and_add(&c->read_faults, 1);
}

static __always_inline void fill_common(struct eg_event *e, struct task_struct *task,
					struct eg_task *st)
{
	__u64 uid_gid = bpf_get_current_uid_gid();

	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->uid = (__u32)uid_gid;
	e->gid = uid_gid >> 32;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	if (st && (st->flags & EG_TASK_KNOWN)) {
		/* a depth set from userspace comes without an exec id */
		if (st->exec_ktime)
			e->flags |= EG_F_PARENT_KNOWN;
		e->parent_tgid = st->exec_tgid;
		e->parent_ktime_ns = st->exec_ktime;
		e->depth = st->depth + 1;
		e->session = st->session;
	} else {
		e->depth = 0;
	}
}

/* ---- fork / exec / exit ------------------------------------------------- */

SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	struct eg_task *pst, *cst;

	pst = bpf_task_storage_get(&tasks, parent, 0, 0);
	if (!pst)
		return 0;
	cst = bpf_task_storage_get(&tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!cst) {
		COUNT(storage_failed);
		return 0;
	}
	cst->depth = pst->depth;
	cst->flags = pst->flags & EG_TASK_KNOWN;
	cst->exec_ktime = pst->exec_ktime;
	cst->exec_tgid = pst->exec_tgid;
	cst->session = pst->session;
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	struct eg_task *st;
	struct eg_proc proc = {};
	struct eg_event *e = NULL;
	struct mm_struct *mm;
	unsigned long arg_start, arg_end;
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 off, n;
	__u64 len;
	__u64 now = bpf_ktime_get_boot_ns();
	const char *fname;
	char *buf;

	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		COUNT(storage_failed);

	buf = scratch_get();
	if (!buf)
		goto update;
	e = (struct eg_event *)buf;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_EXEC;
	e->ktime_ns = now;
	e->pid = tgid;
	e->tid = old_pid;
	fill_common(e, task, st);
	e->argc = BPF_CORE_READ(bprm, argc);

	if (!traced_cgroup())
		goto update;

	off = EG_EVENT_HDR;
	fname = BPF_CORE_READ(bprm, filename);
	n = bpf_probe_read_kernel_str(buf + off, EG_FILENAME_MAX, fname);
	n = str_len_checked(n, fname, false, &e->flags, EG_F_FILENAME_TRUNC, EG_F_FILENAME_FAULT);
	barrier_var(n);
	if (n > EG_FILENAME_MAX)
		n = EG_FILENAME_MAX;
	e->filename_len = n;
	off += n;

	n = read_cwd(task, off, &e->flags);
	barrier_var(n);
	if (n > EG_CWD_MAX)
		n = EG_CWD_MAX;
	e->cwd_len = n;
	off += n;

	mm = BPF_CORE_READ(task, mm);
	arg_start = BPF_CORE_READ(mm, arg_start);
	arg_end = BPF_CORE_READ(mm, arg_end);
	len = arg_end > arg_start ? arg_end - arg_start : 0;
	e->argv_bytes = len > 0xffffffffull ? 0xffffffffu : len;
	if (len > max_argv_bytes)
		e->flags |= EG_F_ARGV_TRUNC;
	eg_clamp(len, max_argv_bytes);
	barrier_var(off);
	if (off > EG_EVENT_HDR + EG_FILENAME_MAX + EG_CWD_MAX)
		goto update;
	if (len && bpf_probe_read_user(buf + off, len, (const void *)arg_start)) {
		e->flags |= EG_F_ARGV_FAULT;
		len = 0;
	}
	e->argv_len = len;
	submit(buf, off + len, EG_EVENT_EXEC);

update:
	if (st) {
		__s32 depth = (st->flags & EG_TASK_KNOWN) ? st->depth + 1 : 0;

		proc.parent_tgid = (st->flags & EG_TASK_KNOWN) ? st->exec_tgid : 0;
		proc.parent_ktime = (st->flags & EG_TASK_KNOWN) ? st->exec_ktime : 0;
		st->depth = depth;
		st->flags = EG_TASK_KNOWN;
		st->exec_ktime = now;
		st->exec_tgid = tgid;
		proc.depth = depth;
		proc.session = st->session;
	}
	proc.exec_ktime = now;
	if (buf) {
		/* already read for the record */
		proc.ppid = e->ppid;
		proc.uid = e->uid;
		proc.cgroup_id = e->cgroup_id;
		__builtin_memcpy(proc.comm, e->comm, sizeof(proc.comm));
	} else {
		proc.ppid = BPF_CORE_READ(task, real_parent, tgid);
		proc.uid = (__u32)bpf_get_current_uid_gid();
		proc.cgroup_id = bpf_get_current_cgroup_id();
		bpf_get_current_comm(proc.comm, sizeof(proc.comm));
	}
	bpf_map_update_elem(&procs, &tgid, &proc, BPF_ANY);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, pid);

	/* The leader stands for the process in "procs"; task storage frees itself. */
	if (pid == BPF_CORE_READ(task, tgid))
		bpf_map_delete_elem(&procs, &pid);
	return 0;
}

/* ---- failed execs: stash the caller's pointers, report on error --------- */

static __always_inline void stash(const void *filename, const void *argv, int dirfd,
				  __u32 at_flags, bool at)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct eg_task *st;

	st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st) {
		COUNT(storage_failed);
		return;
	}
	st->pending_filename = (__u64)filename;
	st->pending_argv = (__u64)argv;
	st->pending_dirfd = dirfd;
	st->pending_at_flags = at_flags;
	st->flags = (st->flags & EG_TASK_KNOWN) | EG_TASK_PENDING | (at ? EG_TASK_PENDING_AT : 0);
}

SEC("tracepoint/syscalls/sys_enter_execve")
int handle_enter_execve(struct trace_event_raw_sys_enter *ctx)
{
	stash((const void *)ctx->args[0], (const void *)ctx->args[1], 0, 0, false);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_execveat")
int handle_enter_execveat(struct trace_event_raw_sys_enter *ctx)
{
	stash((const void *)ctx->args[1], (const void *)ctx->args[2], (int)ctx->args[0],
	      (__u32)ctx->args[4], true);
	return 0;
}

struct argv_walk {
	const char *const *argv;
	__u32 off;		/* where argv starts in scratch */
	__u32 pos;		/* bytes of whole arguments copied */
	__u32 argc;
	__u32 bytes;		/* real size, NULs included, as far as known */
	__u32 flags;
	bool full;		/* cap reached: only count from here on */
};

static long argv_step(__u32 i, struct argv_walk *w)
{
	const char *arg = NULL;
	__u64 off = w->off, pos = w->pos, room;
	char *buf;
	long n;

	if (bpf_probe_read_user(&arg, sizeof(arg), &w->argv[i])) {
		w->flags |= EG_F_ARGV_FAULT;
		return 1;
	}
	if (!arg)
		return 1;
	/*
	 * argc is only counted, never compared here: a compared counter would
	 * make every iteration a distinct verifier state.
	 */
	w->argc++;
	if (i == EG_ARGC_SCAN - 1)
		w->flags |= EG_F_ARGC_INEXACT;
	if (w->full)
		return 0;
	if (off > EG_EVENT_HDR + EG_FILENAME_MAX + EG_CWD_MAX || pos >= max_argv_bytes ||
	    pos >= EG_ARGV_LIMIT) {
		w->full = true;
		w->flags |= EG_F_ARGV_TRUNC;
		return 0;
	}
	buf = scratch_get();
	if (!buf)
		return 1;
	room = max_argv_bytes - pos;
	eg_clamp(room, EG_ARG_READ_MAX);
	eg_clamp(pos, max_argv_bytes);
	n = bpf_probe_read_user_str(buf + off + pos, room, arg);
	if (n < 0) {
		w->flags |= EG_F_ARGV_FAULT;
		w->full = true;
		return 0;
	}
	if (n == room) {
		/* Cut: leave the partial argument out, keep counting. */
		w->full = true;
		w->flags |= EG_F_ARGV_TRUNC;
		return 0;
	}
	w->pos = pos + n;
	w->bytes += n;
	return 0;
}

static __always_inline void report_failed(long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct argv_walk aw = {};
	struct eg_task *st;
	struct eg_event *e;
	const char *filename;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 off, n;
	bool at;
	char *buf;

	st = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!st || !(st->flags & EG_TASK_PENDING))
		return;
	at = st->flags & EG_TASK_PENDING_AT;
	st->flags &= ~(EG_TASK_PENDING | EG_TASK_PENDING_AT);
	if (ret >= 0 || !traced_cgroup())
		return;

	buf = scratch_get();
	if (!buf)
		return;
	e = (struct eg_event *)buf;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_EXEC_FAILED;
	e->ktime_ns = bpf_ktime_get_boot_ns();
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->err = ret;
	fill_common(e, task, st);
	if (at)
		e->flags |= EG_F_EXECVEAT;
	e->dirfd = st->pending_dirfd;
	e->at_flags = st->pending_at_flags;

	off = EG_EVENT_HDR;
	filename = (const char *)st->pending_filename;
	n = bpf_probe_read_user_str(buf + off, EG_FILENAME_MAX, filename);
	n = str_len_checked(n, filename, true, &e->flags, EG_F_FILENAME_TRUNC,
			    EG_F_FILENAME_FAULT);
	barrier_var(n);
	if (n > EG_FILENAME_MAX)
		n = EG_FILENAME_MAX;
	e->filename_len = n;
	off += n;

	n = read_cwd(task, off, &e->flags);
	barrier_var(n);
	if (n > EG_CWD_MAX)
		n = EG_CWD_MAX;
	e->cwd_len = n;
	off += n;

	aw.argv = (const char *const *)st->pending_argv;
	aw.off = off;
	if (aw.argv)
		bpf_loop(EG_ARGC_SCAN, argv_step, &aw, 0);
	e->flags |= aw.flags;
	e->argc = aw.argc;
	e->argv_bytes = aw.bytes;
	n = aw.pos;
	barrier_var(n);
	if (n > EG_ARGV_LIMIT)
		n = EG_ARGV_LIMIT;
	e->argv_len = n;
	submit(buf, off + n, EG_EVENT_EXEC_FAILED);
}

SEC("tracepoint/syscalls/sys_exit_execve")
int handle_exit_execve(struct trace_event_raw_sys_exit *ctx)
{
	report_failed(ctx->ret);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_execveat")
int handle_exit_execveat(struct trace_event_raw_sys_exit *ctx)
{
	report_failed(ctx->ret);
	return 0;
}
