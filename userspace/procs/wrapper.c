// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The stateful bash wrapper (procs/wrapper.h). */
#include "procs/wrapper.h"

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
