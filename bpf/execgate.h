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
#define EG_RINGBUF_DEFAULT	(16 * 1024 * 1024)
#define EG_LAUNCHERS_MAX	8	/* execgate binaries whose "exec" verb starts a session */
#define EG_AUID_UNSET		0xffffffffu

enum eg_event_type {
	EG_EVENT_EXEC		= 1,	/* a successful exec, at sched_process_exec */
	EG_EVENT_EXEC_FAILED	= 2,	/* execve/execveat returned an error */
	EG_EVENT_EXIT		= 3,	/* an exec'd process ended (its last thread): struct eg_exit_event */
	/* 4 and up: reserved */
};

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
};

/*
 * One ring-buffer record. The header is followed by six byte strings:
 *   filename[filename_len]  exec: the file the kernel runs (bprm->file),
 *                           leaf first like cwd; exec_failed: the path the
 *                           caller passed, NUL terminated
 *   requested[requested_len] exec: the path as the caller spelled it
 *                           (bprm->filename), NUL terminated
 *   interp[interp_len]      a script's interpreter as its '#!' line spells it
 *   script[script_len]      the script file itself, leaf first (when found)
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
	char comm[EG_COMM_LEN];
	char tty[EG_TTY_LEN];	/* controlling terminal ("pts3"), "" when none */
};
_Static_assert(sizeof(struct eg_event) == 208, "eg_event is ABI");

/* Task-storage value (map "tasks"), one per task, inherited at fork. */
#define EG_TASK_KNOWN		(1u << 0)	/* storage valid: depth counts from what we saw */
#define EG_TASK_PENDING		(1u << 1)	/* unused now (an entry stash once): bit kept */
#define EG_TASK_PENDING_AT	(1u << 2)	/* unused now: bit kept */
#define EG_TASK_DEPTH_KNOWN	(1u << 3)	/* depth is absolute: a launcher, or set */
#define EG_TASK_LAUNCHER	(1u << 4)	/* an `execgate exec` launcher image */
#define EG_TASK_MUST_DIE	(1u << 5)	/* killed at exec, the signal not yet sent */
#define EG_TASK_LSM_DENIED	(1u << 6)	/* bprm_check_security refused this exec (lsm_* say why) */

struct eg_task {
	__s32 depth;		/* depth of the current image; -1 = launcher */
	__u32 flags;		/* EG_TASK_* */
	__u64 exec_ktime;	/* exec id of the current image */
	__u32 exec_tgid;
	__u32 session;		/* 0: none; set by the daemon for a verified launcher */
	/*
	 * Unused since failed execs are read from the registers at the
	 * syscall's exit; kept so the pinned map's layout (and the depths in
	 * it) carry over from older daemons.
	 */
	__u64 pending_filename;
	__u64 pending_argv;
	__s32 pending_dirfd;
	__u32 pending_at_flags;
	__u32 lsm_rule;		/* EG_TASK_LSM_DENIED: eg_event.krule of the refusal */
	__u32 lsm_seq;		/* ... kseq */
	__u16 lsm_kflags;	/* ... kflags */
	__u8 lsm_kdecision;	/* ... kdecision */
	__u8 lsm_reason;	/* ... reason */
	__u32 pad;
};
_Static_assert(sizeof(struct eg_task) == 64, "eg_task is ABI");

/* Operator view of live processes (map "procs", key: tgid). */
struct eg_proc {
	__s32 depth;
	__u32 ppid;
	__u32 uid;
	__u32 session;
	__u64 exec_ktime;
	__u64 parent_ktime;
	__u32 parent_tgid;
	__u32 flags;		/* EG_TASK_* of the process's exec */
	__u64 cgroup_id;
	char comm[EG_COMM_LEN];
};
_Static_assert(sizeof(struct eg_proc) == 64, "eg_proc is ABI");

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
	__u64 procs_failed;	/* the procs map refused an update */
	__u64 killed;		/* tasks killed at exec (tickets, kernel rules) */
	__u64 kill_failed;	/* bpf_send_signal refused at exec (retried at syscall exit) */
	__u64 kjudged;		/* execs the kernel rules judged */
	__u64 kdenied;		/* ... and refused (LSM) or killed */
	__u64 kerrors;		/* ... and could not judge (failed closed) */
	__u64 kretries;		/* judgements redone because a reload swapped the rules */
	__u64 lsm_deferred;	/* left by bprm_check_security to the check at exec */
	__u64 exits;		/* exit records queued */
	__u64 lost_exit;	/* exit records the ring buffer had no room for */
};
_Static_assert(sizeof(struct eg_counters) == 160, "eg_counters is ABI");

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
	__u32 flags;		/* EG_F_SCRIPT_TRUNC, EG_F_SCRIPT_DELETED, EG_F_ANON_FILE */
	char path[EG_FILENAME_MAX];
};
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
	char argv[EG_TICKET_ARGV_MAX];
};
_Static_assert(sizeof(struct eg_ticket) == 56 + EG_TICKET_ARGV_MAX, "eg_ticket is ABI");

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
	char argv[EG_TICKET_SMALL_ARGV_MAX];
};
_Static_assert(sizeof(struct eg_ticket_small) == 56 + EG_TICKET_SMALL_ARGV_MAX, "eg_ticket_small is ABI");
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
};
_Static_assert(sizeof(struct eg_krule) == 40, "eg_krule is ABI");

/* eg_kkey.kind */
enum eg_kkind {
	EG_KK_NAME = 1,		/* s: a basename (index; member of rule) */
	EG_KK_IDENT,		/* a, b: dev, ino of a file a literal path names */
	EG_KK_UID,		/* a: an effective uid (member) */
	EG_KK_ARG,		/* s: one whole argument; kmember value: the rule's groups (bits) it is in */
	EG_KK_ALL,		/* index: rules no key can rule out */
	EG_KK_BYPASS,		/* a, b: a file internal_bypass names (member of rule 0) */
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
};
_Static_assert(sizeof(struct eg_kconf) == 112, "eg_kconf is ABI");

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

struct eg_facts {
	__u32 tid;		/* in */
	__s32 rc;		/* 0, or -ESRCH: no such task (or exiting) */
	__u32 tgid;
	__u32 euid;
	__u32 flags;		/* EG_FACTS_* */
	__u32 pad;
	struct eg_task task;
};
_Static_assert(sizeof(struct eg_facts) == 24 + sizeof(struct eg_task), "eg_facts is ABI");

/*
 * Size of one CPU's scratch record for a given argv cap: the largest record,
 * plus room for one more string read so the verifier can bound each read.
 */
#define EG_STRINGS_MAX	(4 * EG_FILENAME_MAX + EG_CWD_MAX)
#define EG_RECORD_MAX(argv_cap) \
	(sizeof(struct eg_event) + EG_STRINGS_MAX + (argv_cap))
#define EG_SCRATCH_SIZE(argv_cap) (EG_RECORD_MAX(argv_cap) + EG_ARG_READ_MAX)

#endif /* EXECGATE_H */
