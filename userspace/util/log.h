/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Messages for people. Library code returns -errno and does not print; the
 * command that understands the failure prints one line with p_err().
 */
#ifndef EG_LOG_H
#define EG_LOG_H

#include <stdbool.h>

extern const char *eg_verb;	/* "daemon", "policy check": every message starts "execgate VERB: " */
extern bool eg_verbose;		/* -v: libbpf debug output and p_dbg() */
extern bool eg_json_errors;	/* --json: p_err() prints {"error": ...} */

void p_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void p_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Route libbpf's messages: warnings always, debug output with -v. */
void eg_libbpf_setup(void);

#endif
