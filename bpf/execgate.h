/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel/user ABI of execgate: the ring-buffer record and the values of
 * the pinned maps. Fixed-width types only, no pointers; both the BPF side
 * and the daemon include this file, and bpftool shows these names through
 * the maps' BTF. Every struct's size is asserted: a change here is a change
 * of the pinned maps' layout (a daemon that finds pins of another layout
 * replaces them, see trace/tracer.c).
 */
#ifndef EXECGATE_H
#define EXECGATE_H

#ifndef __VMLINUX_H__	/* userspace; BPF code has the types from vmlinux.h */
#include <linux/types.h>
#endif

#define EG_COMM_LEN		16
#define EG_TTY_LEN		16
#define EG_FILENAME_MAX		4096	/* PATH_MAX, NUL included */
#define EG_CWD_MAX		4096	/* cwd components, NUL separated, leaf first */
#define EG_NAME_MAX		256	/* one path component, NUL included */
#define EG_CWD_DEPTH		64	/* components walked before a path is cut */
#define EG_ARGV_DEFAULT		(64 * 1024)	/* max_argv_bytes 65536 */
#define EG_ARGV_LIMIT		(2 * 1024 * 1024) /* largest --max-argv-bytes */
#define EG_ARGC_SCAN		65536	/* argv pointers counted for a failed exec */
#define EG_ARG_READ_MAX		(128 * 1024) /* one string of a failed exec's argv (MAX_ARG_STRLEN) */
#define EG_RINGBUF_DEFAULT	(4 * 1024 * 1024) /* ~4 s of the spawn loop at P=2 (docs/bench.md) */
#define EG_LAUNCHERS_MAX	8	/* execgate binaries whose "exec" verb starts a session */
#define EG_LOADERS_MAX		64	/* dynamic loaders (ld.so) known by identity */
#define EG_CHAIN_MAX		4	/* scripts between a '#!' chain's first and its interpreter */
/*
 * User namespaces climbed to tell who made a mount namespace: root's, a
 * level below the initial one, or root's in root's (a runtime's inside a
 * runtime's). A deeper one counts as a user's (fails closed). The kernel's
 * judge (mount_by_user, bpf/paths.bpf.h) and a session's (eg_ns_root_made,
 * util/ns.h) climb as far.
 */
#define EG_USERNS_LEVELS	4
#define EG_AUID_UNSET		0xffffffffu

enum eg_event_type {
	EG_EVENT_EXEC		= 1,	/* a successful exec, at sched_process_exec */
	EG_EVENT_EXEC_FAILED	= 2,	/* execve/execveat returned an error */
	EG_EVENT_EXIT		= 3,	/* an exec'd process ended (its last thread): struct eg_exit_event */
	EG_EVENT_LOADED		= 4,	/* the program a dynamic loader run as a command mapped */
	EG_EVENT_SCOPE		= 5,	/* a --cgroup scope's cgroup was made again, or removed */
	EG_EVENT_CGROUP		= 6,	/* a cgroup (v2) was made: cgroup_id, its path as "requested" */
};

/*
 * A --cgroup scope, by its path (map "scope_paths", index = the scope's
 * place on the command line): the kernel follows the path, so a container
 * restarted under the same cgroup path (a new cgroup, a new id) is in
 * scope from its first exec. An EG_EVENT_SCOPE record tells the daemon:
 * cgroup_id the cgroup's id, dirfd the scope's index, at_flags EG_SCOPE_*.
 */
#define EG_SCOPES_MAX		64
#define EG_SCOPE_PATH_MAX	256
#define EG_SCOPE_GONE		1
#define EG_SCOPE_BACK		2
struct eg_scope {
	__u32 len;		/* bytes of path, without a NUL; 0: unused */
	__u32 pad;
	char path[EG_SCOPE_PATH_MAX];	/* from the cgroup2 root ("/a/b"), zero-padded */
};
_Static_assert(sizeof(struct eg_scope) == 8 + EG_SCOPE_PATH_MAX, "eg_scope is ABI");

