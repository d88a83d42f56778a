/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A session's boundary: the Landlock layers its processes live in. The
 * daemon plans them when a session opens, from the kernel's Landlock ABI
 * and the policies (its own and the session's filesystem: and network:
 * sections), and refuses the session when a policy asks what the kernel
 * cannot hold, unless that policy says on_unsupported: allow. The
 * launcher enters the planned layers, in order, before it execs the
 * session's command: the first holds the boundary itself (no ptrace,
 * /proc/PID/mem, signals or abstract unix sockets out of the domain) and
 * the daemon's policy's rules, the second the session policy's. A session
 * started inside another enters its own on top: nested domains, never
 * weaker. docs/sessions.md, "The boundary".
 */
#ifndef EG_SESSION_BOUNDARY_H
#define EG_SESSION_BOUNDARY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include "policy/policy.h"
#include "util/jsonw.h"

/*
 * Writes the plan, an object for the session_open reply and the session's
 * start record: {"landlock_abi", "layers": [...], "in_force": [...],
 * "missing": "..."|null, "workspace"}. -EPERM, and why in err, when a
 * policy that does not allow it asks what the kernel cannot hold.
 * session_pol may be NULL; workspace is what the launcher said.
 */
int boundary_plan(struct jsonw *w, int abi, const struct eg_policy *daemon_pol,
		  const struct eg_policy *session_pol, const char *workspace, char *err, size_t errlen);

/*
 * The launcher: enters the layers of plan (the reply's "boundary"), the
 * word workspace in their paths meaning workspace. 0, or -errno with the
 * step in err: then the launcher must not exec the command.
 */
int boundary_enter(const json_t *plan, const char *workspace, char *err, size_t errlen);

/*
 * The execute lists of plan (boundary_plan's text), one array a layer
 * that has one, each entry as spelled and with its symlinks followed,
 * now: made when the session opens, as the launcher opens the same paths
 * for Landlock (one that is not there allows nothing). JSON text to
 * free, or NULL (no memory, a plan that does not parse).
 */
char *boundary_exec_lists(const char *plan);

/*
 * Whether the file at path (resolved, absolute) may run under every
 * layer's list of lists (boundary_exec_lists). The kernel checks them at
 * an exec only: a program the dynamic loader maps is never exec'd. No
 * file system is read. NULL lets nothing run.
 */
bool boundary_lists_let_run(const char *lists, const char *path);

/*
 * Whether a variable (NAME or NAME=VALUE) is on a policy's
 * environment.deny list (names and fnmatch globs, any case).
 */
bool boundary_env_denied(const struct eg_policy *p, const char *name_or_kv);

#endif
