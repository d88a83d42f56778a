// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The feature probe that needs libbpf's attach by tracefs: a tracepoint
 * program, attached briefly, doing nothing. The BTF-typed probes (tp_btf,
 * fentry, LSM, LSM cgroup, bpf_send_signal) are loaded by
 * userspace/trace/probe.c itself from a few instructions, against the
 * vmlinux BTF it reads once.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tracepoint/syscalls/sys_enter_execve")
int probe_tracepoint(void *ctx)
{
	return 0;
}
