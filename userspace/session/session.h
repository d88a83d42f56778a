/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Supervised sessions (`execgate exec -- CMD`): the daemon side. A launcher
 * asks for a session over the control socket, installs a seccomp filter
 * that traps execve/execveat with a user-notify listener and hands the
 * listener over. From then on every exec in the session's tree waits for
 * the supervisor: it reads the path and argv from the target, works out
 * what the kernel will run, judges every program against the daemon's
 * policy, the session's and its parents' (deny wins), and answers: the
 * syscall fails with EACCES, goes on (after a ticket the kernel checks at
 * the exec that really happens), or waits for a person's approval. See
 * docs/sessions.md.
 */
#ifndef EG_SESSION_H
#define EG_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "loop/loop.h"
#include "events/format.h"
#include "policy/policy.h"
#include "util/loaders.h"
#include "util/sbuf.h"

struct ctl_server;
struct eg_sessions;
struct jsonw;

/* Where the sessions module writes its records (approval, session, blocked execs). */
struct eg_sessions_out {
	/* one complete JSON line (with '\n'), and a short text for a terminal */
	void (*emit)(void *arg, const char *json, size_t len, const char *text);
	void *arg;
};

struct cgroup_cache;

struct eg_sessions_opts {
	struct eg_loop *loop;
	struct ctl_server *ctl;
	int tasks_fd;			/* the tracer's task storage */
	int tickets_fd;			/* the tracer's ticket maps: argv of any size, */
	int tickets_small_fd;		/* ... and up to EG_TICKET_SMALL_ARGV_MAX bytes */
	uint32_t argv_cap;		/* the tracer's --max-argv-bytes: a ticket stores at most this */
	uint32_t host_mnt_ns;
	struct eg_policy *const *global;	/* the daemon's policy (it may be reloaded) */
	uint32_t host_pid_ns;
	const struct eg_loaders *loaders;	/* the host's dynamic loaders (util/loaders.h) */
	/* cgroup id -> path (trace/cgroups.h), used under the loop's lock; NULL: /proc/TID/cgroup */
	struct cgroup_cache *cgroups;
	struct eg_sessions_out out;
	int teller_fd;			/* from sessions_teller_fork(), now the sessions'; -1: fork one then */
};

/*
 * The helper that writes a refused task's stderr line (tell.c), forked
 * while the caller is still small: its socket for sessions_new(), or -errno.
 */
int sessions_teller_fork(void);
int sessions_new(const struct eg_sessions_opts *o, struct eg_sessions **ret);
/*
 * Ends every session (their execs then fail, ENOSYS) and waits up to a
 * second for the receivers, which may still hold an answer to send: done
 * while the tracer's programs are attached, so that no exec a session
 * allowed runs without the kernel's ticket check. The daemon's stop calls
 * it first; sessions_free() does the rest.
 */
void sessions_end_all(struct eg_sessions *s);
/*
 * false: a session's thread is still inside a file system lookup and holds
 * on to s and the loop (its lock): both are left for the process's exit.
 */
bool sessions_free(struct eg_sessions *s);

/*
 * What a supervisor said about an exec, for the tracer's record of it
 * (one record per exec: the record carries the session's verdict). Fills a
 * and returns true when a verdict for (tid, session) is waiting; the strings
 * live until the next call. held: records of execs may be held back (a
 * loader's, hold.c), read after later ones: their verdicts are kept.
 */
struct eg_event;
bool sessions_annotate(struct eg_sessions *s, const struct eg_event *h, struct eg_annotation *a, bool held);

/* Counters for status and metrics. */
struct eg_sessions_stats {
	uint64_t sessions_started, sessions_active;
	uint64_t execs, allowed, denied, approvals, approved, approval_denied, timed_out,
		 cancelled, errors;
	uint64_t lookup_timeouts;	/* execs refused: reading or looking up took too long */
	uint64_t lookups_waiting;	/* execs in a worker or waiting for one now */
	uint64_t sync_wakeups;		/* listeners put in synchronous-wakeup mode (Linux 6.6) */
	uint64_t receivers;		/* listeners a thread of their own serves now */
	uint64_t receiver_stalls;	/* times the loop took a listener over from its stuck thread */
	uint64_t pending;		/* approvals waiting now */
	uint64_t access_denied;		/* accesses the sessions' Landlock layers refused (audit) */
	/* the supervisor's time per exec, receipt to answer (approvals left out) */
	uint64_t latency_count;
	uint64_t latency_p50_us, latency_p99_us, latency_max_us;
};
void sessions_stats(const struct eg_sessions *s, struct eg_sessions_stats *ret);
/*
 * The boundary sessions get, for status: the kernel's Landlock ABI, what
 * every session's domain holds, what the daemon's policy adds (or why a
 * session would be refused), and whether refusals are counted.
 */
void sessions_boundary_status(const struct eg_sessions *s, struct jsonw *w);

/* Handing over to the next daemon (a re-exec): see session/session.c. */
struct jsonw;
int sessions_export(struct eg_sessions *s, struct jsonw *w, int *fds, int *nfds, int max);
int sessions_import(struct eg_sessions *s, json_t *arr);
/* After a failed handover: answer the listeners again. */
void sessions_resume(struct eg_sessions *s);

/*
 * The session the peer of control connection c runs in, by the kernel's
 * task storage (0: none). -errno when that cannot be told (the process
 * that connected has exited, a lookup failed): callers refuse, as they
 * refuse a process inside a session.
 */
struct ctl_conn;
int sessions_of_peer(const struct eg_sessions *s, const struct ctl_conn *c, uint32_t *ret_session);
/* Whether c's process is inside a session; one that cannot be placed (gone) counts as inside. */
bool sessions_peer_inside(const struct eg_sessions *s, const struct ctl_conn *c);
/* The outermost session of session id (itself when it has no parent, or is not known). */
uint32_t sessions_outermost(struct eg_sessions *s, uint32_t id);

#endif
