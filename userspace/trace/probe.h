/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Kernel feature probes. Each feature is tried for real (a map created, a
 * tiny program loaded, a syscall made), never inferred from the version.
 */
#ifndef EG_PROBE_H
#define EG_PROBE_H

#include <stdbool.h>
#include <stddef.h>

enum eg_feature {
	EG_FEAT_BTF,		/* /sys/kernel/btf/vmlinux loads */
	EG_FEAT_RINGBUF,
	EG_FEAT_TASK_STORAGE,
	EG_FEAT_TRACEPOINT,	/* tracepoint/syscalls/sys_enter_execve loads */
	EG_FEAT_TP_BTF,		/* tp_btf/sched_process_exec loads */
	EG_FEAT_FENTRY,
	EG_FEAT_BPF_LSM,	/* lsm/bprm_check_security loads */
	EG_FEAT_BPF_LSM_CGROUP,
	EG_FEAT_SEND_SIGNAL,	/* bpf_send_signal from a tracing program */
	EG_FEAT_SECCOMP_NOTIF,	/* SECCOMP_FILTER_FLAG_NEW_LISTENER works */
	EG_FEAT_WAIT_KILLABLE_RECV,
	EG_FEAT_PIDFD,
	EG_FEAT__COUNT,
};

/*
 * bpf_lsm and bpf_lsm_cgroup also need bpf in /sys/kernel/security/lsm: a
 * kernel with CONFIG_BPF_LSM loads LSM programs without it and never runs
 * them (then: EOPNOTSUPP). probe_features() may mount tracefs and
 * securityfs (mounts.h) to find out; it leaves nothing else behind.
 */

struct eg_feature_result {
	bool available;
	int err;			/* negative errno when unavailable */
	char reason[160];		/* why, in a few words */
};

struct eg_features {
	struct eg_feature_result r[EG_FEAT__COUNT];
};

const char *eg_feature_name(enum eg_feature f);	/* "tp_btf", "bpf_lsm", ... */

/* Runs every probe; returns 0 (individual results are in *ret). */
int probe_features(struct eg_features *ret);

/*
 * The daemon's mode given the features: fills tracer ("tp_btf" or
 * "unavailable"), kernel enforcement ("bpf_lsm", "kill_on_exec" or "none")
 * and session enforcement ("seccomp_notify" or "none"), and where failed
 * execs are seen ("syscall_tracepoints"; fexit on the exec syscalls is not
 * used: "none" when the tracepoints are missing).
 */
struct eg_mode {
	const char *tracer;
	const char *kernel_enforcement;
	const char *session_enforcement;
	const char *exec_failed_source;	/* where failed execs come from: "syscall_tracepoints", "none" */
};
void probe_mode(const struct eg_features *f, struct eg_mode *ret);

#endif
