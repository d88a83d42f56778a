/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The bash wrapper that carries a shell's state from one command to the
 * next, for `execgate shell` and `execgate run --stateful` alike
 * (docs/agents.md, "Shell state across commands"): run as
 *   bash --norc --noprofile -c EG_STATE_WRAPPER execgate-shell COMMAND STATUS
 * with a channel at fd EG_STATE_FD, it restores OLDPWD and the pushd stack
 * (__EG_OLDPWD, __EG_DIRS in its environment), sets $? to STATUS, runs
 * COMMAND with the channel closed, and writes the exported variables,
 * NUL-delimited, with the printf builtin (the writer is the shell itself),
 * then __EG_PWD, __EG_OLDPWD and each __EG_DIR.
 */
#ifndef EG_PROCS_WRAPPER_H
#define EG_PROCS_WRAPPER_H

#define EG_STATE_FD	63

extern const char eg_state_wrapper[];

#endif
