// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The floor under execgate's BPF cost (tools/bench/stages.py runs it beside
 * the daemon): the least a tracer can do in the kernel and still build an
 * exec record of execgate's shape. At fork, the child's task storage is
 * made from the parent's. At exec, the task's storage (made if missing)
 * gives the record's lineage; the record is execgate's header (struct
 * eg_event) with the resolved file's path walked to the namespace root,
 * the working directory walked to the task's root, and the committed argv,
 * built in a per-CPU buffer and copied into a ring buffer, without waking
 * the reader. Nothing else: no requested path, no script, no terminal, no
 * namespaces, no judge, no view of processes, no failed-exec, mmap or exit
 * programs. Fields are loaded directly through BTF; a helper call is made
 * only for strings, user memory and a mount crossing.
 *
 * It shares no code with bpf/: the point is an independent measure of what
 * the same record costs at the least.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define HDR		sizeof(struct eg_event)
#define WALK_DEPTH	64
#define PATHS_MAX	(2 * EG_FILENAME_MAX)
#define ARGV_MAX	EG_ARGV_DEFAULT
#define BUF_SIZE	(HDR + PATHS_MAX + ARGV_MAX)

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eg_task);		/* the same size as execgate's */
} floor_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EG_RINGBUF_DEFAULT);
} floor_events SEC(".maps");

struct floor_buf {
	char b[BUF_SIZE];
};

/* one entry per CPU (max_entries set at load): per-CPU values are capped at 32 KiB */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_buf);
} floor_scratch SEC(".maps");

__u64 floor_lost;

