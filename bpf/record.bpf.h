/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The exec record: header, strings (the file that runs, the path as
 * spelled, a script's interpreter and file, the working directory) and the
 * committed argv, built in scratch and copied into the ring buffer.
 */
#ifndef EG_RECORD_BPF_H
#define EG_RECORD_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"
#include "common.bpf.h"
#include "paths.bpf.h"
#include "scripts.bpf.h"
#include "kjudge.bpf.h"
#include "loader.bpf.h"

/*
 * The CPU's scratch buffer as a record of type: its header zeroed, its
 * time now. NULL (counted) when the CPU has none.
 */
static __always_inline struct eg_event *record_begin(__u32 type)
{
	struct eg_event *e = (struct eg_event *)scratch_get();

	if (!e) {
		COUNT(scratch_missing);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->ktime_ns = bpf_ktime_get_boot_ns();
	return e;
}

/* ---- record assembly ---------------------------------------------------- */

static __always_inline void submit(char *buf, __u32 size, __u32 type)
{
	__u64 flags = 0;
	struct eg_counters *c;
	__u32 ev_flags;
	long err;

	if (size > EG_RECORD_MAX(max_argv_bytes)) {
		COUNT(record_too_big);
		return;
	}
	/*
	 * Batch: the kernel wakes the daemon only for a record it reads first
	 * (the ring was drained: it sleeps with no timer), and we wake it past
	 * the fill threshold; between the two it drains after a bounded delay.
	 * While it drains on its timer anyway, no record wakes it but past
	 * the threshold (ring_wakeup(), common.bpf.h).
	 */
	flags = ring_wakeup(size);
	ev_flags = ((struct eg_event *)buf)->flags;
	err = bpf_ringbuf_output(&events, buf, size, flags);
	c = counters_get();
	if (!c)
		return;
	if (err) {
		if (type == EG_EVENT_EXEC)
			COUNT_LOSS(c, lost_exec);
		else if (type == EG_EVENT_EXEC_FAILED)
			COUNT_LOSS(c, lost_exec_failed);
		else
			COUNT_LOSS(c, lost_other);
		return;
	}
	if (type == EG_EVENT_EXEC)
		__sync_fetch_and_add(&c->exec, 1);
	else if (type == EG_EVENT_EXEC_FAILED)
		__sync_fetch_and_add(&c->exec_failed, 1);
	else
		__sync_fetch_and_add(&c->other, 1);
	if (ev_flags & EG_F_ARGV_TRUNC)
		__sync_fetch_and_add(&c->argv_truncated, 1);
	if (ev_flags & (EG_F_ARGV_FAULT | EG_F_FILENAME_FAULT | EG_F_CWD_FAULT))
		__sync_fetch_and_add(&c->read_faults, 1);
}

/* Who runs it: credentials, namespaces, terminal, login uid. */
static __always_inline void fill_task(struct eg_event *e, struct task_struct *task)
{
	const struct cred *cred = task->cred;
	struct tty_struct *tty;
	struct upid up = {};
	struct pid *pid;
	unsigned int level;

	e->ppid = task->real_parent->tgid;
	e->uid = cred->uid.val;
	e->gid = cred->gid.val;
	e->euid = cred->euid.val;
	e->egid = cred->egid.val;
	if (bpf_core_field_exists(task->loginuid))
		e->auid = task->loginuid.val;
	else
		e->auid = EG_AUID_UNSET;
	e->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->mnt_ns = task->nsproxy->mnt_ns->ns.inum;
	/* the pid namespace the task lives in, and its pid there (a variable index: one read) */
	pid = task->group_leader->thread_pid;
	level = pid->level;
	if (level < 32 && !bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level])) {
		e->pid_ns = BPF_CORE_READ(up.ns, ns.inum);
		e->ns_pid = up.nr;
	}
	tty = task->signal->tty;
	if (tty)
		bpf_probe_read_kernel_str(e->tty, sizeof(e->tty), &tty->name);
}

