// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Task storage of the older layout (struct eg_task of 96 bytes, before 28
 * November 2026) copied into this version's "tasks", task by task, by an
 * iterator over every task, threads included. A daemon that finds such a
 * map pinned (an upgrade, by handover or restart) runs it just before its
 * programs take over and once after (trace/migrate.c), so that the depths,
 * sessions and contexts of the running processes carry over: a session's
 * processes keep their session id, which the kernel's ticket check and the
 * approvals' self-answer check read.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the older value: this version's first EG_TASK_V1_SIZE bytes, as they were */
struct eg_task_v1 {
	__u8 b[EG_TASK_V1_SIZE];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct eg_task_v1);
} old_tasks SEC(".maps");

EG_TASKS_MAP;

__u64 copied = 0;	/* entries written */
__u64 newer = 0;	/* entries left: this version's programs wrote them since */
__u64 failed = 0;	/* entries the kernel had no room for */

SEC("iter/task")
int migrate_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct eg_task_v1 *o;
	struct eg_task *n;

	if (!task)
		return 0;
	o = bpf_task_storage_get(&old_tasks, task, 0, 0);
	if (!o)
		return 0;
	n = bpf_task_storage_get(&tasks, task, 0, 0);
	if (n && n->exec_ktime >= ((struct eg_task *)o)->exec_ktime) {
		__sync_fetch_and_add(&newer, 1);
		return 0;
	}
	if (!n)
		n = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!n) {
		__sync_fetch_and_add(&failed, 1);
		return 0;
	}
	__builtin_memcpy(n, o, EG_TASK_V1_SIZE);
	/* what the older layout did not keep: unknown */
	n->parent_tgid = 0;
	n->exec_seq = 0;
	n->parent_ktime = 0;
	__sync_fetch_and_add(&copied, 1);
	return 0;
}
