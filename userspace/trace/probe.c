// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Kernel feature probes and `execgate probe`. Every feature is tried for
 * real: a program of bpf/probe.bpf.c loaded alone, a map created, a
 * syscall made (seccomp ones in a throwaway child, since filters cannot be
 * removed). A kernel version number says nothing about backports, distro
 * config, lockdown or the active LSMs, so it is never consulted.
 *
 * probe_features() leaves nothing behind (every map, program, link, fd and
 * child is gone when it returns) except two standard mounts the daemon
 * needs anyway: tracefs when it was missing, and securityfs when BPF LSM
 * programs load and only the active LSM list can tell whether they run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "util/json.h"
#include "util/caps.h"
#include "util/errnos.h"
#include "util/log.h"
#include "util/mounts.h"
#include "util/seccomp_notif.h"
#include "trace/probe.h"
#include "probe.skel.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524	/* kernel-internal, but BPF_PROG_LOAD leaks it */
#endif

#define EG_LSM_LIST EG_SECURITYFS_DIR "/lsm"

/* Tried in order; the first one in vmlinux BTF becomes the fentry target. */
static const char *const fentry_targets[] = {
	"bpf_fentry_test1",	/* exists for exactly this purpose (net/bpf/test_run.c) */
	"do_nanosleep",
	"__x64_sys_getpid",
};

static const char *const feature_names[EG_FEAT__COUNT] = {
	[EG_FEAT_BTF]			= "btf",
	[EG_FEAT_RINGBUF]		= "ringbuf",
	[EG_FEAT_TASK_STORAGE]		= "task_storage",
	[EG_FEAT_TRACEPOINT]		= "tracepoint",
	[EG_FEAT_TP_BTF]		= "tp_btf",
	[EG_FEAT_FENTRY]		= "fentry",
	[EG_FEAT_BPF_LSM]		= "bpf_lsm",
	[EG_FEAT_BPF_LSM_CGROUP]	= "bpf_lsm_cgroup",
	[EG_FEAT_SEND_SIGNAL]		= "send_signal",
	[EG_FEAT_SECCOMP_NOTIF]		= "seccomp_notif",
	[EG_FEAT_WAIT_KILLABLE_RECV]	= "wait_killable_recv",
	[EG_FEAT_PIDFD]			= "pidfd",
};

const char *eg_feature_name(enum eg_feature f)
{
	if ((unsigned int)f >= EG_FEAT__COUNT)
		return "?";
	return feature_names[f];
}

/* Whether the failing libbpf step was the kernel's BPF_PROG_LOAD. */
static bool prog_load_failed;
static libbpf_print_fn_t saved_print;
static bool privileged;

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (strstr(fmt, "program load failed"))
		prog_load_failed = true;
	if (eg_verbose && saved_print)
		return saved_print(level, fmt, ap);
	return 0;
}