static __always_inline void fill_lineage(struct eg_event *e, struct eg_task *st, __s32 new_depth)
{
	if (st && (st->flags & EG_TASK_KNOWN)) {
		/* a depth set from userspace comes without an exec id */
		if (st->exec_ktime)
			e->flags |= EG_F_PARENT_KNOWN;
		e->parent_tgid = st->exec_tgid;
		e->parent_ktime_ns = st->exec_ktime;
		e->session = st->session;
		if (st->flags & EG_TASK_DEPTH_KNOWN)
			e->flags |= EG_F_DEPTH_KNOWN;
		if (st->flags & EG_TASK_INFERRED)
			e->flags |= EG_F_DEPTH_INFERRED;
		if (st->flags & EG_TASK_SESSION_DEPTH) {
			e->flags |= EG_F_SESSION_DEPTH;
			e->session_depth = st->session_depth + 1;
		}
		e->context = st->context;
		if (st->context) {
			e->context_depth = st->context_depth + 1;
			e->context_ktime = st->context_ktime;
			e->context_tgid = st->context_tgid;
		}
	}
	e->depth = new_depth;
}


/*
 * The depth from a container's first exec: the first exec from the host
 * into a pid namespace root made is 0 (a container's command, or one
 * `podman exec` runs), each below it one more, in namespaces made inside
 * it too; in a namespace a user made, the host's depth (container_depth_of).
 */
static __always_inline void fill_container(struct eg_event *e, struct eg_task *st)
{
	if (!e->pid_ns || e->pid_ns == host_pid_ns)
		return;
	e->flags |= EG_F_CONTAINER;
	e->container_depth = container_depth_of(st, bpf_get_current_task_btf(), 1);
}

/*
 * Is this the image of an execgate binary whose first argument is "exec"?
 * argv[0] is read into scratch (overwritten later) to find where argv[1]
 * starts: one bounded string read instead of a byte loop.
 */
static __noinline bool is_launcher(struct file *file, unsigned long arg_start,
				   unsigned long arg_end)
{
	struct eg_file_key k;
	char word[8] = {};
	char *buf;
	long n;

	k.dev = inode_dev(file->f_inode);
	k.ino = file->f_inode->i_ino;
	if (!bpf_map_lookup_elem(&launchers, &k))
		return false;
	buf = scratch_get();
	if (!buf)
		return false;
	n = bpf_probe_read_user_str(buf + EG_EVENT_HDR, EG_FILENAME_MAX, (const void *)arg_start);
	n = eg_str_whole(n, (const char *)arg_start, EG_FILENAME_MAX, true);
	if (!n)
		return false;
	arg_start += n;
	if (arg_start + 5 > arg_end || bpf_probe_read_user(word, 5, (const void *)arg_start))
		return false;
	return word[0] == 'e' && word[1] == 'x' && word[2] == 'e' && word[3] == 'c' && word[4] == 0;
}

/*
 * Kills current before its new image runs an instruction (the signal is
 * delivered on the way back to user mode). bpf_send_signal can refuse
 * (-EBUSY when this CPU has one in flight): the task is marked and the
 * syscall exit tracepoint tries again.
 */
static __noinline void kill_current(struct eg_event *e, struct task_struct *task)
{
	struct eg_task *st;

	e->flags |= EG_F_KILLED;
	if (bpf_send_signal(9 /* SIGKILL */)) {
		e->flags |= EG_F_KILL_FAILED;
		COUNT(kill_failed);
		st = bpf_task_storage_get(&tasks, task, 0, 0);
		if (st)
			st->flags |= EG_TASK_MUST_DIE;
	}
	COUNT(killed);
}

/*
 * Where the next string of e starts. The lengths are read back from the
 * record (map memory, volatile so the compiler does not forward them): the
 * verifier then sees one state here, however each string read went, instead
 * of one per combination of outcomes.
 */
