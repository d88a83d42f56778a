/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside daemon-run processes (procs.h): the registry's entries and what
 * the files of procs/ share. Nothing outside procs/ includes this.
 *
 * The files stand on each other, each calling only those below it:
 *   procs.c      setup and teardown, on top
 *   ops.c        ps, poll, log, write, send_keys, kill, wait (and registers run)
 *   handoff.c    the registry to the next daemon and back (SIGUSR2)
 *   run.c        the run op: a request checked, its environment, entry and fds
 *   spawn.c      the child: the caller's limits, fork, setup, exec, its failure report
 *   lifecycle.c  a run's end: its exit, its timeout, its caller gone
 *   shells.c     the shell states of stateful runs
 *   logs.c       a background run's output into its log (plog.c), old logs
 *   registry.c   entries, their rights and status, environment vectors
 * The loop's callbacks (proc_on_exit, proc_on_out, ...) are handed to the
 * loop by the files above them, never called from below.
 */
#ifndef EG_PROCS_INTERNAL_H
#define EG_PROCS_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "execgate.h"
#include "loop/loop.h"
#include "procs/plog.h"
#include "procs/procs.h"
#include "procs/runcg.h"
#include "util/jsonw.h"
#include "util/sbuf.h"
#include "util/strv.h"

struct ctl_conn;
struct ctl_peer;

#define STATES_MAX	128
#define STATES_PER_UID	16		/* a user's share of them (root's: all) */
#define ENV_MAX		1024		/* variables in a run's environment */

struct shstate {
	bool used, busy;
	uid_t uid;
	gid_t gid;
	char name[64];
	char **env;
	size_t n;
	char cwd[PATH_MAX];
	char oldpwd[PATH_MAX];
	/* the word workspace for its commands, with no daemon --workspace: its first command's directory */
	char ws[PATH_MAX];
	char **dirs;
	size_t nd;
	int last;
	uint64_t used_ms;
};

struct proc {
	bool used;
	struct eg_procs *owner;
	char id[24];
	pid_t pid;
	int pidfd;
	struct eg_watch *pw;
	uid_t uid;
	char session[64];
	char *cmd;			/* for listings */
	bool background, pty;
	int in_fd, out_fd;		/* stdin pipe / pty master; output pipe / pty master */
	struct eg_watch *ow;
	struct eg_plog log;		/* background runs; else log.path is "" */
	uint64_t poll_off;		/* a stream offset (plog.h) */
	uint64_t deadline_ms;		/* the timeout's, or 0 */
	struct eg_watch *timer;
	bool timed_out;
	struct ctl_conn *fg;
	int state_fd;
	struct eg_watch *sw;
	struct sbuf state;
	bool state_bad;
	char state_warn[256];		/* what the state did not keep, for the caller */
	struct shstate *st;
	bool exited;
	int ws;
	uint64_t start_ms, end_ms;
	struct eg_run_cg cg;		/* its cgroup (runcg.h); paths "" when it has none */
};

struct eg_procs {
	struct eg_procs_opts o;
	char dir[PATH_MAX];
	int ws_fd;			/* --workspace, O_PATH */
	struct eg_runcg *cg;		/* where runs' cgroups go */
	char ws_path[PATH_MAX];		/* its real path */
	unsigned int seq;
	struct proc p[PROCS_MAX];
	struct shstate st[STATES_MAX];
};

/* ---- registry.c ---------------------------------------------------------- */

/* Sets NAME=VALUE in v (replacing NAME). */
int procs_strv_set(char ***v, size_t *n, const char *kv);
/* Whether what the run started still runs (its first process, cgroup or process group). */
bool proc_alive(const struct proc *p);
/* sig to everything the run started: its cgroup, and its process group. 0 if anything got it. */
int proc_signal(struct proc *p, int sig);
/* Whether the peer of c may see and drive p: root, or p's own user. */
bool proc_may(const struct ctl_conn *c, const struct proc *p);
/* open(2) with uid's and gid's rights (setfsuid: this thread only). */
int procs_open_as(uid_t uid, gid_t gid, const char *path, int flags);
/* "running", "exited N", "killed by SIGX" */
void proc_status_text(const struct proc *p, char *buf, size_t len);
/* status, state, exit_code, signal and timed_out fields */
void proc_status_json(struct jsonw *w, const struct proc *p);
/* Frees p's resources and its slot (its log file too). */
void proc_release(struct proc *p);
/* A registry entry for uid, or NULL with -ENOSPC or -EUSERS in *ret_err. */
struct proc *proc_slot(struct eg_procs *ps, uid_t uid, int *ret_err);
/* The entry a request's "id" names, if c may drive it; else NULL, and the error is sent. */
struct proc *proc_find(struct eg_procs *ps, struct ctl_conn *c, const json_t *req);

