/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside the sessions module: the registry (session.c), the supervisor that
 * answers notifications (supervisor.c), reading a target's memory (peek.c)
 * and approvals (approvals.c). Nothing outside session/ includes this.
 */
#ifndef EG_SESSION_INTERNAL_H
#define EG_SESSION_INTERNAL_H

#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include "execgate.h"
#include "session/resolve.h"
#include "session/session.h"
#include "util/jsonw.h"
#include "loop/loop.h"

/* the seccomp user-notify names newer than the system headers */
#include "util/seccomp_notif.h"

/* names and structs newer than the system headers, for every file of session/ */
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#ifndef AUDIT_ARCH_X86_64
#define AUDIT_ARCH_X86_64 0xc000003e
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* PIDFD_GET_INFO (Linux 6.13), its first published size */
struct eg_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
};
_Static_assert(sizeof(struct eg_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define EG_PIDFD_GET_INFO	_IOWR(0xFF, 11, struct eg_pidfd_info)
#define EG_PIDFD_INFO_PID	(1ull << 0)
#define EG_PIDFD_INFO_CREDS	(1ull << 1)

#define SESSIONS_MAX		4096	/* live sessions, all users */
#define SESSIONS_PER_UID	256
/*
 * A session's own policy, from any user, is read in the thread that serves
 * every session: its size is bounded far below the daemon's own (16 MiB:
 * seconds of parsing and rules, every supervised exec waiting meanwhile).
 */
#define SESSION_POLICY_MAX_BYTES	(1u << 20)
#define APPROVALS_MAX		1024	/* pending at once */
#define APPROVALS_PER_TREE	64	/* ... of them for one session tree */
#define APPROVALS_PER_UID	256	/* ... for one user's sessions, */
#define APPROVALS_UID_FLOOR	16	/* of which these whenever there is room, */
#define APPROVALS_UID_SLACK	256	/* the rest while more places than this stay free */
#define APPROVAL_TIMEOUT_MS	10000	/* when no policy sets approval_timeout */
#define VERDICTS_MIN		1024	/* slots at the start: the table doubles when a thread finds none free, */
#define VERDICTS_MAX		65536	/* up to this many verdicts waiting for their exec record */
#define VERDICT_TTL_NS		(120ull * 1000000000ull)

struct eg_session {
	struct eg_sessions *owner;
	uint32_t id;
	char name[64];
	uid_t uid;
	gid_t gid;
	pid_t launcher;			/* tgid of the launcher */
	bool restricted;		/* this one or any parent */
	struct eg_policy *policy;	/* NULL: none of its own */
	char policy_sha[65];
	struct eg_session *parent;	/* the session it was started in */
	int listener;			/* -1: nested, trapped by an outer session's listener */
	struct eg_watch *w;
	struct eg_receiver *rx;		/* the thread that takes its notifications (receiver.c) */
	bool loop_receives;		/* the loop takes them (EPOLLIN): no receiver, or it is stuck */
	bool attached;			/* the listener arrived */
	bool first_seen;		/* the launcher's own exec came first */
	bool compromised;		/* a notification broke the protocol: deny everything */
	bool ended;
	bool sync_wakeup;		/* its listener is in synchronous-wakeup mode */
	bool needs_known;		/* needs: what its policy looks at beyond the exec */
	unsigned int needs;		/* POLICY_NEEDS_* */
	int refs;			/* children, approvals and the registry */
	uint64_t started_ns;
	uint64_t execs, denied;
	char *boundary;			/* its Landlock plan, rendered (boundary.h), or NULL */
	char *exec_lists;		/* its layers' execute lists, resolved when it opened (boundary.h) */
	char *redirect_dir;		/* its redirect entries (redirect.c), or NULL */
	uint64_t access_denied;		/* accesses its Landlock layers refused (denials.c) */
	/* a top-level session: its tree's requests in workers, and those waiting for one */
	unsigned int workers;
	struct exec_request *backlog, **backlog_tail;
	struct eg_session *next;
};

/* A verdict waiting for the tracer's record of the exec it allowed or refused. */
struct verdict {
	uint32_t tid;
	uint32_t session;
	uint64_t at_ns;
	uint64_t issued_ns;		/* CLOCK_BOOTTIME: its ticket's issue (before the exec goes on), a refusal's put */
	uint64_t seq;			/* order of the verdicts: a thread's records come in it */
	uint64_t dev, ino;		/* an allowed exec: the file that will run; 0 for a refusal */
	char decision[16];
	char action[16];
	char *rule;
	char *message;
	char approval_id[24];
	bool used;
};

struct approval;

/* A refusal remembered briefly: a shell tries every PATH entry with the same file. */
struct refusal {
	uint32_t tid, session;
	uint64_t dev, ino, argv_hash;
	uint64_t at_ns;
	char rule[64];
	char message[200];
	char action[16];
};
#define REFUSALS_MAX	64
#define REFUSAL_TTL_NS	(2ull * 1000000000ull)

/*
 * Supervisor latency, in microseconds, log-linear buckets: exact below 16,
 * then 8 per power of two (12% wide), up to 2^31 us.
 */
#define LATENCY_BUCKETS	(16 + 28 * 8)
unsigned int latency_bucket(uint64_t us);
uint64_t latency_bucket_low(unsigned int b);
struct exec_request;
void latency_record(struct eg_sessions *s, const struct exec_request *r);

/* The daemon's own root, and what makes a task's root the same (mount id, device, inode). */
struct eg_roots {
	const struct eg_loaders *loaders;	/* the host's dynamic loaders */
	int fd;
	bool known;
	uint64_t mnt, dev, ino;
};

struct eg_offload;
struct eg_teller;
struct eg_receiver;
struct eg_facts_prog;
struct task_amender;

#define FINISHED_SLOTS	1024	/* a power of two */

struct eg_sessions {
	struct eg_sessions_opts o;
	char answer_token[64];		/* the API token answering now (approvals.c), "" else */
	struct eg_offload *offload;	/* the workers that read and look up (offload.c) */
	/* receiver.c: threads that live, and the timer that finds a stuck one */
	unsigned int receivers;
	struct eg_receiver *rx_all;	/* every receiver that has not left */
	struct eg_watch *rx_tick;
	bool rx_tick_fast;		/* every RX_TICK_MS (else once, at the first idle deadline, or off) */
	int rx_idle_ms;			/* a receiver with nothing to do this long leaves */
	size_t notif_size;		/* the kernel's struct seccomp_notif (notif_new) */
	struct eg_teller *teller;	/* the helper that writes a refused task's stderr line (tell.c) */
	struct eg_facts_prog *facts;	/* NULL: the facts come through a pidfd and /proc (facts.c) */
	struct task_amender *amender;	/* a launcher's session id written (NULL: sessions refused) */
	struct eg_session *list;
	unsigned int nsessions;
	int landlock_abi;		/* the kernel's, probed once */
	struct eg_denials *denials;	/* Landlock's refusals, from audit (denials.c) */
	struct eg_sessions_stats st;
	struct eg_ticket *ticket;	/* one buffer: a ticket is 64 KiB */
	/* tid -> verdict, open addressing, nverdicts slots (a power of two) */
	struct verdict *verdicts;
	unsigned int nverdicts;
	struct approval *approvals;
	unsigned int napprovals;
	/*
	 * The newest request of a thread finished so far, by when it came
	 * (tid -> received_ns, direct-mapped): one that came before it and is
	 * finished after it is gone (supervisor.c, request_finish).
	 */
	struct { pid_t tid; uint64_t ns; } finished[FINISHED_SLOTS];
	struct ctl_conn **watchers;	/* `execgate approvals --watch` */
	unsigned int nwatchers;
	struct eg_watch *sweep;		/* armed while a session or a verdict is held (sweep_arm) */
	bool sweep_armed;
	struct refusal refusals[REFUSALS_MAX];
	unsigned int next_refusal;
	struct sbuf ann_rule, ann_msg, ann_id;
	struct eg_roots roots;
	/* what the daemon's policy looks at beyond the exec (POLICY_NEEDS_*), for the one of this digest */
	uint64_t global_load_seq;	/* the daemon's policy load global_needs is of (0: none yet) */
	unsigned int global_needs;
	/* ... and the sizes of the files it names by content (at most 64 kept) */
	uint64_t global_sizes[64];
	unsigned int n_global_sizes;
	/* how long the supervisor took per exec (not counting a person's answer) */
	uint64_t latency[LATENCY_BUCKETS];
	/*
	 * The request's path (supervisor.c), as the ways a request travels
	 * (receiver.c, offload.c) call it: set by supervisor_init, so that
	 * those stand below the flow they carry requests through.
	 */
	struct eg_flow {
		bool (*take)(struct eg_sessions *s, struct eg_session *se, struct exec_request *r);
		void (*finish)(struct eg_sessions *s, struct exec_request *r);
		void (*refuse_early)(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v);
	} flow;
};

/*
 * A receiver's CONTINUE for the request it carries, decided under the
 * loop's lock and sent after it let go (answer_send): the task it wakes
 * runs on this CPU at once, and must not find the lock held by the thread
 * it displaced. Its ticket and verdict are taken back if it cannot be
 * sent. One per request (exec_request.answer_to): a CONTINUE of any other
 * request made meanwhile goes out at once.
 */
struct eg_answer {
	bool have;
	int listener;
	uint64_t id;
	uint32_t tid;
	int map;		/* the ticket's map */
	uint64_t verdict_seq;	/* its verdict (0: none yet) */
	bool allowed;		/* counted in st.allowed */
};

/* What a policy's rules look at besides the exec itself: worth reading only then. */
#define POLICY_NEEDS_CGROUP	(1u << 0)	/* cgroups: rules */
#define POLICY_NEEDS_MNT_NS	(1u << 1)	/* internal_bypass: the mount namespace */

/* What the supervisor knows of one trapped exec. */
struct exec_request {
	uint64_t received_ns;		/* CLOCK_MONOTONIC when the notification came */
	bool parked;			/* waited for a person: not a supervisor latency */
	struct eg_session *session;	/* the task's own (innermost) session */
	int listener;
	struct seccomp_notif *req;
	uint64_t id;
	pid_t tid, tgid;
	int pidfd;			/* of the thread group, for stderr and liveness (request_pidfd) */
	char path[PATH_MAX];		/* as passed */
	bool path_trunc;
	char **argv;
	unsigned int argc;
	bool argv_read;			/* argv was read (or tried): not when the first program is not found */
	bool argv_wanted;		/* read it even then (its thread had an exec waiting for a person) */
	bool target_off_lists;		/* the loader's program is off a layer's execute list (request_work) */
	bool argv_trunc;
	uint64_t argv_bytes;
	bool execveat;
	int dirfd_num;
	int at_flags;
	int depth;			/* the host's */
	bool depth_known;
	int session_depth;		/* from the session's command (0) */
	bool in_container;		/* its pid namespace is not the host's (read when a rule needs it) */
	int container_depth;
	uint32_t euid;
	char cgroup[512];
	bool cgroup_read;		/* cgroup is filled in (read lazily: request_cgroup) */
	bool foreign_ns;
	bool user_mount;		/* its mount namespace is a user's (eg_ns_root_made): paths are theirs */
	bool planned;
	/* the kernel's task storage of the thread, read when it came (request_new) */
	int rc_facts;
	struct eg_task task;
	bool same_root;			/* the kernel said its root is the daemon's */
	bool ns_known;			/* pid_ns and mnt_ns: the kernel's (the facts program) */
	bool pid_ns_ours;		/* ns_known: its pid namespace is owned by ours (eg_ns_ours) */
	bool mnt_ns_root_made;		/* ns_known: its mount namespace is root's (eg_ns_root_made) */
	uint32_t pid_ns, mnt_ns;
	uint64_t cgroup_id;		/* the facts program's, 0: not known */
	/* the limits of argv reading, set before a worker reads */
	uint32_t max_argc;
	uint64_t max_argv_bytes;
	/* sizes of the files the daemon's policy names by content, when submitted */
	uint64_t content_sizes[64];
	unsigned int n_content_sizes;
	/* in a worker (offload.c): set there, read by the loop once it is back */
	int rc_read, rc_plan;
	/* offload.c, loop thread only (job_next also under its lock) */
	struct exec_request *job_next;
	struct exec_request *live_next, **live_prev;
	uint64_t queued_ms;
	bool abandoned;			/* answered while a worker still has it */
	/*
	 * The receiver carrying it holds its CONTINUE here (answer.c): set by
	 * the receiver around request_finish, taken by the answer itself,
	 * cleared when the request is parked for a person.
	 */
	struct eg_answer *answer_to;
	struct eg_answer *answer_held;	/* ... where it went, for its ticket and verdict */
	struct eg_session *lsession;	/* the session whose listener it came from */
	/* each program's own verdict (plan.prog[], then plan.target), the strongest under every policy */
	struct eg_verdict pverdict[EG_MAX_PROGRAMS + 1];
	bool pjudged;			/* pverdict holds: every program was judged */
	struct eg_exec_plan plan;	/* last: filled by exec_plan, not zeroed before (it is large) */
};


/* session.c: the loop serves se's listener (its receiver away) */
int listener_watch(struct eg_sessions *s, struct eg_session *se, int fd);

/* registry.c */
/* The session id of launcher pid, still the image of exec id exec_ktime (else -ESTALE). */
int task_set_session(struct eg_sessions *s, pid_t pid, uint32_t id, uint64_t exec_ktime);
struct eg_session *session_find(struct eg_sessions *s, uint32_t id);
void session_put(struct eg_sessions *s, struct eg_session *se);
void session_end(struct eg_sessions *s, struct eg_session *se, const char *why);
void sessions_emit(struct eg_sessions *s, struct sbuf *b, const char *text);
int task_lookup(const struct eg_sessions *s, pid_t pid, bool thread, struct eg_task *ret);
int verdicts_init(struct eg_sessions *s);
void verdicts_free(struct eg_sessions *s);
/* When none waits, a table a burst grew goes back to VERDICTS_MIN slots, its pages with it. */
void verdicts_shrink(struct eg_sessions *s);
/* Returns the verdict's sequence number (verdict_forget), 0 when there was no slot. */
uint64_t verdict_put(struct eg_sessions *s, uint32_t tid, uint32_t session, const char *decision,
		     const char *action, const char *rule, const char *message, const char *approval_id,
		     uint64_t dev, uint64_t ino, uint64_t issued_ns);
void verdict_forget(struct eg_sessions *s, uint32_t tid, uint64_t seq);

/* supervisor.c */
/* A zeroed buffer for one notification, the kernel's size (free() it); NULL: out of memory. */
struct seccomp_notif *notif_new(const struct eg_sessions *s);
/*
 * The session layer along a request's path, bottom up: request.c (the
 * request and its facts), answer.c (tickets, CONTINUE, a receiver's held
 * answer), refusal.c (EACCES, the record, PATH-search repeats), judge.c
 * (the policies), supervisor.c (the flow: take, work, finish), then the
 * ways a request travels (receiver.c, offload.c, approvals.c) and the
 * sessions themselves (session.c).
 */
int supervisor_init(struct eg_sessions *s);
/*
 * A trapped exec, from a listener: request_new() takes req and reads what
 * the kernel keeps of the task (any thread, no lock); request_take(), in
 * the loop or under its lock, judges what needs no reading of the task's
 * memory or files: true when r must go on to request_work(), false when it
 * was answered (and freed).
 */
struct exec_request *request_new(const struct eg_sessions *s, struct seccomp_notif *req);
bool request_take(struct eg_sessions *s, struct eg_session *se, struct exec_request *r);
/*
 * In a worker: reads r's path and argv from the target and works out what
 * it will run. argv is not read when the first program is not there and
 * the kernel will fail the exec anyway (r->argv_read false, argc 0).
 */
void request_work(const struct eg_roots *roots, struct exec_request *r);
/* A lookup's failure that the exec meets in the kernel too: let fail, the task gets the kernel's errno (0: none). */
bool lookup_fails_in_kernel(int rc);
/* Back in the loop: judges and answers r, and frees it (or hands it to an approval). */
void request_finish(struct eg_sessions *s, struct exec_request *r);
/* Refuses r with v using only what was known before the worker read anything; r is kept. */
void request_refuse_early(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v);
void supervisor_fini(struct eg_sessions *s);
/* A notification the loop took from a listener (no receiver, or the receiver is stuck). */
void supervisor_handle(struct eg_sessions *s, struct eg_session *se, struct seccomp_notif *req);
/* Lets the request go on: ticket, then CONTINUE. 0, or -errno (then it was denied). */
int request_allow(struct eg_sessions *s, struct exec_request *r);
/*
 * A receiver, under the loop's lock, points r->answer_to at its own slot
 * before request_finish; r's CONTINUE lands there (and nothing else's).
 * answer_send() without the lock, which it takes again only if the answer
 * could not be given (the task is gone: its ticket and verdict go).
 */
void answer_send(struct eg_sessions *s, const struct eg_answer *a);

/* request.c */
/* The notification still stands: what was read was this task's. */
bool request_valid(const struct exec_request *r);
/* The limits of argv reading over se's policies (the smallest wins). */
void request_limits(struct eg_sessions *s, struct eg_session *se, uint32_t *ret_argc, uint32_t *ret_bytes);
/* The daemon's own root, for comparing a task's (roots.fd -1 until then). */
int roots_open(struct eg_roots *roots);
void roots_close(struct eg_roots *roots);

/* answer.c */
/* CONTINUE (cont) or error; a receiver's request's CONTINUE is held in its slot. */
int request_respond(struct exec_request *r, int error, bool cont);
/*
 * SECCOMP_IOCTL_NOTIF_SEND, again when a signal cut it short (a receiver's
 * wake-up, receiver.c, takes the listener's lock interruptibly): 0, or
 * -1 when the request is gone.
 */
int notif_respond(int listener, struct seccomp_notif_resp *resp);
/* The answer held for r (its receiver's slot), NULL when it went out or none was made. */
struct eg_answer *request_held(const struct exec_request *r);
/* An exec the kernel will refuse: let it, with a ticket naming no file; rc if that cannot be. */
void request_let_fail(struct eg_sessions *s, struct exec_request *r, int rc);

/* refusal.c */
void request_deny_with(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v);
/* "allowed", "audited", "approved": what a verdict that lets an exec go did. */
const char *verdict_action(enum eg_decision d);
/* The same thread asking again for the same file and argv, just refused: that refusal. */
const struct refusal *request_refused_recently(struct eg_sessions *s, const struct exec_request *r);

/* judge.c */
/* Reads what the policies over r's session look at besides the exec (cgroup, namespaces). */
void request_policy_facts(struct eg_sessions *s, struct exec_request *r);
/* Every program of r under every policy over its session: the strongest verdict. */
void request_judge(struct eg_sessions *s, struct exec_request *r, struct eg_verdict *ret);
/* Refuses it: EACCES, and a line on the target's stderr. */
void request_deny(struct eg_sessions *s, struct exec_request *r, const char *line);
/* The record of an exec the supervisor refused (the kernel never saw it). */
void emit_blocked(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v,
		  const char *action, const char *approval_id);
void request_free(struct exec_request *r);
/* The thread group's pidfd, opened the first time it is needed; -1 if it cannot be. */
int request_pidfd(struct exec_request *r);
/* Reads the task's cgroup v2 path into r->cgroup, once ("" if unknown). */
void request_cgroup(const struct eg_sessions *s, struct exec_request *r);
/* Remember that r was refused (approval denied, timed out, policy). */
void refusal_note(struct eg_sessions *s, const struct exec_request *r, const char *rule,
		  const char *message, const char *action);
/* Adds the common exec fields of r to an open JSON object. */
void request_json(struct jsonw *w, const struct exec_request *r);
/* answer.c: the bytes of argv a ticket pins (the tracer's cap, the ticket's room) */
size_t ticket_argv_room(const struct eg_sessions *s);
/* The same, with argc of argv written (a listing's shortened copy; "argc" stays the whole's count): its bytes as they are. */
void request_json_argv(struct jsonw *w, const struct exec_request *r, char *const *argv, unsigned int argc);

/*
 * peek.c: bounded reads of a trapped task's memory; -errno, -ESRCH when it
 * is gone. The path (NUL within path_max, else *ret_path_trunc and no
 * argv), then argv (at most max_argc strings and max_bytes, else
 * *ret_argv_trunc); -EFAULT where the kernel would fail with it.
 *
 * In two steps, through one struct peek (the pages read so far): the path
 * with argv's array, then argv's strings, which a lookup that fails never
 * needs (request_work). peek_exec_args does both.
 */
#define PEEK_PAGE	4096ull
#define PEEK_PAGES	16	/* pages held at once (64 KiB, on the stack); more are read again */

struct peek {
	pid_t tid;
	unsigned int n;
	struct {
		uint64_t addr;
		int state;
	} pg[PEEK_PAGES];
	char data[PEEK_PAGES * PEEK_PAGE];	/* slot i for pg[i] */
};

int peek_exec_path(struct peek *pk, pid_t tid, uint64_t path_addr, char *path, size_t path_max,
		   bool *ret_path_trunc, uint64_t argv_addr);
int peek_exec_argv(struct peek *pk, uint64_t argv_addr, uint32_t max_argc, uint64_t max_bytes,
		   char ***ret_argv, unsigned int *ret_argc, uint64_t *ret_bytes, bool *ret_argv_trunc);
int peek_exec_args(pid_t tid, uint64_t path_addr, char *path, size_t path_max, bool *ret_path_trunc,
		   uint64_t argv_addr, uint32_t max_argc, uint64_t max_bytes, char ***ret_argv,
		   unsigned int *ret_argc, uint64_t *ret_bytes, bool *ret_argv_trunc);
void strv_free(char **v, unsigned int n);

/*
 * offload.c: the reads and lookups that can block, in worker threads. At
 * most OFFLOAD_PER_TREE of one session tree's requests at once and
 * OFFLOAD_PER_UID of one user's trees together, in at most
 * OFFLOAD_THREADS threads (OFFLOAD_IDLE kept waiting); a request not back
 * after OFFLOAD_TIMEOUT_MS is refused.
 */
#define OFFLOAD_PER_TREE	2
#define OFFLOAD_PER_UID		8	/* all the trees of one user */
#define OFFLOAD_THREADS		64
#define OFFLOAD_IDLE		2
#define OFFLOAD_IDLE_MS		1000	/* an idle worker leaves after this */
#define OFFLOAD_TIMEOUT_MS	5000
#define OFFLOAD_TICK_MS		500
int offload_init(struct eg_sessions *s);
void offload_fini(struct eg_sessions *s);
/* Takes r (its session set, listener_se the listener's) to a worker, or refuses it. */
void offload_submit(struct eg_sessions *s, struct exec_request *r, struct eg_session *listener_se);
/* r stays in a receiver (its tree's own worker) until offload_unhold() takes it back. */
void offload_hold(struct eg_sessions *s, struct exec_request *r, struct eg_session *listener_se);
void offload_unhold(struct eg_sessions *s, struct exec_request *r);
/*
 * Whether a request of thread tid is being read or looked up (held or in
 * a worker, not one the timeout answered already), under the loop's lock.
 */
bool offload_tid_live(const struct eg_sessions *s, pid_t tid);
void offload_session_ended(struct eg_sessions *s, struct eg_session *se);
void offload_quiesce(struct eg_sessions *s, int timeout_ms);
/* Requests in a worker or waiting for one. */
unsigned int offload_waiting(const struct eg_sessions *s);

/*
 * facts.c: the kernel's facts about a trapped thread (tgid, euid, task
 * storage, same root as the daemon's) in one BPF_PROG_RUN. facts_open():
 * 0, or -errno when the program cannot serve here (then: pidfd and /proc).
 * facts_read(): 0, or -ESRCH (no such task), another -errno.
 */
int facts_open(int tasks_fd, struct eg_facts_prog **ret);
void facts_close(struct eg_facts_prog *f);
int facts_read(const struct eg_facts_prog *f, pid_t tid, struct eg_facts *ret);

/*
 * receiver.c: a thread per listener that takes its notifications and
 * answers them (under the loop's lock), woken on the trapped task's CPU.
 * receiver_start() -errno: the loop serves the listener instead.
 * receiver_stop() lets it go (it leaves when it can); receivers_wait()
 * waits, without the loop's lock, until every receiver has left (false
 * if some did not in timeout_ms: one stuck in a file system).
 */
int receivers_init(struct eg_sessions *s);
void receivers_fini(struct eg_sessions *s);
int receiver_start(struct eg_sessions *s, struct eg_session *se, int listener);
void receiver_stop(struct eg_sessions *s, struct eg_session *se);
bool receivers_wait(struct eg_sessions *s, int timeout_ms);
/*
 * What wakes a receiver from its receive: a signal nothing else here uses
 * (no socket of the daemon has an owner to send it to). Not a real-time
 * one: those queue, one delivery each and up to the user's limit, where
 * this one is a pending bit (sent twice, taken once), and it cannot fail
 * for a full queue.
 */
#define RX_SIGNAL	SIGURG
/*
 * The calling thread takes it (SIG_UNBLOCK: a receiver) or not (SIG_BLOCK:
 * receivers_init in the loop's thread, a worker in its own).
 */
static inline void receiver_signal_mask(int how)
{
	sigset_t wake;

	sigemptyset(&wake);
	sigaddset(&wake, RX_SIGNAL);
	pthread_sigmask(how, &wake, NULL);
}

/*
 * tell.c: the line on a refused task's stderr, written by a helper process
 * (the teller) that judges the task's fd 2 from /proc first; the loop
 * waits for it briefly, never for a file system.
 */
int tell_init(struct eg_sessions *s, int sock);
void tell_fini(struct eg_sessions *s);
void tell_target(struct eg_sessions *s, struct exec_request *r, const char *line);

/* approvals.c */
int approvals_init(struct eg_sessions *s);
void approvals_free(struct eg_sessions *s);
/* Parks r (taken over) until someone answers or the timeout passes. */
void approval_park(struct eg_sessions *s, struct exec_request *r, const struct eg_verdict *v);
/* The same exec asked again (an interrupted wait): joins the parked one. 1 if it did. */
int approval_rejoin(struct eg_sessions *s, struct exec_request *r);
/* Thread tid has an exec waiting for a person (the loop's lock). */
bool approval_waits_for(const struct eg_sessions *s, pid_t tid);
void approvals_session_ended(struct eg_sessions *s, struct eg_session *se);
/* Answers every pending approval as its timeout would (a restart). */
void approvals_resolve_all(struct eg_sessions *s, const char *why);

/*
 * The sweep (ended nested sessions, verdicts no record took) runs every
 * SWEEP_MS while there is something to sweep, and not at all on a daemon
 * with no session: an idle daemon has no timer.
 */
#define SWEEP_MS		10000
static inline void sweep_arm(struct eg_sessions *s)
{
	if (!s->sweep_armed && s->sweep && !loop_timer_set(s->sweep, SWEEP_MS, SWEEP_MS))
		s->sweep_armed = true;
}

/* redirect.c: a session's redirect directory */
void redirect_dir_make(struct eg_sessions *s, struct eg_session *se);
void redirect_dir_remove(struct eg_session *se);
/* Whether path, the file dev:ino, is an entry of se's (or an outer session's) redirect directory. */
bool redirect_path_in(const struct eg_session *se, const char *path, uint64_t dev, uint64_t ino);

#endif