static __always_inline __u64 strings_end(struct eg_event *e)
{
	__u64 off = EG_EVENT_HDR;

	off += *(volatile __u16 *)&e->filename_len;
	off += *(volatile __u16 *)&e->requested_len;
	off += *(volatile __u16 *)&e->interp_len;
	off += *(volatile __u16 *)&e->script_len;
	off += *(volatile __u16 *)&e->chain_len;
	off += *(volatile __u16 *)&e->cwd_len;
	return off;
}

static __always_inline __u16 cut16(__u32 n, __u32 max)
{
	barrier_var(n);
	return n > max ? max : n;
}

/* A shell image's place in the row of shells its caller's image began (st: the caller's storage, or NULL). */
static __always_inline __u16 shell_in_row(struct eg_task *st)
{
	return st && (st->flags & EG_TASK_KNOWN) ? st->shells + 1 : 1;
}

/*
 * The record's file (filename): its path walked to its mount namespace's
 * root, and whether that namespace is a user's; a file in no namespace (a
 * memfd) by its name alone.
 */
static __always_inline void record_filename(struct eg_event *e, char *buf, struct dentry *d, struct vfsmount *m)
{
	struct path_walk w;
	__u32 n;

	if (mount_internal(m)) {
		e->flags |= EG_F_ANON_FILE;
		n = read_anon_name(d, buf, EG_EVENT_HDR, &e->flags, EG_F_FILENAME_FAULT);
	} else {
		PATH_WALK(w, d, m, NULL, NULL, EG_EVENT_HDR, EG_F_FILENAME_TRUNC, EG_F_FILENAME_FAULT,
			  EG_F_FILE_DELETED);
		n = read_path(&w);
		e->flags |= w.flags;
		if (on_user_mount(m))
			e->flags2 |= EG_F2_USER_MOUNT;
	}
	e->filename_len = cut16(n, EG_FILENAME_MAX);
}

/* filename, requested, interp, script, chain and cwd, one after the other */
static __always_inline void exec_strings(struct eg_event *e, char *buf, struct task_struct *task,
					 struct linux_binprm *bprm, struct file *file)
{
	const char *fname, *interp;
	__u32 n;

	/* the file that runs, by its place in the mount namespace */
	record_filename(e, buf, file->f_path.dentry, file->f_path.mnt);

	/* the path as the caller spelled it */
	fname = bprm->filename;
	n = read_kstr(buf, strings_end(e), fname, &e->flags, EG_F_REQUESTED_TRUNC, EG_F_FILENAME_FAULT);
	e->requested_len = cut16(n, EG_FILENAME_MAX);

	/* a script: bprm->interp moved off bprm->filename to the '#!' interpreter */
	interp = bprm->interp;
	if (interp != fname) {
		e->flags |= EG_F_SCRIPT;
		n = read_kstr(buf, strings_end(e), interp, &e->flags, EG_F_INTERP_TRUNC,
			      EG_F_FILENAME_FAULT);
		e->interp_len = cut16(n, EG_FILENAME_MAX);
		n = read_script(task, buf, strings_end(e), e);
		e->script_len = cut16(n, EG_FILENAME_MAX);
		n = read_chain(task, strings_end(e), e);
		e->chain_len = cut16(n, EG_CHAIN_BYTES);
	}

	/* the working directory, as the task sees it (from its own root) */
	n = read_cwd(task, strings_end(e), &e->flags);
	e->cwd_len = cut16(n, EG_CWD_MAX);
}

/*
 * The exec record in scratch: header, strings, the committed argv.
 * Returns its size; 0 when there is none (out of scope, no buffer, too
 * big). Apart from the checks below (exec_check()), so that the frames
 * of the kernel judgement's call chain stay within 512 bytes of stack.
 */
