/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel/user ABI of execgate: the ring-buffer record and the values of
 * the pinned maps. Fixed-width types only, no pointers; both the BPF side
 * and the daemon include this file, and bpftool shows these names through
 * the maps' BTF.
 */
#ifndef EXECGATE_H
#define EXECGATE_H

#ifndef __VMLINUX_H__	/* userspace; BPF code has the types from vmlinux.h */
#include <linux/types.h>
#endif

#define EG_COMM_LEN		16
#define EG_FILENAME_MAX		4096	/* PATH_MAX, NUL included */
#define EG_CWD_MAX		4096	/* cwd components, NUL separated, leaf first */
#define EG_NAME_MAX		256	/* one path component, NUL included */
#define EG_CWD_DEPTH		64	/* components walked before cwd is cut */
#define EG_ARGV_DEFAULT		(64 * 1024)	/* seed 001: max_argv_bytes 65536 */
#define EG_ARGV_LIMIT		(2 * 1024 * 1024) /* largest --max-argv-bytes */
#define EG_ARGC_SCAN		65536	/* argv pointers counted for a failed exec */
#define EG_ARG_READ_MAX		(128 * 1024) /* one string of a failed exec's argv (MAX_ARG_STRLEN) */
#define EG_RINGBUF_DEFAULT	(16 * 1024 * 1024)

enum eg_event_type {
	EG_EVENT_EXEC		= 1,	/* a successful exec, at sched_process_exec */
	EG_EVENT_EXEC_FAILED	= 2,	/* execve/execveat returned an error */
};

/* eg_event.flags */
#define EG_F_ARGV_TRUNC		(1u << 0)	/* argv cut at the byte cap */
#define EG_F_FILENAME_TRUNC	(1u << 1)
#define EG_F_CWD_TRUNC		(1u << 2)	/* too deep or too long: leading part lost */
#define EG_F_ARGV_FAULT		(1u << 3)	/* argv memory could not be read */
#define EG_F_PARENT_KNOWN	(1u << 4)	/* parent_* hold the caller's exec id */
#define EG_F_EXECVEAT		(1u << 5)	/* the syscall was execveat */
#define EG_F_ARGC_INEXACT	(1u << 6)	/* failed exec: argc is a lower bound */
#define EG_F_FILENAME_FAULT	(1u << 7)
#define EG_F_CWD_FAULT		(1u << 8)

/*
 * One ring-buffer record. The header is followed by three byte strings:
 *   filename[filename_len]  the path the kernel executed (exec) or the
 *                           caller passed (exec_failed), NUL included
 *   cwd[cwd_len]            the working directory's components, each NUL
 *                           terminated, leaf first ("c\0b\0a\0" is /a/b/c)
 *   argv[argv_len]          the argument strings, each NUL terminated; when
 *                           EG_F_ARGV_TRUNC is set the last one may be cut
 */
struct eg_event {
	__u32 type;		/* enum eg_event_type */
	__u32 flags;		/* EG_F_* */
	__u64 ktime_ns;		/* CLOCK_BOOTTIME of the exec: exec_id = (pid, ktime_ns) */
	__u64 parent_ktime_ns;	/* exec id of the image that called exec */
	__u32 parent_tgid;
	__u32 pid;		/* tgid */
	__u32 tid;		/* the thread that called exec */
	__u32 ppid;
	__u32 uid;
	__u32 gid;
	__s32 depth;		/* exec depth of the new image (0 = direct) */
	__s32 err;		/* exec_failed: negative errno */
	__u64 cgroup_id;
	__u32 session;
	__u32 argc;		/* the real count, also when argv is cut */
	__u32 argv_bytes;	/* the real size of the argument area */
	__u32 filename_len;
	__u32 cwd_len;
	__u32 argv_len;
	__s32 dirfd;		/* execveat only */
	__u32 at_flags;		/* execveat only */
	char comm[EG_COMM_LEN];
};

/* Task-storage value (map "tasks"), one per task, inherited at fork. */
#define EG_TASK_KNOWN		(1u << 0)	/* depth and exec id are valid */
#define EG_TASK_PENDING		(1u << 1)	/* an execve is in flight */
#define EG_TASK_PENDING_AT	(1u << 2)	/* ... and it is an execveat */

struct eg_task {
	__s32 depth;		/* depth of the current image; -1 = launcher */
	__u32 flags;		/* EG_TASK_* */
	__u64 exec_ktime;	/* exec id of the current image */
	__u32 exec_tgid;
	__u32 session;
	__u64 pending_filename;	/* user pointers stashed at sys_enter_exec* */
	__u64 pending_argv;
	__s32 pending_dirfd;
	__u32 pending_at_flags;
};

/* Operator view of live processes (map "procs", key: tgid). */
struct eg_proc {
	__s32 depth;
	__u32 ppid;
	__u32 uid;
	__u32 session;
	__u64 exec_ktime;
	__u64 parent_ktime;
	__u32 parent_tgid;
	__u32 pad;
	__u64 cgroup_id;
	char comm[EG_COMM_LEN];
};

/* Per-CPU counters (map "counters", one entry). */
struct eg_counters {
	__u64 exec;		/* exec records queued */
	__u64 exec_failed;	/* exec_failed records queued */
	__u64 lost_exec;	/* exec records the ring buffer had no room for */
	__u64 lost_exec_failed;
	__u64 argv_truncated;	/* records queued with a cut argv */
	__u64 read_faults;	/* records with unreadable filename/cwd/argv */
	__u64 storage_failed;	/* task storage could not be created */
};

/*
 * Size of one CPU's scratch record for a given argv cap: the largest record,
 * plus room for one more string read so the verifier can bound each read.
 */
#define EG_RECORD_MAX(argv_cap) \
	(sizeof(struct eg_event) + EG_FILENAME_MAX + EG_CWD_MAX + (argv_cap))
#define EG_SCRATCH_SIZE(argv_cap) (EG_RECORD_MAX(argv_cap) + EG_ARG_READ_MAX)

#endif /* EXECGATE_H */
