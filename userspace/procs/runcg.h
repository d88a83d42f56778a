/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A cgroup per run (`execgate run`), so that a run ends whole: its timeout
 * and `execgate kill` reach every process it started, also one that left
 * the process group with setsid, and pids.max bounds how many it may have
 * (root runs too, which RLIMIT_NPROC does not). Each run's cgroup v2 is
 * BASE/execgate-runs/ID, BASE being the daemon's own cgroup (or its parent
 * when the daemon moved itself to a leaf, BASE/execgate-daemon, to enable
 * the pids controller below BASE: systemd's Delegate=yes). cgroup v2 is
 * /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host; where the
 * pids controller is not in the v2 tree (hybrid) but on a v1 hierarchy,
 * the run gets a v1 pids cgroup beside it. Everything here runs in the
 * daemon's loop but runcg_join(), which the run's child calls after fork.
 */
#ifndef EG_PROCS_RUNCG_H
#define EG_PROCS_RUNCG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "util/jsonw.h"

struct eg_runcg;

/* One run's cgroups: paths "" when not made. */
struct eg_run_cg {
	char v2[PATH_MAX];
	unsigned int v2_root;		/* v2 + v2_root: its path from the root of the hierarchy */
	char v1_pids[PATH_MAX];
	int procs_fd, v1_procs_fd;	/* their cgroup.procs, open for the child to join; -1 */
};

/* Finds where runs' cgroups go; never fails for lack of cgroups (runcg_status says). -ENOMEM. */
int runcg_open(struct eg_runcg **ret);
void runcg_free(struct eg_runcg *cg);
/* Whether runs get a cgroup here (then one that cannot be made refuses the run). */
bool runcg_available(const struct eg_runcg *cg);
/* {"cgroup": BASE/execgate-runs or null, "pids_max": "v2"|"v1"|null, "why": ...} */
void runcg_status(const struct eg_runcg *cg, struct jsonw *w);

/*
 * Makes run id's cgroups, pids.max set to pids_max (0: not set), their
 * cgroup.procs open in ret. 0, or -errno with what failed in err.
 */
int runcg_make(struct eg_runcg *cg, const char *id, uint64_t pids_max, struct eg_run_cg *ret, char *err,
	       size_t errlen);
/* In the run's child, before it changes its uid: joins them. 0 or -errno (async-signal-safe). */
int runcg_join(const struct eg_run_cg *rc);
/* The daemon's copies of the fds, once the child has joined or gone. */
void runcg_close_fds(struct eg_run_cg *rc);
/* 1 while a process is in the run's cgroup, 0 when none is, -errno when it cannot be told. */
int runcg_populated(const struct eg_run_cg *rc);
/*
 * sig to every process in the run's cgroup (SIGKILL through cgroup.kill,
 * Linux 5.14, which no process escapes, not even one forking meanwhile);
 * 0 when one was signalled, -ESRCH when none is left.
 */
int runcg_signal(const struct eg_run_cg *rc, int sig);
/* Removes them (empty ones: a process still in one keeps it). */
void runcg_remove(struct eg_run_cg *rc);

#endif
