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

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>

#define EG_STATE_FD	63

extern const char eg_state_wrapper[];

/* What the wrapper wrote, read back: the variables that carry over, PWD, OLDPWD and the pushd stack. */
struct eg_state_out {
	char **env;			/* NULL-terminated, n of them */
	size_t n;
	char **dirs;			/* the same, nd */
	size_t nd;
	char pwd[PATH_MAX];		/* "" when it did not say */
	char oldpwd[PATH_MAX];
};

/*
 * Parses the wrapper's NUL-delimited output. Left out: the variables a
 * shell state never carries (eg_env_blocked, the wrapper's own __EG_*,
 * "_", PWD and OLDPWD, which come as __EG_PWD and __EG_OLDPWD), and the
 * ones the next exec could not take (E2BIG: longer than MAX_ARG_STRLEN, or
 * past 1 MiB in all), each of these named to dropped(arg, kv, len, why)
 * so the next command can still start. A cut last record is dropped.
 * -ENOMEM (out freed).
 */
int eg_state_parse(const char *buf, size_t len, struct eg_state_out *out,
		   void (*dropped)(void *arg, const char *kv, size_t len, const char *why), void *arg);
void eg_state_out_free(struct eg_state_out *out);
/* Whether a shell state carries NAME=VALUE over (the parser's first rule). */
bool eg_state_carries(const char *kv);

#endif
