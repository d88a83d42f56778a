// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Feature probes for `execgate probe`: one tiny program per program type
 * the daemon may use. userspace/probe.c loads them one at a time (autoload
 * off for the others), so each load answers exactly one question. None of
 * them is meant to run: only the tracepoint one is ever attached, briefly,
 * and it does nothing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * In .bss, not .rodata: the verifier must not know it is zero, or it would
 * prune the bpf_send_signal() call and the probe would prove nothing.
 */
__u32 signal_tgid;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(probe_tp_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_execve")
int probe_tracepoint(void *ctx)
{
	return 0;
}

/* Target set at runtime to a function found in vmlinux BTF. */
SEC("fentry")
int BPF_PROG(probe_fentry)
{
	return 0;
}

SEC("lsm/bprm_check_security")
int BPF_PROG(probe_lsm, struct linux_binprm *bprm)
{
	return 0;
}

/* Cgroup LSM programs return 1 to allow, like other cgroup programs. */
SEC("lsm_cgroup/bprm_check_security")
int BPF_PROG(probe_lsm_cgroup, struct linux_binprm *bprm)
{
	return 1;
}

/*
 * Same program type as the kill-on-exec fallback's hook. Never attached;
 * the guard only matters if someone attaches it by hand.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(probe_send_signal, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (signal_tgid && tgid == signal_tgid)
		bpf_send_signal(9 /* SIGKILL */);
	return 0;
}
