/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The pure parts of daemon-run processes (no I/O beyond a given fd):
 * the environment blocklist, tmux-style key names for send-keys, and
 * finding the start of a log's last N lines by seeking from its end.
 */
#ifndef EG_PROCS_TEXT_H
#define EG_PROCS_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/sbuf.h"

/*
 * Whether NAME (or NAME=VALUE) makes a program load code it was not asked
 * to (the dynamic loader's, glibc's, the shells' and the interpreters'
 * variables: docs/agents.md lists them): never passed to a session's
 * command by `execgate exec`, `run` or `shell`.
 */
bool eg_env_injection(const char *name_or_kv);
/*
 * Whether NAME (or NAME=VALUE) must never reach a run's environment: the
 * injection variables above and secrets. With shell_state, also what a
 * carried shell state drops (CDPATH, EDITOR, VISUAL, PAGER, GIT_PAGER,
 * MANPAGER).
 */
bool eg_env_blocked(const char *name_or_kv, bool shell_state);
/* Each pattern of those lists (fnmatch globs on upper-case names), for docs and tests. */
void eg_env_list(void (*fn)(void *arg, const char *pattern, bool secret), void *arg);

/*
 * Appends the bytes of one send-keys word to b: a named key (Enter, Tab,
 * Escape, Space, BSpace, Up, Down, Left, Right, Home, End, PageUp,
 * PageDown, Delete, Insert, F1-F12), C-x (control), M-x (meta: ESC x), or
 * else the word as literal text. Returns true when it was a named key.
 */
bool eg_key_encode(const char *word, struct sbuf *b);

/*
 * The offset where the last n lines of fd (size bytes) start, reading
 * backwards in blocks and at most max_scan bytes (then the offset reached).
 * A final line without '\n' counts as a line. -errno on a read error.
 */
int64_t eg_log_tail_offset(int fd, uint64_t size, unsigned int n, uint64_t max_scan);

/* The same over any reader (-errno or bytes read at off) and the bytes [start, end). */
typedef ssize_t (*eg_pread_fn)(void *arg, void *buf, size_t n, uint64_t off);
int64_t eg_tail_offset(eg_pread_fn rd, void *arg, uint64_t start, uint64_t end, unsigned int n,
		       uint64_t max_scan);

/* A signal by name (TERM, SIGTERM, term) or number (9, SIG34); -1 when unknown. */
int eg_signal_parse(const char *s);
/* SIGTERM for 15; "SIG34" for one without a name. */
const char *eg_signal_name(int sig, char *buf, size_t len);

#endif
