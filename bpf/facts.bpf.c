// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the kernel keeps of a thread trapped in a session's seccomp
 * notification, for the supervisor, in one system call (BPF_PROG_RUN of a
 * syscall program): its thread group, effective uid, task storage (session,
 * depth), whether its root is the daemon's own, its pid and mount
 * namespaces and its cgroup. From userspace that takes a pidfd, an ioctl, a
 * map lookup, a close, a statx of /proc/TID/root, a stat of each namespace
 * and a read of /proc/TID/cgroup: many times the system calls, which cost on
 * these VMs.
 *
 * Nothing here is believed before the supervisor finds the notification
 * still pending afterwards (SECCOMP_IOCTL_NOTIF_ID_VALID): until then the
 * tid may have been another task's. A root read while another thread that
 * shares it calls chroot may be either root: the kernel's ticket check
 * kills an exec whose file is not the one judged.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the tracer's map, shared (bpf_map__reuse_fd): never created by this object */
EG_TASKS_MAP;

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/*
 * Its pid namespace (the one it lives in, its pid's last level) and mount
 * namespace: what a stat of /proc/TID/ns/pid and /proc/TID/ns/mnt gives,
 * without the two path lookups through /proc, which cost a session's exec
 * more than anything else here when the policy asks (cgroup rules judge
 * the depth in a container, an internal_bypass holds only in the host's
 * mount namespace). Not read (no EG_FACTS_NS) from an exiting task.
 */
static __always_inline void task_ns(struct task_struct *t, struct eg_facts *ctx)
{
	ctx->pid_ns = task_pid_ns(t);
	ctx->mnt_ns = BPF_CORE_READ(t, nsproxy, mnt_ns, ns.inum);
	if (ctx->pid_ns && ctx->mnt_ns)
		ctx->flags |= EG_FACTS_NS;
}

/*
 * Who made the task's namespaces, told against the caller's own user
 * namespace (ours, as /proc/self/ns/user shows it: its real creds'):
 * what util/ns.h asks of /proc/TID/ns/NAME, about a dozen system calls
 * for a task in a container's mount namespace.
 * - EG_FACTS_PID_NS_OURS: its pid namespace is owned by ours
 *   (eg_ns_ours).
 * - EG_FACTS_MNT_ROOT_MADE: its mount namespace's user namespace and
 *   each one above it, up to ours, were made by root, as a runtime's
 *   are, none by a user (eg_ns_root_made; as the kernel's judge tells a
 *   user's mount, mount_by_user in paths.bpf.h). An owner is a uid as
 *   the initial user namespace sees it: the caller is in that one
 *   (facts_open), where NS_GET_OWNER_UID answers the same.
 */
static __always_inline void task_ns_makers(struct task_struct *t, struct task_struct *me, struct eg_facts *ctx)
{
	struct user_namespace *ours = BPF_CORE_READ(me, real_cred, user_ns), *uns;
	struct pid *pid = BPF_CORE_READ(t, group_leader, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid up = {};
	__u32 i;

	if (!ours)
		return;
	if (pid && level < 32 && !bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level]) && up.ns &&
	    BPF_CORE_READ(up.ns, user_ns) == ours)
		ctx->flags |= EG_FACTS_PID_NS_OURS;
	uns = BPF_CORE_READ(t, nsproxy, mnt_ns, user_ns);
	for (i = 0; i < EG_USERNS_LEVELS && uns; i++) {
		if (uns == ours) {
			ctx->flags |= EG_FACTS_MNT_ROOT_MADE;
			break;
		}
		if (BPF_CORE_READ(uns, owner.val) != 0)
			break;
		uns = BPF_CORE_READ(uns, parent);
	}
}

SEC("syscall")
int task_facts(struct eg_facts *ctx)
{
	struct task_struct *t, *me = bpf_get_current_task_btf();
	struct fs_struct *fs, *myfs;
	struct eg_task *st;

	ctx->flags = 0;
	ctx->pid_ns = ctx->mnt_ns = 0;
	ctx->cgroup_id = 0;
	t = bpf_task_from_pid(ctx->tid);
	if (!t) {
		ctx->rc = -3;	/* ESRCH */
		return 0;
	}
	ctx->rc = 0;
	ctx->tgid = t->tgid;
	ctx->euid = t->cred->euid.val;
	st = bpf_task_storage_get(&tasks, t, 0, 0);
	if (st) {
		ctx->task = *st;
		ctx->flags |= EG_FACTS_STORAGE;
	}
	fs = t->fs;
	myfs = me->fs;
	if (fs && myfs && fs->root.mnt == myfs->root.mnt && fs->root.dentry == myfs->root.dentry)
		ctx->flags |= EG_FACTS_SAME_ROOT;
	task_ns(t, ctx);
	if (ctx->flags & EG_FACTS_NS)
		task_ns_makers(t, me, ctx);
	/* its cgroup in the v2 hierarchy, by id: the daemon knows the path (trace/cgroups.h) */
	ctx->cgroup_id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
	if (ctx->cgroup_id)
		ctx->flags |= EG_FACTS_CGROUP;
	bpf_task_release(t);
	return 0;
}
