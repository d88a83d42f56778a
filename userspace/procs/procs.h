/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Daemon-run processes (`execgate run`, docs/agents.md): the daemon starts
 * a command inside a supervised session on a requester's behalf and keeps a
 * registry of them (ps, poll, log, write, send-keys, kill over the control
 * socket). A process is the execgate binary itself as the session's
 * launcher (`execgate exec --session NAME -- CMD`), in a process group of
 * its own (setsid), with the requester's uid, a sanitized environment,
 * RLIMIT_NPROC and a working directory inside the daemon's --workspace.
 * Foreground runs write to the client's own stdio (passed with SCM_RIGHTS)
 * and report the exit status on the connection; background runs write to a
 * log under --state-dir that keeps their latest output (plog.h: 16 to 32
 * MiB, the oldest dropped and counted), and their exit is an event in the
 * daemon's output. Stateful runs carry a shell state (cwd, exports, $?)
 * per (uid, session name) from one run to the next.
 */
#ifndef EG_PROCS_H
#define EG_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "loop/loop.h"

struct ctl_server;
struct ctl_conn;
struct eg_procs;

#define PROCS_MAX		256		/* registry entries */
#define PROCS_PER_UID		32		/* a user's share of them (root's: all) */
#define PROCS_LOG_MAX		(16u << 20)	/* a log file's size before it rotates (plog.h) */
#define PROCS_NPROC_DEFAULT	512
#define PROCS_TIMEOUT_MS	30000		/* foreground default */
#define PROCS_PIDS_MAX		8192		/* pids.max of a run at most (its RLIMIT_NPROC if lower) */

struct eg_procs_opts {
	struct eg_loop *loop;
	struct ctl_server *ctl;
	const char *self;		/* the execgate binary */
	const char *pin;		/* the daemon's pin path, for the launcher's -p */
	const char *state_dir;		/* logs under STATE_DIR/procs */
	const char *workspace;		/* NULL: no bound on --cwd */
	int tasks_fd;			/* the tracer's task storage (0: none): a run goes on from its caller's depth */
	/*
	 * whether the peer of c is inside a supervised session, or cannot be
	 * told to be outside one (such peers may not start or drive processes)
	 */
	bool (*in_session)(void *arg, const struct ctl_conn *c);
	/* whether the daemon's policy denies a variable (environment.deny); NULL: none does */
	bool (*env_denied)(void *arg, const char *name_or_kv);
	/* one complete JSON line (with '\n'), and a short text for a terminal */
	void (*emit)(void *arg, const char *json, size_t len, const char *text);
	void *arg;
	/* NULL; else what the previous daemon's procs_export() wrote (a SIGUSR2 re-exec) */
	const json_t *handover;
};

/* Registers the ops (run, ps, poll, log, write, send_keys, kill, wait); takes over o->handover's processes. */
int procs_new(const struct eg_procs_opts *o, struct eg_procs **ret);
/* Kills what still runs (its process group) and frees the registry. */
void procs_free(struct eg_procs *p);

/*
 * Handing the registry and the shell states to the next daemon: a JSON
 * object for eg_procs_opts.handover, and the fds it names added to fds
 * (at most max in all). The processes run on meanwhile.
 */
struct jsonw;
int procs_export(struct eg_procs *p, struct jsonw *w, int *fds, int *nfds, int max);
/*
 * A copy of the pty master of run id (uid's own; 0: anyone's), for a
 * caller that resizes it (the HTTP API's terminals); -ESRCH, -ENOTTY.
 */
int procs_pty_fd(struct eg_procs *p, const char *id, uid_t uid);
/* Where runs' cgroups go, for status (procs/runcg.h). */
void procs_status(const struct eg_procs *p, struct jsonw *w);

#endif