/* eg_event.flags */
#define EG_F_ARGV_TRUNC		(1u << 0)	/* argv cut at the byte cap */
#define EG_F_FILENAME_TRUNC	(1u << 1)	/* path too long or too deep: leading part lost */
#define EG_F_CWD_TRUNC		(1u << 2)
#define EG_F_ARGV_FAULT		(1u << 3)	/* argv memory could not be read */
#define EG_F_PARENT_KNOWN	(1u << 4)	/* parent_* hold the caller's exec id */
#define EG_F_EXECVEAT		(1u << 5)	/* the syscall was execveat */
#define EG_F_ARGC_INEXACT	(1u << 6)	/* failed exec: argc is a lower bound */
#define EG_F_FILENAME_FAULT	(1u << 7)
#define EG_F_CWD_FAULT		(1u << 8)
#define EG_F_DEPTH_KNOWN	(1u << 9)	/* depth counts from a known start (a session, or set) */
#define EG_F_FILE_DELETED	(1u << 10)	/* the executed file was unlinked */
#define EG_F_CWD_DELETED	(1u << 11)
#define EG_F_SECUREEXEC		(1u << 12)	/* setuid/setgid/file capabilities raised privileges */
#define EG_F_SCRIPT		(1u << 13)	/* an interpreter runs the named file ('#!', binfmt_misc) */
#define EG_F_SCRIPT_FOUND	(1u << 14)	/* ... and the script's own path is in the record */
#define EG_F_EXEC_FD		(1u << 15)	/* the program was named by a file descriptor */
#define EG_F_ANON_FILE		(1u << 16)	/* the file has no path in any mount namespace (memfd) */
#define EG_F_REQUESTED_TRUNC	(1u << 17)
#define EG_F_INTERP_TRUNC	(1u << 18)
#define EG_F_SCRIPT_TRUNC	(1u << 19)
#define EG_F_SCRIPT_DELETED	(1u << 20)
#define EG_F_LAUNCHER		(1u << 21)	/* this exec started a session launcher (depth reset) */
#define EG_F_KILLED		(1u << 22)	/* the kernel killed the task before the image ran */
#define EG_F_KILL_FAILED	(1u << 23)	/* ... and bpf_send_signal refused: retried at syscall exit */
#define EG_F_TICKET_OK		(1u << 24)	/* a session exec matched its approval ticket */
#define EG_F_SESSION_DEPTH	(1u << 25)	/* session_depth holds a depth (a session's command or below) */
#define EG_F_CONTAINER		(1u << 26)	/* in a pid namespace not the host's: container_depth holds */
#define EG_F_LOADER		(1u << 27)	/* the file is a dynamic loader run as the command */
#define EG_F_CHAIN_CUT		(1u << 28)	/* a '#!' chain's middle scripts are not all in chain[] */
#define EG_F_DEPTH_INFERRED	(1u << 29)	/* depth counts from what the daemon read in /proc */
#define EG_F_BACKING		(1u << 30)	/* backing_dev/ino: the file under an overlay view */
#define EG_F_CONTEXT_ENTERED	(1u << 31)	/* this exec matched a context's identity (context_depth 0) */

/*
 * eg_event.flags2. A user's mount: the file's mount is in a mount
 * namespace that a user (not root) owns through a user namespace, or in
 * none: any mount there, where it sits and what it holds, may be that
 * user's choice, so the path names nothing an allow by a glob may trust
 * (mount_by_user, bpf/paths.bpf.h; docs/enforcement.md).
 */
#define EG_F2_USER_MOUNT	(1u << 0)	/* filename is on a user's mount */
#define EG_F2_SCRIPT_USER_MOUNT	(1u << 1)	/* ... the script's path (EG_F_SCRIPT_FOUND) */
#define EG_F2_BACKING_UNKNOWN	(1u << 2)	/* an overlay view whose file behind it could not be read */
#define EG_F2_LOADER_32		(1u << 3)	/* EG_F_LOADER, a 32-bit one: what it maps is not seen */

/* eg_event.reason: why the kernel acted (EG_F_KILLED) */
enum eg_reason {
	EG_REASON_NONE = 0,
	EG_REASON_NO_TICKET,		/* a session exec the supervisor never allowed */
	EG_REASON_TICKET_FILE,		/* the file that runs is not the one allowed */
	EG_REASON_TICKET_ARGV,		/* the committed argv is not the one allowed */
	EG_REASON_TICKET_SESSION,	/* the ticket was issued to another session */
	EG_REASON_TICKET_SCRIPT,	/* the script is not the one allowed */
	EG_REASON_RULE,			/* a kernel rule (enforcement) */
	EG_REASON_KERNEL_ERROR,		/* the kernel could not judge the exec (fails closed) */
	EG_REASON_TICKET_CHAIN,		/* a '#!' chain's middle script is not the one allowed */
	EG_REASON_TICKET_LOADER,	/* the program a loader mapped is not the one allowed */
	EG_REASON_NO_PIN,		/* a session script this kernel cannot pin to its file */
	EG_REASON_CONTEXT_LIMIT,	/* past a context's max_depth or max_consecutive_shells */
};

/*
 * One ring-buffer record. The header is followed by seven byte strings:
 *   filename[filename_len]  exec: the file the kernel runs (bprm->file),
 *                           leaf first like cwd; exec_failed: the path the
 *                           caller passed, NUL terminated
 *   requested[requested_len] exec: the path as the caller spelled it
 *                           (bprm->filename), NUL terminated
 *   interp[interp_len]      a script's interpreter as its '#!' line spells it
 *   script[script_len]      the script file itself, leaf first (when found)
 *   chain[chain_len]        a '#!' chain's middle scripts, outermost first, each
 *                           a struct eg_chain_ent and its path, leaf first
 *   cwd[cwd_len]            the working directory's components, each NUL
 *                           terminated, leaf first ("c\0b\0a\0" is /a/b/c)
 *   argv[argv_len]          the argument strings, each NUL terminated; when
 *                           EG_F_ARGV_TRUNC is set the last one may be cut
 * The *_len fields count bytes; a path "leaf first" holds its components
 * from the file up, each NUL terminated.
 */
