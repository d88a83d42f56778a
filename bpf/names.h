/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Names of programs the kernel and userspace both know by their resolved
 * file's name: shells (a context's max_consecutive_shells) and
 * interpreters (a context's identity may be their script).
 */
#ifndef EG_NAMES_H
#define EG_NAMES_H

/* Images that count as shells in a row (max_consecutive_shells), by the resolved file's name. */
#define EG_SHELL_NAMES		"sh", "dash", "bash", "rbash", "zsh", "ksh", "ksh93", "mksh", "lksh", "pdksh", \
				"ash", "yash", "fish", "csh", "tcsh", "posh", "elvish", "nu", "xonsh"
/* Interpreters whose first argument that is not an option, an absolute path, is the script a context's identity may name. */
#define EG_INTERP_NAMES		"node", "nodejs", "bun", "deno", "python", "python2", "python3", \
				"python3.7", "python3.8", "python3.9", "python3.10", "python3.11", "python3.12", \
				"python3.13", "python3.14", "python3.15", "pypy", "pypy3", "perl", "ruby", "php", \
				"lua", "luajit", "Rscript", "java", "bash", "sh", "dash", "zsh"

#endif /* EG_NAMES_H */
