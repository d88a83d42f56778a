// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the kernel keeps of a thread trapped in a session's seccomp
 * notification, for the supervisor, in one system call (BPF_PROG_RUN of a
 * syscall program): its thread group, effective uid, task storage (session,
 * depth), and whether its root is the daemon's own. From userspace that
 * takes a pidfd, an ioctl, a map lookup, a close and a statx of
 * /proc/TID/root: four times the system calls, which cost on these VMs.
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

SEC("syscall")
int task_facts(struct eg_facts *ctx)
{
	struct task_struct *t, *me = bpf_get_current_task_btf();
	struct fs_struct *fs, *myfs;
	struct eg_task *st;

	ctx->flags = 0;
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
	bpf_task_release(t);
	return 0;
}