struct eg_event {
	__u32 type;		/* enum eg_event_type */
	__u32 flags;		/* EG_F_* */
	__u64 ktime_ns;		/* CLOCK_BOOTTIME of the exec: exec_id = (pid, ktime_ns) */
	__u64 parent_ktime_ns;	/* exec id of the image that called exec */
	__u32 parent_tgid;
	__u32 pid;		/* tgid, in the initial pid namespace */
	__u32 tid;		/* the thread that called exec */
	__u32 ppid;
	__u32 ns_pid;		/* pid in the task's own pid namespace */
	__u32 uid;		/* real ids ... */
	__u32 gid;
	__u32 euid;		/* ... and effective ids, after the exec */
	__u32 egid;
	__u32 auid;		/* loginuid; EG_AUID_UNSET when unset */
	__s32 depth;		/* exec depth of the new image (0 = direct) */
	__s32 err;		/* exec_failed: negative errno */
	__u64 cgroup_id;
	__u32 session;
	__u32 argc;		/* the real count, also when argv is cut */
	__u32 argv_bytes;	/* the real size of the argument area */
	__u32 mnt_ns;		/* namespace inode numbers */
	__u32 pid_ns;
	__u32 argv_len;
	__u64 dev;		/* identity of filename: s_dev (kernel encoding), inode */
	__u64 ino;
	__u16 filename_len;
	__u16 requested_len;
	__u16 interp_len;
	__u16 script_len;
	__u16 cwd_len;
	__u16 reason;		/* enum eg_reason */
	__s32 dirfd;		/* execveat only */
	__u32 at_flags;		/* execveat only */
	__u32 krule;		/* kernel verdict: the policy rule's index + 1; 0: default or none */
	__u8 kdecision;		/* enum eg_kdecision: the kernel's verdict; 0: not judged */
	__u8 klayer;		/* enum eg_klayer: where it was judged */
	__u16 kflags;		/* EG_KF_* */
	__u32 kseq;		/* which loaded policy judged (eg_kstate.seq) */
	__u64 size;		/* of filename's file (i_size) */
	__u64 script_dev;	/* the script's identity, when EG_F_SCRIPT_FOUND */
	__u64 script_ino;
	__s32 session_depth;	/* EG_F_SESSION_DEPTH: depth from the session's command (0) */
	__s32 container_depth;	/* EG_F_CONTAINER: depth from the container's first exec (0) */
	__u32 context;		/* agent context id; 0: none */
	__s32 context_depth;	/* depth from the context's identity exec (0) */
	__u64 context_ktime;	/* the identity exec: (context_tgid, context_ktime) */
	__u32 context_tgid;
	__u16 chain_len;	/* bytes of chain[] */
	__u16 loader_arg;	/* EG_F_LOADER, EG_EVENT_LOADED: argv index of the program asked for */
	__u64 backing_dev;	/* EG_F_BACKING: the real file under an overlay view */
	__u64 backing_ino;
	__u16 shells;		/* shell images in a row, this one included (0: not a shell) */
	__u16 flags2;		/* EG_F2_* */
	__u32 pad32;
	char comm[EG_COMM_LEN];
	char tty[EG_TTY_LEN];	/* controlling terminal ("pts3"), "" when none */
};
_Static_assert(sizeof(struct eg_event) == 264, "eg_event is ABI");

/* One middle script of a '#!' chain in eg_event's chain[]: this, then its path (leaf first). */
struct eg_chain_ent {
	__u64 dev;
	__u64 ino;
	__u16 len;		/* bytes of path that follow */
	__u16 flags;		/* EG_CE_* */
	__u32 pad;
};
_Static_assert(sizeof(struct eg_chain_ent) == 24, "eg_chain_ent is ABI");
#define EG_CE_TRUNC		(1u << 0)	/* path cut (too deep or long) */
#define EG_CE_DELETED		(1u << 1)
#define EG_CE_ANON		(1u << 2)	/* no path: its name alone */
#define EG_CE_USER_MOUNT	(1u << 3)	/* it is on a user's mount (EG_F2_USER_MOUNT) */

/* Task-storage value (map "tasks"), one per task, inherited at fork. */
#define EG_TASK_KNOWN		(1u << 0)	/* storage valid: depth counts from what we saw */
#define EG_TASK_PENDING		(1u << 1)	/* unused now (an entry stash once): bit kept */
#define EG_TASK_PENDING_AT	(1u << 2)	/* unused now: bit kept */
#define EG_TASK_DEPTH_KNOWN	(1u << 3)	/* depth is absolute: a launcher, or set */
#define EG_TASK_LAUNCHER	(1u << 4)	/* an `execgate exec` launcher image */
#define EG_TASK_MUST_DIE	(1u << 5)	/* killed at exec, the signal not yet sent */
#define EG_TASK_LSM_DENIED	(1u << 6)	/* bprm_check_security refused this exec (lsm_* say why) */
#define EG_TASK_SESSION_DEPTH	(1u << 7)	/* session_depth counts (a launcher, or below one) */
#define EG_TASK_LOADER		(1u << 8)	/* a loader run as the command: its first executable mapping is judged */
#define EG_TASK_LOADER_TICKET	(1u << 9)	/* ... and must be loader_dev/ino (a session's ticket) */
#define EG_TASK_INFERRED	(1u << 10)	/* depth read from /proc at the daemon's start, not seen */

/*
 * Three depths, three meanings: depth is the host's and nothing resets it
 * (host policy and kernel rules judge it); session_depth counts from a
 * session's command (session policies); container_depth from a container's
 * first exec (rules scoped to cgroups).
 */
