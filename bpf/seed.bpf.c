// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Changes to a running task's storage that user space asks for (an agent
 * context found at the daemon's start, a depth set by `execgate task`),
 * made here by an iterator over the tasks, field by field.
 *
 * From user space a map update replaces the whole value: a lookup, a
 * change and an update put back whatever the task's own programs wrote in
 * between, if the task exec'd then. That is the exec id and depth of the
 * image before, and flags the exec set and a later program acts on: a
 * dynamic loader's first mapping still to judge, a kill still to send. A
 * denied program could then run. Here only the fields asked are written,
 * and flags only by an atomic or.
 *
 * A context written here can still be lost to an exec that read the task's
 * storage just before and writes it back after (exec_update): the caller
 * looks again and asks once more (trace/seed.c).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "execgate.h"
#include "execgate.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* the tracer's map, shared (bpf_map__reuse_fd): never created by this object */
EG_TASKS_MAP;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* set at load: the number of changes asked */
	__type(key, __u32);		/* the thread id */
	__type(value, struct eg_seed);
} seeds SEC(".maps");

SEC("iter/task")
int seed_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct eg_seed *s;
	struct eg_task *st;
	__u32 tid;

	if (!task)
		return 0;
	tid = task->pid;
	s = bpf_map_lookup_elem(&seeds, &tid);
	if (!s)
		return 0;
	if (s->op == EG_SEED_CONTEXT) {
		st = bpf_task_storage_get(&tasks, task, 0, 0);
		if (!st || !(st->flags & EG_TASK_KNOWN)) {
			s->result = EG_SEED_NO_STORAGE;
			return 0;
		}
		if (!st->context) {
			st->context_depth = s->context_depth;
			st->context_ktime = 0;
			st->context_tgid = s->context_tgid;
			st->context = s->context;
		}
		s->result = EG_SEED_DONE;
	} else if (s->op == EG_SEED_DEPTH) {
		st = bpf_task_storage_get(&tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st) {
			s->result = EG_SEED_NO_STORAGE;
			return 0;
		}
		st->depth = s->depth;
		__sync_fetch_and_or(&st->flags, EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN);
		s->result = EG_SEED_DONE;
	}
	return 0;
}