static __noinline __u32 exec_record(struct task_struct *task, pid_t old_pid,
				    struct linux_binprm *bprm, bool launcher, struct eg_task *st)
{
	struct file *file = bprm->file;
	struct mm_struct *mm = task->mm;
	unsigned long arg_start = mm->arg_start, arg_end = mm->arg_end;
	struct eg_event *e;
	struct inode *inode;
	__u64 len, off;
	char *buf;

	buf = scratch_get();
	if (!buf) {
		COUNT(scratch_missing);
		/* a session exec, or one kernel rules judge, that cannot be checked does not run */
		if (((st && st->session) || (krules_loaded() && kenforcing())) && bpf_send_signal(9))
			COUNT(kill_failed);
		return 0;
	}
	e = (struct eg_event *)buf;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = EG_EVENT_EXEC;
	e->pid = task->tgid;
	e->tid = old_pid;
	fill_lineage(e, st, st && (st->flags & EG_TASK_KNOWN) ? st->depth + 1 : 0);
	e->session = st ? st->session : 0;
	if (launcher)
		e->flags |= EG_F_LAUNCHER;
	e->argc = bprm->argc;
	/*
	 * From here on the record is the state: what was decided above is read
	 * back from it, so the verifier does not carry one copy of the rest per
	 * outcome.
	 */
	if (!traced_cgroup() && !*(volatile __u32 *)&e->session)
		return 0;

	fill_task(e, task);
	fill_container(e, st);
	if (bpf_core_field_exists(bprm->secureexec) && BPF_CORE_READ_BITFIELD(bprm, secureexec))
		e->flags |= EG_F_SECUREEXEC;
	inode = file->f_inode;
	e->dev = inode_dev(inode);
	e->ino = inode->i_ino;
	e->size = inode->i_size;
	file_backing(e, task, inode);
	/* an overlayfs view of a loader (a mount any user can make in a namespace of its own) is that loader */
	if (is_loader(e->dev, e->ino) || ((e->flags & EG_F_BACKING) && is_loader(e->backing_dev, e->backing_ino))) {
		e->flags |= EG_F_LOADER;
		/*
		 * A 32-bit loader maps with mmap2, a compat call that fires no
		 * syscall tracepoint: the program it maps is never judged
		 * (loaded.bpf.h). Its header's class says so (EI_CLASS 1).
		 */
		if (BPF_CORE_READ(bprm, buf[4]) == 1)
			e->flags2 |= EG_F2_LOADER_32;
	}
	exec_strings(e, buf, task, bprm, file);
	/* a shell image: one more in a row (the path is leaf first: its name comes first) */
	if (is_named(&shells, buf + EG_EVENT_HDR))
		e->shells = shell_in_row(st);

	/* argv as committed to the new mm: what the program will read */
	len = arg_end > arg_start ? arg_end - arg_start : 0;
	e->argv_bytes = len > 0xffffffffull ? 0xffffffffu : len;
	if (len > max_argv_bytes)
		e->flags |= EG_F_ARGV_TRUNC;
	eg_clamp(len, max_argv_bytes);
	off = strings_end(e);
	if (off > EG_EVENT_HDR + EG_STRINGS_MAX) {
		COUNT(record_too_big);
		if (*(volatile __u32 *)&e->session || (krules_loaded() && kenforcing()))
			kill_current(e, task);
		return 0;
	}
	eg_clamp(off, EG_EVENT_HDR + EG_STRINGS_MAX);
	if (len && bpf_probe_read_user(buf + off, len, (const void *)arg_start)) {
		e->flags |= EG_F_ARGV_FAULT;
		len = 0;
	}
	e->argv_len = len;
	if (e->flags & EG_F_LOADER) {
		e->loader_arg = loader_target(buf + off, len);
		if (e->loader_arg && e->loader_arg != EG_LOADER_ARG_UNKNOWN && loader_target_shell())
			e->shells = shell_in_row(st);
	}
	return off + len;
}

#endif /* EG_RECORD_BPF_H */