struct eg_task {
	__s32 depth;		/* host exec depth of the current image */
	__u32 flags;		/* EG_TASK_* */
	__u64 exec_ktime;	/* exec id of the current image */
	__u32 exec_tgid;
	__u32 session;		/* 0: none; set by the daemon for a verified launcher */
	__s32 session_depth;	/* EG_TASK_SESSION_DEPTH: -1 = a launcher, 0 = its command */
	__s32 container_depth;	/* cont_pidns: 0 = the first exec seen in that pid namespace */
	__u32 cont_pidns;	/* pid namespace container_depth counts in; 0: the host's */
	__u32 context;		/* agent context id; 0: none */
	__s32 context_depth;
	__u16 shells;		/* consecutive shell images up to this one */
	__u16 loader_arg;	/* EG_TASK_LOADER: argv index of the program asked for */
	__u64 context_ktime;	/* the context's identity exec */
	__u32 context_tgid;
	__u32 lsm_rule;		/* EG_TASK_LSM_DENIED: eg_event.krule of the refusal */
	__u32 lsm_seq;		/* ... kseq */
	__u16 lsm_kflags;	/* ... kflags */
	__u8 lsm_kdecision;	/* ... kdecision */
	__u8 lsm_reason;	/* ... reason */
	__u64 loader_dev;	/* EG_TASK_LOADER_TICKET: the program the supervisor judged */
	__u64 loader_ino;
	/* up to here the layout before 28 November 2026 (96 bytes: EG_TASK_V1_SIZE) */
	__u32 parent_tgid;	/* exec id of the image before this one (the parent's */
	__u32 exec_seq;		/* after a fork): the procs view's parent; exec_seq: the */
	__u64 parent_ktime;	/* low bits of the kernel's self_exec_id at this exec (0: unknown) */
};
_Static_assert(sizeof(struct eg_task) == 104, "eg_task is ABI");
#define EG_TASK_V1_SIZE		96	/* a pinned "tasks" of this size is copied over (bpf/migrate.bpf.c) */

/*
 * A change user space asks of a running process's task storage, made by
 * bpf/amend.bpf.c in the kernel, field by field, so that nothing the
 * task's own programs write meanwhile is put back. Each thread has storage
 * of its own (a clone copies its creator's, and a thread's children copy
 * the thread's): a context or a depth goes to every thread of the process,
 * a session id to its leader alone.
 */
#define EG_AMEND_CONTEXT		1	/* the agent context, where it has none */
#define EG_AMEND_DEPTH		2	/* the depth, made absolute (the storage made if missing) */
#define EG_AMEND_SESSION		3	/* the session id of a launcher, still the image looked at */
#define EG_AMEND_FILL		4	/* a process the kernel knew nothing of: storage where a thread has none */
#define EG_AMEND_DONE		1	/* result: made (or a context was there already) */
#define EG_AMEND_NO_STORAGE	2	/* result: no storage (the kernel made none) */
#define EG_AMEND_CHANGED		3	/* result: another image now (or, EG_AMEND_SESSION, not a launcher) */

/* What a clone copies of its creator's storage, as the tracer's fork handler does (and as eg_amend.task is made). */
#define EG_TASK_INHERITED	(EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN | EG_TASK_LAUNCHER | \
				 EG_TASK_SESSION_DEPTH | EG_TASK_INFERRED)

struct eg_amend {
	__u32 op;		/* EG_AMEND_* */
	__u32 result;		/* the leader's: 0: not found; EG_AMEND_DONE, _NO_STORAGE, _CHANGED */
	__u32 missed;		/* result: other threads that got no storage (the kernel made none) */
	__u32 tid;		/* a walk over every task (kernels before 6.1): the leader's id */
	__u64 exec_ktime;	/* the image's exec id, as looked up (0: any; EG_AMEND_SESSION: always) */
	/*
	 * The values asked, in their fields (context*, depth, session); and,
	 * but for EG_AMEND_SESSION, the whole entry a thread with no storage
	 * gets: the process's as a clone would have copied it, with the change
	 * made (EG_AMEND_CONTEXT: the threads but the leader).
	 */
	struct eg_task task;
};
_Static_assert(sizeof(struct eg_amend) == 128, "eg_amend is ABI");

/*
 * The procs view (PIN/procs, a task iterator): its header line; then one
 * line per live process whose current image exec'd while traced.
 */
#define EG_PROCS_HEADER \
	"tgid depth ppid uid session exec_ktime parent_tgid parent_ktime flags cgroup_id comm\n"

/*
 * Per-CPU counters (map "counters", one entry). Every early return of a
 * BPF program that loses information is counted here.
 */
struct eg_counters {
	__u64 exec;		/* exec records queued */
	__u64 exec_failed;	/* exec_failed records queued */
	__u64 lost_exec;	/* exec records the ring buffer had no room for */
	__u64 lost_exec_failed;
	__u64 argv_truncated;	/* records queued with a cut argv */
	__u64 read_faults;	/* records with unreadable filename/cwd/argv */
	__u64 storage_failed;	/* task storage could not be created */
	__u64 scratch_missing;	/* no scratch buffer: the record was not built */
	__u64 record_too_big;	/* a size guard refused the record */
	__u64 stash_lost;	/* a failed exec whose pointers were not stashed */
	__u64 procs_failed;	/* unused: the procs view is an iterator now (kept: the layout is ABI) */
	__u64 killed;		/* tasks killed at exec (tickets, kernel rules) */
	__u64 kill_failed;	/* bpf_send_signal refused at exec (retried at syscall exit) */
	__u64 kjudged;		/* execs the kernel rules judged */
	__u64 kdenied;		/* ... and refused (LSM) or killed */
	__u64 kerrors;		/* ... and could not judge (failed closed) */
	__u64 kretries;		/* judgements redone because a reload swapped the rules */
	__u64 lsm_deferred;	/* left by bprm_check_security to the check at exec */
	__u64 other;		/* other records queued (a loader's program, a scope's change) */
	__u64 lost_other;	/* ... the ring buffer had no room for */
	__u64 exits;		/* exit records queued */
	__u64 lost_exit;	/* exit records the ring buffer had no room for */
};
_Static_assert(sizeof(struct eg_counters) == 176, "eg_counters is ABI");

