/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Helpers for the BPF side only. */
#ifndef EXECGATE_BPF_H
#define EXECGATE_BPF_H

#define EG_EVENT_HDR	sizeof(struct eg_event)

/* include/linux/fs.h: macros are not in BTF */
#define EG___FMODE_EXEC	0x20		/* in f_flags: opened by exec (open_exec) */

/* container_of with a CO-RE offset: struct mount's layout moves between kernels. */
#define eg_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - bpf_core_field_offset(type, member)))

/*
 * v = min(v, max) on the very register that is used afterwards: written in C,
 * clang may compare one copy and use another, and the verifier then sees an
 * unbounded size. max may be a const volatile (known to the verifier).
 */
#define eg_clamp(v, max)						\
	asm volatile("if %[val] <= %[lim] goto +1\n\t"			\
		     "%[val] = %[lim]"					\
		     : [val] "+r"(v) : [lim] "r"((__u64)(max)))

/*
 * A string read whole: n is what bpf_probe_read_{kernel,user}_str() of src
 * into max bytes returned, its NUL counted. n == max is a string of max - 1
 * bytes (its NUL the last byte read), the longest that fits, or one cut
 * short: src's byte at max - 1 tells. Returns n, or 0 for a string cut or
 * not read.
 */
static __always_inline long eg_str_whole(long n, const char *src, __u32 max, bool user)
{
	char c = 1;

	if (n <= 0 || n > max)
		return 0;
	if (n < max)
		return n;
	if (user ? bpf_probe_read_user(&c, 1, src + max - 1) : bpf_probe_read_kernel(&c, 1, src + max - 1))
		return 0;
	return c ? 0 : n;
}

/* The pid namespace the task lives in (its inode number; 0: not read). */
static __always_inline __u32 task_pid_ns(struct task_struct *task)
{
	struct upid up = {};
	struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);

	if (!pid || level >= 32 || bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level]))
		return 0;
	return BPF_CORE_READ(up.ns, ns.inum);
}

/*
 * The task's pid namespace is owned by the initial user namespace: root
 * made it (a container runtime). One a user made (`unshare -Urp`) is owned
 * by the user namespace made with it.
 */
static __always_inline bool task_pid_ns_by_root(struct task_struct *task)
{
	struct upid up = {};
	struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);

	if (!pid || level >= 32 || bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level]))
		return true;
	return BPF_CORE_READ(up.ns, user_ns, level) == 0;
}

/*
 * The task storage of depths and sessions, shared by the tracer and the
 * supervisor's facts program (facts.bpf.c reuses the tracer's map: one
 * definition, so that the two can never disagree on it).
 */
#define EG_TASKS_MAP							\
	struct {							\
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE);		\
		__uint(map_flags, BPF_F_NO_PREALLOC);			\
		__type(key, int);					\
		__type(value, struct eg_task);				\
	} tasks SEC(".maps")

/*
 * The container depth of the task's image (next 0) or of its next (1), in
 * its pid namespace (not the host's), from its storage st. A container's
 * first exec is 0: a task that comes from the host into a namespace root
 * made. From there the count goes on, in that namespace and in any made
 * inside it. A namespace a user made from the host (`unshare -Urp`) starts
 * nothing: the host's depth goes on, so no one makes an exec "direct" by
 * entering a pid namespace of their own.
 */
static __always_inline __s32 container_depth_of(const struct eg_task *st, struct task_struct *task, int next)
{
	if (!st || !(st->flags & EG_TASK_KNOWN))
		return 0;
	if (st->cont_pidns)
		return st->container_depth + next;
	if (!task_pid_ns_by_root(task))
		return st->depth + next;
	return 0;
}

#endif /* EXECGATE_BPF_H */