static void set_ok(struct eg_features *f, enum eg_feature feat, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_ok(struct eg_features *f, enum eg_feature feat, const char *fmt, ...)
{
	struct eg_feature_result *r = &f->r[feat];
	va_list ap;

	r->available = true;
	r->err = 0;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

/* reason = "<ERRNO> at <step>: <hint>", the hint cut to fit */
static void set_fail(struct eg_features *f, enum eg_feature feat, int err, const char *step,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void set_fail(struct eg_features *f, enum eg_feature feat, int err, const char *step,
		     const char *fmt, ...)
{
	struct eg_feature_result *r = &f->r[feat];
	char ebuf[16];
	va_list ap;
	int n;

	r->available = false;
	r->err = err < 0 ? err : -EINVAL;
	n = snprintf(r->reason, sizeof(r->reason), "%s at %s: ",
		     eg_errno_name(r->err, ebuf, sizeof(ebuf)), step);
	if (n < 0 || (size_t)n >= sizeof(r->reason))
		return;
	va_start(ap, fmt);
	vsnprintf(r->reason + n, sizeof(r->reason) - n, fmt, ap);
	va_end(ap);
}

/* A hint for errors any BPF probe can hit; NULL when only the caller knows. */
static const char *common_hint(int err)
{
	switch (-err) {
	case EPERM:
	case EACCES:
		return privileged ? NULL : "needs root (CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)";
	case ENOMEM:
		return "out of memory (memlock limit on kernels without memcg accounting?)";
	default:
		return NULL;
	}
}

enum step { STEP_OPEN, STEP_LOAD, STEP_PROG_LOAD, STEP_ATTACH };
static const char *const step_names[] = {
	[STEP_OPEN]	 = "open",
	[STEP_LOAD]	 = "load",
	[STEP_PROG_LOAD] = "BPF_PROG_LOAD",
	[STEP_ATTACH]	 = "attach",
};

/*
 * Loads the program called name, alone (every other program and thus its
 * maps stay out); with attach, attaches and detaches it too. Returns 0 or
 * -errno and the step that failed in *ret_step.
 */
static int try_prog(const char *name, const char *target, bool attach, enum step *ret_step)
{
	struct bpf_program *prog, *p;
	struct probe_bpf *skel;
	struct bpf_link *link;
	int err;

	*ret_step = STEP_OPEN;
	skel = probe_bpf__open();
	if (!skel)
		return -errno;
	prog = bpf_object__find_program_by_name(skel->obj, name);
	if (!prog) {
		err = -ENOENT;
		goto cleanup;
	}
	bpf_object__for_each_program(p, skel->obj)
		bpf_program__set_autoload(p, p == prog);
	if (target) {
		err = bpf_program__set_attach_target(prog, 0, target);
		if (err)
			goto cleanup;
	}
	*ret_step = STEP_LOAD;
	prog_load_failed = false;
	err = probe_bpf__load(skel);
	if (err) {
		if (prog_load_failed)
			*ret_step = STEP_PROG_LOAD;
		goto cleanup;
	}
	if (attach) {
		*ret_step = STEP_ATTACH;
		link = bpf_program__attach(prog);
		if (!link) {
			err = -errno;
			goto cleanup;
		}
		bpf_link__destroy(link);
	}
cleanup:
	probe_bpf__destroy(skel);
	return err;
}

/*
 * The BTF-typed probes load their program directly: two or four
 * instructions against an attach target found in the vmlinux BTF the
 * probe already read, instead of a skeleton per probe (each of which
 * parses all 5 MB of vmlinux BTF again: 70 ms a probe, at every daemon
 * start). Returns 0 or -errno, the step that failed in *ret_step.
 */
enum raw_body { RAW_RETURN_0, RAW_RETURN_1, RAW_SEND_SIGNAL };

static int try_raw(const struct btf *btf, enum bpf_prog_type type, enum bpf_attach_type attach,
		   const char *target, int kind, enum raw_body body, enum step *ret_step)
{
	const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = body == RAW_RETURN_1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	const struct bpf_insn kill[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 9 /* SIGKILL */ },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_send_signal },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach);
	int id, fd;

	*ret_step = STEP_LOAD;
	if (!btf)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, target, kind);
	if (id < 0)
		return -ESRCH;
	opts.attach_btf_id = id;
	*ret_step = STEP_PROG_LOAD;
	if (body == RAW_SEND_SIGNAL)
		fd = bpf_prog_load(type, "eg_probe", "GPL", kill, sizeof(kill) / sizeof(kill[0]), &opts);
	else
		fd = bpf_prog_load(type, "eg_probe", "GPL", ret0, sizeof(ret0) / sizeof(ret0[0]), &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

#define EXEC_TP		"btf_trace_sched_process_exec"
#define BPRM_HOOK	"bpf_lsm_bprm_check_security"

static struct btf *probe_btf(struct eg_features *f)
{
	struct btf *btf;
	int err;

	btf = btf__load_vmlinux_btf();
	if (!btf) {
		err = -errno;
		set_fail(f, EG_FEAT_BTF, err, "btf__load_vmlinux_btf",
			 err == -ENOENT ? "no /sys/kernel/btf/vmlinux; kernel built without CONFIG_DEBUG_INFO_BTF"
					: "kernel BTF unreadable");
		return NULL;
	}
	set_ok(f, EG_FEAT_BTF, "%s", "");
	return btf;
}

static void probe_map(struct eg_features *f, enum eg_feature feat, enum bpf_map_type type,
		      const char *hint)
{
	const char *h;
	int ret;

	errno = 0;
	ret = libbpf_probe_bpf_map_type(type, NULL);
	if (ret == 1) {
		set_ok(f, feat, "%s", "");
		return;
	}
	/* 0: the kernel refused the map; libbpf leaves its errno in place. */
	if (ret == 0)
		ret = errno ? -errno : -EOPNOTSUPP;
	h = common_hint(ret);
	set_fail(f, feat, ret, "BPF_MAP_CREATE", "%s", h ? h : hint);
}

static void probe_tracepoint(struct eg_features *f)
{
	enum step step;
	const char *h;
	int err;

	/* libbpf finds a tracepoint's id in tracefs; without it attach fails. */
	err = eg_mount_tracefs();
	if (err) {
		set_fail(f, EG_FEAT_TRACEPOINT, err, "mount tracefs",
			 err == -ENOENT ? "tracefs has no events; kernel built without CONFIG_FTRACE?"
					: "no tracefs at " EG_TRACEFS_DIR " and mounting it failed");
		return;
	}
	err = try_prog("probe_tracepoint", NULL, true, &step);
	if (!err) {
		set_ok(f, EG_FEAT_TRACEPOINT, "%s", "");
		return;
	}
	h = common_hint(err);
	if (!h && step == STEP_ATTACH && err == -ENOENT)
		h = "no syscalls/sys_enter_execve tracepoint; kernel built without CONFIG_FTRACE_SYSCALLS";
	set_fail(f, EG_FEAT_TRACEPOINT, err, step_names[step], "%s",
		 h ? h : "tracepoint programs refused by this kernel");
}

static void probe_tp_btf(struct eg_features *f, const struct btf *btf)
{
	enum step step;
	const char *h;
	int err;

	err = try_raw(btf, BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, EXEC_TP, BTF_KIND_TYPEDEF, RAW_RETURN_0, &step);
	if (!err) {
		set_ok(f, EG_FEAT_TP_BTF, "%s", "");
		return;
	}
	h = common_hint(err);
	if (!h && !f->r[EG_FEAT_BTF].available)
		h = "needs kernel BTF (see btf)";
	if (!h && (err == -ESRCH || err == -ENOENT))
		h = "sched_process_exec not in vmlinux BTF";
	set_fail(f, EG_FEAT_TP_BTF, err, step_names[step], "%s",
		 h ? h : "BTF-typed tracepoints (tp_btf, Linux 5.5+) refused by this kernel");
}

static void probe_fentry(struct eg_features *f, const struct btf *btf)
{
	const char *target = NULL, *h;
	enum step step;
	size_t i;
	int err;

	if (!btf) {
		set_fail(f, EG_FEAT_FENTRY, f->r[EG_FEAT_BTF].err, "btf", "needs kernel BTF (see btf)");
		return;
	}
	for (i = 0; i < sizeof(fentry_targets) / sizeof(fentry_targets[0]) && !target; i++)
		if (btf__find_by_name_kind(btf, fentry_targets[i], BTF_KIND_FUNC) >= 0)
			target = fentry_targets[i];
	if (!target) {
		set_fail(f, EG_FEAT_FENTRY, -ESRCH, "btf", "no known fentry target in vmlinux BTF");
		return;
	}
	err = try_raw(btf, BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, target, BTF_KIND_FUNC, RAW_RETURN_0, &step);
	if (!err) {
		set_ok(f, EG_FEAT_FENTRY, "%s", "");
		return;
	}
	h = common_hint(err);
	if (!h && (err == -EPERM || err == -EACCES))
		h = "the kernel refuses BPF trampolines (lockdown or policy); used to find scripts before 6.10";
	if (!h && (err == -ENOTSUPP || err == -EOPNOTSUPP))
		h = "no BPF trampolines (CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS); used to find scripts before 6.10";
	set_fail(f, EG_FEAT_FENTRY, err, step_names[step], "%s",
		 h ? h : "fentry refused by this kernel; used to find scripts before 6.10");
}

/* 1 if bpf is an active LSM, 0 if not, -errno if the list is unreadable. */
static int bpf_in_lsm_list(void)
{
	char buf[512], *tok, *save;
	ssize_t n;
	int fd;

	fd = open(EG_LSM_LIST, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[n] = '\0';
	for (tok = strtok_r(buf, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save))
		if (!strcmp(tok, "bpf"))
			return 1;
	return 0;
}

/*
 * A kernel with CONFIG_BPF_LSM loads and attaches LSM programs even when
 * bpf is missing from lsm=, and then never runs them: a load is no proof,
 * the active LSM list must name bpf too.
 */
static void probe_bpf_lsm(struct eg_features *f, const struct btf *btf)
{
	enum step step;
	const char *h;
	int err, listed;

	/* how the tests see a kernel booted without bpf in lsm= (Debian's default) on one with it */
	if (getenv("EXECGATE_NO_BPF_LSM")) {
		set_fail(f, EG_FEAT_BPF_LSM, -EOPNOTSUPP, "env", "EXECGATE_NO_BPF_LSM is set");
		return;
	}
	err = try_raw(btf, BPF_PROG_TYPE_LSM, BPF_LSM_MAC, BPRM_HOOK, BTF_KIND_FUNC, RAW_RETURN_0, &step);
	if (!err) {
		listed = bpf_in_lsm_list();
		if (listed < 0 && !eg_mount_securityfs())
			listed = bpf_in_lsm_list();
		if (listed == 1)
			set_ok(f, EG_FEAT_BPF_LSM, "%s", "");
		else if (listed == 0)
			set_fail(f, EG_FEAT_BPF_LSM, -EOPNOTSUPP, EG_LSM_LIST,
				 "loads, but would never run: bpf is not an active LSM; add bpf to the lsm= boot parameter");
		else
			set_fail(f, EG_FEAT_BPF_LSM, listed, EG_LSM_LIST,
				 "loads, but whether bpf is an active LSM is unknown; mount securityfs");
		return;
	}
	listed = bpf_in_lsm_list();
	h = common_hint(err);
	if (!h && (err == -ESRCH || err == -ENOENT))
		h = "no bpf_lsm_bprm_check_security in vmlinux BTF; kernel built without CONFIG_BPF_LSM";
	if (!h && listed == 0)
		h = "BPF LSM not enabled (bpf not in " EG_LSM_LIST "); add bpf to the lsm= boot parameter";
	if (!h && listed < 0)
		h = "BPF LSM probably not enabled; add bpf to the lsm= boot parameter (LSM list unknown: no securityfs)";
	set_fail(f, EG_FEAT_BPF_LSM, err, step_names[step], "%s",
		 h ? h : "bpf is an active LSM, yet the kernel refused the program (lockdown?)");
}

static void probe_bpf_lsm_cgroup(struct eg_features *f, const struct btf *btf)
{
	const struct eg_feature_result *lsm = &f->r[EG_FEAT_BPF_LSM];
	enum step step;
	const char *h;
	int err;

	err = try_raw(btf, BPF_PROG_TYPE_LSM, BPF_LSM_CGROUP, BPRM_HOOK, BTF_KIND_FUNC, RAW_RETURN_1, &step);
	if (!err && lsm->available) {
		set_ok(f, EG_FEAT_BPF_LSM_CGROUP, "%s", "");
		return;
	}
	/* Same hooks as bpf_lsm: it runs only where they run. */
	if (!err) {
		set_fail(f, EG_FEAT_BPF_LSM_CGROUP, lsm->err, "bpf_lsm", "needs BPF LSM (see bpf_lsm)");
		return;
	}
	h = common_hint(err);
	if (!h && !lsm->available)
		h = "needs BPF LSM (see bpf_lsm)";
	set_fail(f, EG_FEAT_BPF_LSM_CGROUP, err, step_names[step], "%s",
		 h ? h : "kernel lacks BPF_LSM_CGROUP (Linux 6.0+)");
}

static void probe_send_signal(struct eg_features *f, const struct btf *btf)
{
	enum step step;
	const char *h;
	int err;

	if (f->r[EG_FEAT_TP_BTF].available) {
		/* From the program type the kill-on-exec fallback uses. */
		err = try_raw(btf, BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, EXEC_TP, BTF_KIND_TYPEDEF,
			      RAW_SEND_SIGNAL, &step);
		if (!err) {
			set_ok(f, EG_FEAT_SEND_SIGNAL, "%s", "");
			return;
		}
		h = common_hint(err);
		set_fail(f, EG_FEAT_SEND_SIGNAL, err, step_names[step], "%s",
			 h ? h : "bpf_send_signal refused in tracing programs (Linux 5.3+)");
		return;
	}
	/* Without tp_btf, still say whether the helper exists. */
	errno = 0;
	err = libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACEPOINT, BPF_FUNC_send_signal, NULL);
	if (err == 1) {
		set_ok(f, EG_FEAT_SEND_SIGNAL, "from tracepoint programs only (tp_btf unavailable)");
		return;
	}
	if (err == 0)
		err = errno ? -errno : -EOPNOTSUPP;
	h = common_hint(err);
	set_fail(f, EG_FEAT_SEND_SIGNAL, err, "BPF_PROG_LOAD", "%s",
		 h ? h : "bpf_send_signal unknown to this kernel (Linux 5.3+)");
}

/*
 * Runs in a forked child: installs an allow-everything filter with a
 * listener, first with WAIT_KILLABLE_RECV, then without. Writes both
 * results (0 or -errno) to wfd. Async-signal-safe calls only: the caller
 * may have threads.
 */
static void __attribute__((noreturn)) seccomp_child(int wfd)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(insns) / sizeof(insns[0]),
		.filter = insns,
	};
	int res[2];	/* [0] NEW_LISTENER, [1] NEW_LISTENER|WAIT_KILLABLE_RECV */

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		res[0] = res[1] = -errno;
		goto out;
	}
	/* One listener per filter chain: try the stronger flags first. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
		    &prog) >= 0) {
		res[0] = res[1] = 0;
		goto out;
	}
	res[1] = -errno;
	res[0] = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			 SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog) >= 0 ? 0 : -errno;
out:
	if (write(wfd, res, sizeof(res)) != sizeof(res))
		_exit(1);
	_exit(0);
}

static int run_seccomp_child(int res[2])
{
	int pfd[2], status, err = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		close(pfd[0]);
		seccomp_child(pfd[1]);
	}
	close(pfd[1]);
	do
		n = read(pfd[0], res, 2 * sizeof(int));
	while (n < 0 && errno == EINTR);
	if (n != 2 * sizeof(int))
		err = n < 0 ? -errno : -EPIPE;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return err;
}

static void probe_seccomp(struct eg_features *f)
{
	__u32 action = SECCOMP_RET_USER_NOTIF;
	int err, res[2];

	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action)) {
		err = -errno;
		set_fail(f, EG_FEAT_SECCOMP_NOTIF, err, "SECCOMP_GET_ACTION_AVAIL",
			 "no SECCOMP_RET_USER_NOTIF (Linux 5.0+ with CONFIG_SECCOMP_FILTER)");
		set_fail(f, EG_FEAT_WAIT_KILLABLE_RECV, err, "SECCOMP_GET_ACTION_AVAIL",
			 "needs seccomp user-notify (see seccomp_notif)");
		return;
	}
	err = run_seccomp_child(res);
	if (err) {
		set_fail(f, EG_FEAT_SECCOMP_NOTIF, err, "fork", "the probe's child process failed");
		set_fail(f, EG_FEAT_WAIT_KILLABLE_RECV, err, "fork", "the probe's child process failed");
		return;
	}
	if (res[0])
		set_fail(f, EG_FEAT_SECCOMP_NOTIF, res[0], "SECCOMP_SET_MODE_FILTER",
			 "SECCOMP_FILTER_FLAG_NEW_LISTENER refused (Linux 5.0+)");
	else
		set_ok(f, EG_FEAT_SECCOMP_NOTIF, "%s", "");
	if (res[1])
		set_fail(f, EG_FEAT_WAIT_KILLABLE_RECV, res[1], "SECCOMP_SET_MODE_FILTER",
			 "no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19+): signals can abort a pending exec");
	else
		set_ok(f, EG_FEAT_WAIT_KILLABLE_RECV, "%s", "");
}

static void probe_pidfd(struct eg_features *f)
{
	int fd;

	/* pidfd_open() always sets O_CLOEXEC. */
	fd = syscall(SYS_pidfd_open, getpid(), 0);
	if (fd < 0) {
		set_fail(f, EG_FEAT_PIDFD, -errno, "pidfd_open", "no pidfd_open (Linux 5.3+)");
		return;
	}
	close(fd);
	set_ok(f, EG_FEAT_PIDFD, "%s", "");
}