/*
 * An exit record (EG_EVENT_EXIT), from sched_process_exit when the last
 * thread of a process that exec'd while traced ends. Its first two fields
 * are eg_event's: a reader dispatches on type. A process that forked and
 * never exec'd has no exit record (its image is its parent's, which goes on).
 */
struct eg_exit_event {
	__u32 type;		/* EG_EVENT_EXIT */
	__u32 flags;		/* EG_F_DEPTH_KNOWN */
	__u64 ktime_ns;		/* CLOCK_BOOTTIME of the exit */
	__u64 exec_ktime_ns;	/* the image that ended: exec_id = (pid, exec_ktime_ns) */
	__u32 pid;		/* tgid */
	__u32 tid;		/* the last thread */
	__u32 exit_code;	/* wait(2) status: code << 8, or the signal (| 0x80: core dumped) */
	__u32 uid;		/* real uid at the exit */
	__u32 ppid;
	__u32 session;
	__s32 depth;
	__u32 pad;
	__u64 cgroup_id;
	char comm[EG_COMM_LEN];
};
_Static_assert(sizeof(struct eg_exit_event) == 80, "eg_exit_event is ABI");

/*
 * A script's own file, found at sched_prepare_exec (where the only fput()
 * work queued on the task is the scripts') and read at sched_process_exec
 * (map "scripts", task storage, deleted once read).
 */
struct eg_script {
	__u64 dev;
	__u64 ino;
	__u32 len;		/* bytes of path, leaf first like eg_event paths */
	__u32 flags;		/* EG_F_SCRIPT_TRUNC, EG_F_SCRIPT_DELETED, EG_F_CHAIN_CUT, EG_F_ANON_FILE, EG_SC_USER_MOUNT */
	char path[EG_FILENAME_MAX];
};
#define EG_SC_USER_MOUNT	(1u << 31)	/* eg_script.flags only: its path passes a user's mount */
_Static_assert(sizeof(struct eg_script) == 24 + EG_FILENAME_MAX, "eg_script is ABI");

/*
 * An approval ticket (key: the thread id that called exec), written by the
 * session supervisor before it lets a trapped exec go on, checked and
 * deleted by the kernel at sched_process_exec: the exec that really
 * happens must be the one the supervisor judged (same file, same script,
 * byte for byte the same argv), or the task is killed before the new image
 * runs. Exact bytes, so nothing can collide with it.
 *
 * Two maps, one ticket: "tickets_small" (struct eg_ticket_small) when the
 * stored argv fits in EG_TICKET_SMALL_ARGV_MAX bytes, most execs, else
 * "tickets" (struct eg_ticket). A map update copies the whole value, and
 * 64 KiB for a 30-byte argv was the largest cost of an allowed exec. The
 * kernel looks in the small map first; the supervisor removes a thread's
 * small ticket before it writes a large one, and the kernel drops both
 * wherever a ticket is used up (the exec, its failure, the thread's exit).
 */
#define EG_TICKET_ARGV_MAX	(64 * 1024)
#define EG_TICKET_ARGV_PREFIX	(1u << 0)	/* argv longer than stored: only the prefix is checked */
#define EG_TICKET_SCRIPT	(1u << 1)	/* script_dev/ino name the script */
#define EG_TICKET_LOADER	(1u << 2)	/* the file is a loader: target_dev/ino is what it may map */

struct eg_ticket {
	__u32 session;
	__u32 flags;		/* EG_TICKET_* */
	__u64 dev;		/* the file that will run (the interpreter, for a script) */
	__u64 ino;
	__u64 script_dev;
	__u64 script_ino;
	__u32 argv_len;		/* the committed argv's full size, NULs included */
	__u32 argv_stored;	/* bytes in argv[] */
	__u64 issued_ns;	/* CLOCK_BOOTTIME */
	__u64 chain_dev[EG_CHAIN_MAX];	/* a '#!' chain's middle scripts, outermost first */
	__u64 chain_ino[EG_CHAIN_MAX];
	__u64 target_dev;	/* EG_TICKET_LOADER */
	__u64 target_ino;
	__u32 chain_n;
	__u32 pad;
	char argv[EG_TICKET_ARGV_MAX];
};
#define EG_TICKET_HDR	(56 + 16 * EG_CHAIN_MAX + 24)
_Static_assert(sizeof(struct eg_ticket) == EG_TICKET_HDR + EG_TICKET_ARGV_MAX, "eg_ticket is ABI");

/* The same fields as struct eg_ticket, a shorter argv: a prefix of it, byte for byte. */
#define EG_TICKET_SMALL_ARGV_MAX	512

