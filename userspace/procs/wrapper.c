// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The stateful bash wrapper (procs/wrapper.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procs/text.h"
#include "procs/wrapper.h"
#include "util/strv.h"

#define STATE_VAR_MAX	(32u * 4096 - 1)	/* MAX_ARG_STRLEN less the NUL: execve's E2BIG past it */
#define STATE_ENV_MAX	(1u << 20)		/* the carried variables in all (ARG_MAX is 2 MiB or less) */
#define STATE_VARS_MAX	1024			/* variables kept (a run's environment holds as many) */
#define STATE_DIRS_MAX	64			/* the pushd stack, entries kept (it goes as one variable) */
#define STATE_DIRS_BYTES	(64u << 10)		/* ... and bytes in all, under STATE_VAR_MAX */

/*
 * Whatever the command left of the shell's settings, the dump must still
 * see every name: IFS is put back to the default for the loop (the
 * command's own value is what is written for it, when it exported IFS),
 * builtins are called as such (a function named printf changes nothing),
 * and no here-string is used (bash may need a temporary file for one,
 * and a session's policy may forbid writing one).
 */
const char eg_state_wrapper[] =
	"__eg_dump() {\n"
	"  local __eg_v __eg_i __eg_ifs=\"$IFS\"\n"
	"  IFS=$' \\t\\n'\n"
	"  for __eg_v in $(builtin compgen -e); do\n"
	"    if [[ $__eg_v == IFS ]]; then builtin printf 'IFS=%s\\0' \"$__eg_ifs\"\n"
	"    else builtin printf '%s=%s\\0' \"$__eg_v\" \"${!__eg_v}\"; fi\n"
	"  done\n"
	"  builtin printf '__EG_PWD=%s\\0' \"$PWD\"\n"
	"  [[ -n ${OLDPWD+x} ]] && builtin printf '__EG_OLDPWD=%s\\0' \"$OLDPWD\"\n"
	"  for ((__eg_i=${#DIRSTACK[@]}-1; __eg_i>0; __eg_i--)); do\n"
	"    builtin printf '__EG_DIR=%s\\0' \"${DIRSTACK[__eg_i]}\"\n"
	"  done\n"
	"}\n"
	"[[ -n $__EG_OLDPWD ]] && OLDPWD=$__EG_OLDPWD\n"
	"if [[ -n $__EG_DIRS ]]; then\n"
	"  __eg_rest=$__EG_DIRS\n"
	"  [[ $__eg_rest == *$'\\n' ]] || __eg_rest+=$'\\n'\n"
	"  while [[ -n $__eg_rest ]]; do\n"
	"    __eg_d=${__eg_rest%%$'\\n'*}; __eg_rest=${__eg_rest#*$'\\n'}\n"
	"    [[ -n $__eg_d ]] && pushd -n \"$__eg_d\" >/dev/null 2>&1\n"
	"  done\n"
	"fi\n"
	"unset __EG_DIRS __eg_d __eg_rest\n"
	"__eg_rc() { return \"$1\"; }\n"
	"__eg_cmd=$1; __eg_prev=$2; shift 2\n"
	"unset __EG_OLDPWD\n"
	"__eg_rc \"$__eg_prev\"\n"
	"eval \"$__eg_cmd\" 63>&-\n"
	"__eg_status=$?\n"
	"__eg_dump >&63\n"
	"exit \"$__eg_status\"\n";

bool eg_state_carries(const char *kv)
{
	return strchr(kv, '=') && !eg_env_blocked(kv, true) && strncmp(kv, "__EG_", 5) &&
	       strncmp(kv, "_=", 2) && strncmp(kv, "PWD=", 4) && strncmp(kv, "OLDPWD=", 7);
}

void eg_state_out_free(struct eg_state_out *out)
{
	eg_argv_free(out->env, out->n);
	eg_argv_free(out->dirs, out->nd);
	memset(out, 0, sizeof(*out));
}

int eg_state_parse(const char *buf, size_t len, struct eg_state_out *out,
		   void (*dropped)(void *arg, const char *kv, size_t len, const char *why), void *arg)
{
	size_t off = 0, total = 0, dirs = 0;

	memset(out, 0, sizeof(*out));
	while (off < len) {
		const char *s = buf + off, *z = memchr(s, 0, len - off);
		size_t l;

		if (!z)
			break;		/* a cut record: dropped */
		l = z - s;
		off += l + 1;
		if (!strncmp(s, "__EG_PWD=", 9)) {
			snprintf(out->pwd, sizeof(out->pwd), "%s", s + 9);
		} else if (!strncmp(s, "__EG_OLDPWD=", 12)) {
			snprintf(out->oldpwd, sizeof(out->oldpwd), "%s", s + 12);
		} else if (!strncmp(s, "__EG_DIR=", 9)) {
			/*
			 * the stack goes to the next command in one variable: one
			 * pushd a command, never popped, made it longer than an exec
			 * takes (E2BIG), and every command after failed
			 */
			if (out->nd >= STATE_DIRS_MAX || dirs + l > STATE_DIRS_BYTES) {
				if (dropped)
					dropped(arg, s, l, "past the directory stack's bound (64 entries, 64 KiB)");
				continue;
			}
			if (eg_argv_add(&out->dirs, &out->nd, s + 9, l - 9))
				goto fail;
			dirs += l;
		} else if (eg_state_carries(s)) {
			/* one the next exec cannot take would fail every command after it */
			if (l > STATE_VAR_MAX || total + l + 1 > STATE_ENV_MAX || out->n >= STATE_VARS_MAX) {
				if (dropped)
					dropped(arg, s, l, l > STATE_VAR_MAX ? "longer than one variable of an exec can be (128 KiB)"
							: out->n >= STATE_VARS_MAX ? "more than 1,024 variables"
							: "the environment would pass 1 MiB");
				continue;
			}
			if (eg_argv_add(&out->env, &out->n, s, l))
				goto fail;
			total += l + 1;
		}
	}
	return 0;
fail:
	eg_state_out_free(out);
	return -ENOMEM;
}