int probe_features(struct eg_features *ret)
{
	struct timespec t0, t1;
	struct btf *btf;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(ret, 0, sizeof(*ret));
	privileged = eg_have_bpf_caps();
	/* Refusals are the expected answers here, not warnings to show. */
	saved_print = libbpf_set_print(quiet_print);

	btf = probe_btf(ret);
	probe_map(ret, EG_FEAT_RINGBUF, BPF_MAP_TYPE_RINGBUF,
		  "no BPF ring buffer (Linux 5.8+)");
	probe_map(ret, EG_FEAT_TASK_STORAGE, BPF_MAP_TYPE_TASK_STORAGE,
		  "no BPF task storage (Linux 5.11+)");
	probe_tracepoint(ret);
	probe_tp_btf(ret, btf);
	probe_fentry(ret, btf);
	probe_bpf_lsm(ret, btf);
	probe_bpf_lsm_cgroup(ret, btf);
	probe_send_signal(ret, btf);
	probe_seccomp(ret);
	probe_pidfd(ret);

	btf__free(btf);
	libbpf_set_print(saved_print);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	p_dbg("probe: %ld ms", (long)((t1.tv_sec - t0.tv_sec) * 1000 +
				     (t1.tv_nsec - t0.tv_nsec) / 1000000));
	return 0;
}

void probe_mode(const struct eg_features *f, struct eg_mode *ret)
{
#define HAVE(x) (f->r[EG_FEAT_##x].available)
	if (HAVE(TP_BTF) && HAVE(TASK_STORAGE) && HAVE(RINGBUF) && HAVE(TRACEPOINT))
		ret->tracer = "tp_btf";
	else
		ret->tracer = "unavailable";
	if (HAVE(BPF_LSM))
		ret->kernel_enforcement = "bpf_lsm";
	else if (HAVE(SEND_SIGNAL) && HAVE(TP_BTF))
		ret->kernel_enforcement = "kill_on_exec";
	else
		ret->kernel_enforcement = "none";
	if (HAVE(SECCOMP_NOTIF) && HAVE(PIDFD))
		ret->session_enforcement = "seccomp_notify";
	else
		ret->session_enforcement = "none";
	ret->exec_failed_source = HAVE(TRACEPOINT) ? "syscall_tracepoints" : "none";
#undef HAVE
}