struct eg_ticket_small {
	__u32 session;
	__u32 flags;
	__u64 dev;
	__u64 ino;
	__u64 script_dev;
	__u64 script_ino;
	__u32 argv_len;
	__u32 argv_stored;	/* at most EG_TICKET_SMALL_ARGV_MAX */
	__u64 issued_ns;
	__u64 chain_dev[EG_CHAIN_MAX];
	__u64 chain_ino[EG_CHAIN_MAX];
	__u64 target_dev;
	__u64 target_ino;
	__u32 chain_n;
	__u32 pad;
	char argv[EG_TICKET_SMALL_ARGV_MAX];
};
_Static_assert(sizeof(struct eg_ticket_small) == EG_TICKET_HDR + EG_TICKET_SMALL_ARGV_MAX,
	       "eg_ticket_small is ABI");
_Static_assert(__builtin_offsetof(struct eg_ticket_small, argv) == __builtin_offsetof(struct eg_ticket, argv) &&
	       __builtin_offsetof(struct eg_ticket_small, issued_ns) ==
	       __builtin_offsetof(struct eg_ticket, issued_ns) &&
	       __builtin_offsetof(struct eg_ticket_small, argv_stored) ==
	       __builtin_offsetof(struct eg_ticket, argv_stored),
	       "eg_ticket_small is a prefix of eg_ticket");

/*
 * An execgate binary whose "exec" verb is a session launcher (map
 * "launchers", a set keyed by the file's identity): its image gets depth -1
 * so the command it execs is depth 0. Set by the daemon from its own
 * /proc/self/exe.
 */
struct eg_file_key {
	__u64 dev;
	__u64 ino;
};
_Static_assert(sizeof(struct eg_file_key) == 16, "eg_file_key is ABI");

/*
 * The dynamic loader's own options when it runs as a command (glibc's
 * elf/rtld.c dl_main, musl's ldso): the program to run is the first
 * argument after them. Map "ldso_opts" holds them (key: the option
 * zero-padded to 32 bytes), and the daemon's judge reads the same list.
 */
#define EG_LOADER_ARG_UNKNOWN	0xffff	/* eg_event.loader_arg: where the program is cannot be told */
#define EG_LDSO_OPT_ALONE	1
#define EG_LDSO_OPT_VALUE	2	/* the next argument is its value */
#define EG_LDSO_OPTS_VALUE	"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0", \
				"--glibc-hwcaps-prepend", "--glibc-hwcaps-mask"
#define EG_LDSO_OPTS_ALONE	"--list", "--verify", "--inhibit-cache", "--list-tunables", \
				"--list-diagnostics", "--help", "--version"
struct eg_ldso_opt {
	char s[32];
};

/*
 * Which loaded copy of these programs acts (map "control", one entry). A
 * daemon that takes over from another (a restart that hands sessions over,
 * or a start after a crash left pinned programs attached) attaches its own
 * programs with the next generation, flips active_gen, then detaches the
 * old ones: in between both are attached and exactly one acts, so no exec
 * is traced twice or not at all.
 */
struct eg_control {
	__u32 active_gen;
	__u32 pad;
};
_Static_assert(sizeof(struct eg_control) == 8, "eg_control is ABI");

/*
 * ---- Kernel rules (execgate daemon --enforce) ----------------------------
 *
 * The policy compiler (userspace/enforce/compile.c) turns the rules the
 * kernel can evaluate into these maps; bpf/kjudge.bpf.h evaluates them with
 * the policy's own first-match order. Two sets (0 and 1): a reload writes
 * the set not in use, then switches eg_kstate.active in one store; a
 * judgement that sees eg_kstate.seq change under it starts again, so no
 * verdict mixes two policies.
 */
#define EG_KSETS		2
#define EG_KRULES_MAX		16384	/* kernel rules per set */
#define EG_KSTR_MAX		256	/* names, argv tokens and globs: NUL included */
#define EG_KCHUNK		30	/* rule numbers per index entry; more chain on */
#define EG_KINDEX_MAX		(EG_KSETS * 65536)
#define EG_KMEMBER_MAX		(EG_KSETS * 262144)
#define EG_KGLOBS_MAX		(EG_KSETS * 65536)
#define EG_KARG_GROUPS		16	/* args regexes per kernel rule */
#define EG_KARGS_SCAN		65536	/* arguments a judgement reads */

enum eg_kdecision {
	EG_KD_NONE = 0,		/* not judged */
	EG_KD_ALLOW,
	EG_KD_DENY,		/* deny, or approval with kernel_approval: deny */
	EG_KD_AUDIT,		/* audit, or approval with kernel_approval: audit */
	EG_KD_BYPASS,		/* internal_bypass */
	EG_KD_ERROR,		/* could not judge: treated as deny */
};

enum eg_klayer {
	EG_KL_NONE = 0,
	EG_KL_KILL,		/* sched_process_exec: SIGKILL before the image runs */
	EG_KL_LSM,		/* bprm_check_security: the exec fails with EPERM */
};