SEC("tp_btf/sched_process_fork")
int BPF_PROG(floor_fork, struct task_struct *parent, struct task_struct *child)
{
	struct eg_task *p, *c;

	p = bpf_task_storage_get(&floor_tasks, parent, 0, 0);
	if (!p)
		return 0;
	c = bpf_task_storage_get(&floor_tasks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (c)
		__builtin_memcpy(c, p, sizeof(*c));
	return 0;
}

/* kfunc (6.2+): an untrusted pointer of a BTF type, whose fields load directly (no helper call) */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;
#define UNTRUSTED(p, type) ((type *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(type)))

struct walk_ctx {
	struct dentry *d, *mnt_root, *root_d;
	struct mount *m;
	struct vfsmount *root_mnt;
	__u32 off, pos;
};

/* One step of a walk (bpf_loop: the step is verified once, not once per level). */
static long walk_step(__u32 i, struct walk_ctx *w)
{
	struct dentry *d = w->d, *up;
	struct mount *m = w->m;
	struct floor_buf *fb;
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 o = w->off, p = w->pos;
	long n;

	if (d == w->root_d && &m->mnt == w->root_mnt)
		return 1;
	if (d == w->mnt_root) {
		struct mount *parent = m->mnt_parent;

		if (!parent || parent == m)
			return 1;
		w->d = UNTRUSTED(m->mnt_mountpoint, struct dentry);
		w->m = UNTRUSTED(parent, struct mount);
		w->mnt_root = w->m->mnt.mnt_root;
		return 0;
	}
	up = d->d_parent;
	if (up == d)
		return 1;
	if (p > EG_FILENAME_MAX - EG_NAME_MAX || o > HDR + EG_FILENAME_MAX)
		return 1;
	fb = bpf_map_lookup_elem(&floor_scratch, &cpu);
	if (!fb)
		return 1;
	n = bpf_probe_read_kernel_str(fb->b + o + p, EG_NAME_MAX, d->d_name.name);
	if (n <= 0)
		return 1;
	w->pos += n;
	w->d = UNTRUSTED(up, struct dentry);
	return 0;
}

/*
 * d in mount mnt, leaf first, NUL after each name, at the scratch's
 * [off..]: up to (root_d, root_mnt), or the namespace root. Returns the
 * bytes written. Pointers are made untrusted (one type for the verifier);
 * loads through them are direct, a helper is called only for a name.
 */
static __always_inline __u32 walk(__u32 off, struct dentry *d, struct vfsmount *mnt,
				  struct dentry *root_d, struct vfsmount *root_mnt)
{
	struct walk_ctx w = {
		.d = UNTRUSTED(d, struct dentry),
		.m = UNTRUSTED(container_of(mnt, struct mount, mnt), struct mount),
		.root_d = root_d, .root_mnt = root_mnt, .off = off,
	};

	w.mnt_root = w.m->mnt.mnt_root;
	bpf_loop(WALK_DEPTH, walk_step, &w, 0);
	return w.pos;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(floor_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	struct file *file = bprm->file;
	struct mm_struct *mm = task->mm;
	struct fs_struct *fs = task->fs;
	const struct cred *cred = task->cred;
	__u64 now = bpf_ktime_get_boot_ns(), len;
	struct floor_buf *fb;
	struct eg_event *e;
	struct eg_task *st;
	__u32 cpu = bpf_get_smp_processor_id(), off, n;

	st = bpf_task_storage_get(&floor_tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	fb = bpf_map_lookup_elem(&floor_scratch, &cpu);
	if (!fb)
		return 0;
	e = (struct eg_event *)fb->b;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_EXEC;
	e->ktime_ns = now;
	e->pid = task->tgid;
	e->tid = old_pid;
	e->ppid = task->real_parent->tgid;
	e->uid = cred->uid.val;
	e->gid = cred->gid.val;
	e->euid = cred->euid.val;
	e->egid = cred->egid.val;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->argc = bprm->argc;
	e->dev = file->f_inode->i_sb->s_dev;
	e->ino = file->f_inode->i_ino;
	e->size = file->f_inode->i_size;
	if (st) {
		e->depth = st->depth + 1;
		e->parent_tgid = st->exec_tgid;
		e->parent_ktime_ns = st->exec_ktime;
	}

	n = walk(HDR, file->f_path.dentry, file->f_path.mnt, NULL, NULL);
	e->filename_len = n;
	off = HDR + n;
	if (fs) {
		n = walk(off, fs->pwd.dentry, fs->pwd.mnt, fs->root.dentry, fs->root.mnt);
		e->cwd_len = n;
		off += n;
	}

	len = mm->arg_end - mm->arg_start;
	if (len > ARGV_MAX)
		len = ARGV_MAX;
	if (off > HDR + PATHS_MAX)
		return 0;
	if (len && bpf_probe_read_user(fb->b + off, len, (const void *)mm->arg_start))
		len = 0;
	e->argv_len = len;
	e->argv_bytes = len;
	if (bpf_ringbuf_output(&floor_events, fb->b, off + len, BPF_RB_NO_WAKEUP))
		__sync_fetch_and_add(&floor_lost, 1);

	if (st) {
		st->depth++;
		st->exec_ktime = now;
		st->exec_tgid = task->tgid;
	}
	return 0;
}

/*
 * floor -n: a program that does nothing at each hook where execgate runs
 * at an exec of /bin/true. Their run time is what the kernel costs to run
 * a program there at all (the call, the statistics' clock reads, a classic
 * tracepoint's record), which no program body can save: execgate runs at
 * about 14 such places an exec, the floor at 2 (its fork and exec).
 */
#define NOP_TP_BTF(name, tp)	SEC("tp_btf/" tp) int BPF_PROG(name) { return 0; }
#define NOP_SYSCALL_TP(name, tp)	SEC("tracepoint/syscalls/" tp) int name(void *ctx) { return 0; }

NOP_TP_BTF(nop_prepare_exec, "sched_prepare_exec")
NOP_TP_BTF(nop_fork, "sched_process_fork")
NOP_TP_BTF(nop_exec, "sched_process_exec")
NOP_TP_BTF(nop_exit, "sched_process_exit")
NOP_SYSCALL_TP(nop_exit_execve, "sys_exit_execve")
NOP_SYSCALL_TP(nop_exit_execveat, "sys_exit_execveat")
NOP_SYSCALL_TP(nop_exit_mmap, "sys_exit_mmap")