/* ---- logs.c -------------------------------------------------------------- */

void proc_out_close(struct proc *p);
/* Reads what is there (at most rounds x 64 KiB); false at end of file. */
bool proc_out_drain(struct proc *p, int rounds);
void proc_on_out(struct eg_watch *w, int fd, uint32_t events, void *arg);
/* log_bytes, log_dropped, log_failed */
void proc_log_counts_json(struct jsonw *w, const struct proc *p);
/* The last lines of the log (at most 20 lines, 4 KiB), as a JSON array. */
void proc_last_lines_json(struct jsonw *w, struct proc *p);
/* Removes logs older than a week that no entry holds. */
void procs_clean_old_logs(const struct eg_procs *ps);

/* ---- shells.c ------------------------------------------------------------ */

void shstate_drop(struct shstate *s);
/* uid's state called name; with create, a new one if there is room. NULL: none. */
struct shstate *shstate_get(struct eg_procs *ps, uid_t uid, const char *name, bool create);
void proc_state_close(struct proc *p);
void proc_on_state(struct eg_watch *w, int fd, uint32_t events, void *arg);
/* The command's shell has exited with wait status ws: what it sent becomes its state's. */
void proc_state_end(struct proc *p, int ws);

/* ---- lifecycle.c --------------------------------------------------------- */

/* What a foreground caller (or a `wait`) reads last. */
void proc_send_exit_line(struct ctl_conn *c, const struct proc *p);
void proc_on_exit(struct eg_watch *w, int fd, uint32_t events, void *arg);
void proc_on_timeout(struct eg_watch *w, uint64_t exp, void *arg);
void proc_on_fg_close(struct ctl_conn *c, void *arg);

/* ---- spawn.c ------------------------------------------------------------- */

struct spawn {
	char **argv;
	char **env;
	int cwd_fd;			/* the directory the daemon checked (--workspace) */
	const char *cwd;		/* entered by its path, as the user, */
	dev_t cwd_dev;			/* and it must be the directory the daemon checked */
	ino_t cwd_ino;
	int err_fd;			/* the write end of the failure report's pipe */
	int fd0, fd1, fd2;		/* the child's stdio */
	int ctty;			/* -1, or the pty's slave to make the controlling terminal */
	int state_fd;			/* -1, or the child's end of the state socket */
	uid_t uid;
	gid_t gid;
	int64_t nproc, nproc_max;	/* the caller's limits; -1 unlimited */
	const struct eg_run_cg *cg;	/* the run's cgroup, joined first */
	int tasks_fd;			/* > 0: the tracer's task storage; the run takes the caller's lineage */
	bool have_caller;		/* caller: the caller's storage (else the run's depth is unknown) */
	struct eg_task caller;
};

/* pids.max of a run's cgroup from the caller's RLIMIT_NPROC. */
uint64_t procs_pids_max(int64_t soft, int64_t hard);
/*
 * The caller's RLIMIT_NPROC, from the kernel (-1: unlimited), and its task
 * storage in tasks_fd (*ret_have_task false: none); -errno when they cannot
 * be read.
 */
int procs_caller_nproc(const struct ctl_conn *c, int tasks_fd, int64_t *soft, int64_t *hard,
		       struct eg_task *ret_task, bool *ret_have_task);
/* fork(): the child sets itself up as s says and execs; -1 when fork fails. */
pid_t proc_spawn(const struct spawn *s);
/* 0 once the child runs (or is on its way), else -errno with the reason in err. */
int proc_spawn_wait(const struct spawn *s, int rfd, pid_t pid, char *err, size_t errlen);

/* ---- run.c, ops.c, handoff.c --------------------------------------------- */

int procs_op_run(struct ctl_conn *c, const json_t *req, void *arg);
/* Registers the ops on the control socket. */
int procs_ops_register(struct eg_procs *ps);
/* Takes over what procs_export() of the previous daemon wrote; -errno when some did not come. */
int procs_import(struct eg_procs *ps, const json_t *o);

#endif