/* eg_event.kflags */
#define EG_KF_SCRIPT_RULE	(1u << 0)	/* the script's own judgement decided, not the interpreter's */
#define EG_KF_ARGV_SCANNED	(1u << 1)	/* argv tokens were read */
#define EG_KF_ARGS_CUT		(1u << 2)	/* more arguments than a judgement reads */
#define EG_KF_DRY_RUN		(1u << 3)	/* judged and reported, not enforced */
#define EG_KF_CHAIN_RULE	(1u << 4)	/* a middle script of a '#!' chain decided */
#define EG_KF_TARGET_RULE	(1u << 5)	/* the program a loader was asked to run decided */

/* eg_krule.flags: which matchers the rule has */
#define EG_KR_NAMES		(1u << 0)
#define EG_KR_PATHS		(1u << 1)	/* globs in kglobs[glob_first..+n_globs] */
#define EG_KR_IDENTS		(1u << 2)	/* literal paths' files, in kmember (EG_KK_IDENT) */
#define EG_KR_UIDS		(1u << 3)
#define EG_KR_CGROUPS		(1u << 4)	/* globs in kglobs[cg_first..+n_cgroups] */
#define EG_KR_ARGS		(1u << 5)	/* n_arg_groups token sets, all must be found */

struct eg_krule {
	__u32 rule;		/* index in the policy's commands */
	__u32 flags;		/* EG_KR_* */
	__s32 min_depth;
	__s32 max_depth;	/* 0x7fffffff: no bound */
	__u32 decision;		/* enum eg_kdecision */
	__u32 glob_first;
	__u16 n_globs;
	__u16 n_cgroups;
	__u32 cg_first;
	__u32 n_arg_groups;
	__u32 rank;		/* the policy decision's strength: deny 4, approval 2, audit 1, allow 0 */
	__u32 ctx_mask;		/* contexts it applies in: bit 0 none, bit N context N; 0: any */
	__u32 pad;
};
_Static_assert(sizeof(struct eg_krule) == 48, "eg_krule is ABI");

/*
 * Agent contexts (policy "contexts:"): an exec matching one of a context's
 * identities enters it (task storage "context", inherited at fork). The
 * identities are compiled as kernel rules after the commands' rules
 * (kconf.ident_first, n_ident), rule = the context id; their limits are in
 * map "kctx" (key: set * EG_CONTEXTS_MAX + id).
 */
#define EG_CONTEXTS_MAX		32	/* ids 1..31; 0: no context */
#include "names.h"	/* EG_SHELL_NAMES, EG_INTERP_NAMES */
#define EG_CONTEXT_NAME_MAX	64
struct eg_kctx {
	__s32 max_depth;	/* an exec deeper than this from the identity: refused; -1: no limit */
	__s32 max_shells;	/* the Nth shell in a row past this: refused; -1: no limit */
	char name[EG_CONTEXT_NAME_MAX];
};
_Static_assert(sizeof(struct eg_kctx) == 8 + EG_CONTEXT_NAME_MAX, "eg_kctx is ABI");

/*
 * Map "ctxnames" (key: id): the name each context id has had since a
 * daemon switched to a policy that has it. Pinned and kept with "tasks", it
 * outlives a daemon as the ids in task storage do: a daemon started anew
 * refuses a policy that would give an id another name. The daemon writes
 * it; no program reads it.
 */
struct eg_ctxname {
	char name[EG_CONTEXT_NAME_MAX];
};

/* eg_kkey.kind */
enum eg_kkind {
	EG_KK_NAME = 1,		/* s: a basename (index; member of rule) */
	EG_KK_IDENT,		/* a, b: dev, ino of a file a literal path names */
	EG_KK_UID,		/* a: an effective uid (member) */
	EG_KK_ARG,		/* s: one whole argument; kmember value: the rule's groups (bits) it is in */
	EG_KK_ALL,		/* index: rules no key can rule out */
	EG_KK_BYPASS,		/* a, b: a file internal_bypass names (member of rule 0) */
	EG_KK_DIR,		/* s: a path glob's literal directory ("/opt/x/"): index */
	EG_KK_SUFFIX,		/* s: a path glob's literal tail (".sh"): index */
	EG_KK_ALIAS,		/* a, b: a file an allow's basename names through root's own links */
	EG_KK_DIRCUT,		/* index: rules an EG_KK_DIR key finds: a path cut short (its front gone) is theirs */
};

/*
 * Key of the index map "kindex" (kind, chunk in .rule, the value) and of
 * the set map "kmember" (kind, rule, group, the value). Unused bytes are 0.
 */
struct eg_kkey {
	__u32 set;
	__u32 kind;		/* enum eg_kkind */
	__u32 rule;		/* kmember: the kernel rule; kindex: chunk number */
	__u32 group;		/* unused (0) */
	__u64 a;
	__u64 b;
	char s[EG_KSTR_MAX];
};
_Static_assert(sizeof(struct eg_kkey) == 32 + EG_KSTR_MAX, "eg_kkey is ABI");

/* Value of "kindex": kernel rule numbers, ascending; more in chunk + 1. */
struct eg_kcands {
	__u32 n;
	__u32 more;
	__u32 idx[EG_KCHUNK];
};
_Static_assert(sizeof(struct eg_kcands) == 8 + 4 * EG_KCHUNK, "eg_kcands is ABI");

/* Value of "kglobs" (key: set, id): an fnmatch pattern with only '*' and '?'. */
#define EG_KG_LITERAL		(1u << 0)	/* no metacharacter: equality */
#define EG_KG_BASE		(1u << 1)	/* internal_bypass bare name: matched against the file's name */
struct eg_kglob_key {
	__u32 set;
	__u32 id;
};
struct eg_kglob {
	__u16 len;
	__u16 flags;		/* EG_KG_* */
	char pat[EG_KSTR_MAX];
};
_Static_assert(sizeof(struct eg_kglob) == 4 + EG_KSTR_MAX, "eg_kglob is ABI");

/* eg_kconf.flags */
#define EG_KC_UNKNOWN_DIRECT	(1u << 0)	/* unknown_depth: direct */
#define EG_KC_BYPASS		(1u << 1)	/* internal_bypass entries: globs bypass_first.. */
#define EG_KC_ENFORCE		(1u << 2)	/* act on deny (else judge and report) */
#define EG_KC_RULES		(1u << 3)	/* the set holds the policy's rules (else its contexts alone) */

/* Per set (map "kconf", key: set): what the kernel enforces. */
struct eg_kconf {
	__u32 nrules;
	__u32 default_decision;	/* enum eg_kdecision */
	__u32 flags;		/* EG_KC_* */
	__u32 bypass_first;	/* internal_bypass globs in kglobs */
	__u32 n_bypass;
	__u32 seq;		/* eg_kstate.seq when this set was made active */
	__u64 host_mnt_ns;	/* the bypass holds only in this mount namespace */
	char sha256[72];	/* of the policy file, hex */
	__u32 default_rank;	/* default_decision's strength (eg_krule.rank) */
	__u32 pad;
	__u64 dir_slashes;	/* bit k: some EG_KK_DIR key has k + 1 slashes */
	__u64 suffix_lens;	/* bit n - 1: some EG_KK_SUFFIX key is n bytes long */
	__u32 ident_first;	/* contexts' identities: kernel rules ident_first.. */
	__u32 n_ident;
};
_Static_assert(sizeof(struct eg_kconf) == 136, "eg_kconf is ABI");

/*
 * The kernel rules' maps, by name: pinned, and shared with the copy in
 * force all or none (userspace trace/tracer.c, enforce/kmaps.c).
 */
#define EG_KMAPS_NAMES	"krules", "kindex", "kmember", "kglobs", "kconf", "kstate", "kctx"

/* Map "kstate", one entry: which set is in force. */
struct eg_kstate {
	__u32 active;		/* set in force: always EG_KSET_OF(seq), for readers of the map */
	__u32 seq;		/* bumped at every switch; 0: no rules loaded */
};
_Static_assert(sizeof(struct eg_kstate) == 8, "eg_kstate is ABI");

/*
 * The set in force follows from seq alone (sets alternate, seq counts the
 * switches from 1 and wraps to 2), so a judgement reads one 32-bit word:
 * a map update copies the value bytewise, and two loads could pair an old
 * set with a new seq (and then judge by a set being cleared).
 */
#define EG_KSET_OF(seq)	(((seq) - 1) & 1)

/*
 * What the supervisor asks the kernel of a trapped thread (program
 * "task_facts" of facts.bpf.c, run with BPF_PROG_RUN; the context in and
 * out). tid is in the init pid namespace, the daemon's own.
 */
#define EG_FACTS_SAME_ROOT	(1u << 0)	/* its root is the caller's (same mount, same dentry) */
#define EG_FACTS_STORAGE	(1u << 1)	/* task has an entry in "tasks" (copied to task) */
#define EG_FACTS_NS		(1u << 2)	/* pid_ns and mnt_ns were read */
#define EG_FACTS_CGROUP		(1u << 3)	/* cgroup_id was read */
/* with EG_FACTS_NS: who made its namespaces (facts.bpf.c, task_ns_makers) */
#define EG_FACTS_PID_NS_OURS	(1u << 4)	/* its pid namespace is owned by the caller's user namespace */
#define EG_FACTS_MNT_ROOT_MADE	(1u << 5)	/* its mount namespace is root's, up to the caller's (eg_ns_root_made) */

struct eg_facts {
	__u32 tid;		/* in */
	__s32 rc;		/* 0, or -ESRCH: no such task (or exiting) */
	__u32 tgid;
	__u32 euid;
	__u32 flags;		/* EG_FACTS_* */
	__u32 pid_ns;		/* its namespaces' inode numbers (EG_FACTS_NS), as /proc/TID/ns/ shows */
	__u32 mnt_ns;
	__u32 pad;
	__u64 cgroup_id;	/* its cgroup v2 (EG_FACTS_CGROUP) */
	struct eg_task task;
};
_Static_assert(sizeof(struct eg_facts) == 40 + sizeof(struct eg_task), "eg_facts is ABI");

/*
 * Size of one CPU's scratch record for a given argv cap: the largest record,
 * plus room for one more string read so the verifier can bound each read.
 */
#define EG_CHAIN_BYTES	EG_FILENAME_MAX	/* chain[]: all of it (eg_chain_ent + path each); more is cut */
#define EG_STRINGS_MAX	(4 * EG_FILENAME_MAX + EG_CHAIN_BYTES + EG_CWD_MAX)
#define EG_RECORD_MAX(argv_cap) \
	(sizeof(struct eg_event) + EG_STRINGS_MAX + (argv_cap))
#define EG_SCRATCH_SIZE(argv_cap) (EG_RECORD_MAX(argv_cap) + EG_ARG_READ_MAX)

#endif /* EXECGATE_H */
