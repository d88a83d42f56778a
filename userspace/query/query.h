/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Reading the daemon's records back (`execgate query`, `policy generate`):
 * which files hold them (source.c), a filter that rejects most lines on
 * their raw bytes before any JSON parse (filter.c), the text view
 * (text.c) and the process tree (tree.c).
 */
#ifndef EG_QUERY_H
#define EG_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "util/sbuf.h"

#define QUERY_MAX_LIST	32	/* values of one repeatable filter */

struct query_filter {
	char since[32], until[32];	/* "2026-01-19T14:30:00.000000000Z", "" when unset */
	const char *types[QUERY_MAX_LIST];
	size_t n_types;
	int64_t uids[QUERY_MAX_LIST];
	size_t n_uids;
	const char *comm[QUERY_MAX_LIST];	/* fnmatch globs */
	size_t n_comm;
	const char *filename[QUERY_MAX_LIST];	/* fnmatch, '*' crosses '/' */
	size_t n_filename;
	const char *sessions[QUERY_MAX_LIST];
	size_t n_sessions;
	const char *containers[QUERY_MAX_LIST];	/* an id, a prefix of one (12+), or a name */
	size_t n_containers;
	const char *pods[QUERY_MAX_LIST];
	size_t n_pods;
	const char *contexts[QUERY_MAX_LIST];	/* agent contexts by name */
	size_t n_contexts;
	const char *decisions[QUERY_MAX_LIST];
	size_t n_decisions;
	const char *actions[QUERY_MAX_LIST];
	size_t n_actions;
	const char *rules[QUERY_MAX_LIST];
	size_t n_rules;
	int min_severity;		/* enum eg_severity, 0: none */
	/* compiled by query_filter_ready(): needles every passing line holds */
	struct { char s[160]; size_t n; } need[8][QUERY_MAX_LIST];
	size_t n_need_alt[8];		/* per group: a line must hold one of its needles */
	size_t n_need;
	bool needs_parse;		/* more than time: the survivors are parsed */
};

/*
 * "2026-01-19T14:30:00Z", "2026-01-19 14:30" (local), "2026-01-19" (local
 * midnight), "1h", "30m", "2d", "45s", "1w" (ago), "today", "yesterday"
 * (local midnight), "now" -> the record time string it compares with.
 * -EINVAL when it is none of them.
 */
int query_parse_time(const char *s, uint64_t now_real_ns, char ret[32]);
/* After the fields are set: the raw-byte needles. */
void query_filter_ready(struct query_filter *f);
/* The cheap test on a line's bytes: false means the line cannot match. */
bool query_prefilter(const struct query_filter *f, const char *line, size_t len);
/* The whole test on a parsed record. */
bool query_match(const struct query_filter *f, const json_t *r);

/* The record's "time" value (30 bytes), or NULL. */
const char *query_line_time(const char *line, size_t len);
/*
 * Whether a line is one whole JSON object by its bytes alone (no parse):
 * past JSON's whitespace at either end (a CRLF file's '\r'), it opens with
 * '{', its brackets, outside strings, close first at its last byte, and no other record starts in it ({"v":, which JSON's escaping
 * keeps out of strings). A line cut by a daemon killed mid-write fails (a
 * proper prefix of an object never closes it), and so does a record glued
 * to a cut line; the rest of the grammar is the parser's, where lines are
 * parsed.
 */
bool query_line_whole(const char *line, size_t len);

/*
 * The files a query reads, each opened when it is listed: a query reads
 * them as they were when it started, whatever a rotation, a compression or
 * logrotate renames meanwhile. Past the fd budget (the soft RLIMIT_NOFILE,
 * raised up to the hard one for them) the oldest are opened by name at
 * their turn, and must then be the file listed: the same device and inode,
 * looked for under the other names of its directory when a rename moved
 * it, or a .gz of it (a compression: the same first record); else the
 * file is not read, and says so. error: why the last scan could not read a
 * file whole (it was skipped, or its rest: a corrupt gzip file), for the
 * caller to say.
 */
struct query_file {
	char *path;			/* where it was read last (a rename found it elsewhere) */
	int fd;				/* -1: opened by its name at its turn */
	dev_t dev;			/* fd -1: the file listed; ino 0 if unknown */
	ino_t ino;
	char first[32];			/* fd -1: its first record's time when listed, "" if none */
	char *error;
};
struct query_files {
	struct query_file *v;
	size_t n;
};
/*
 * The files of a daemon's output: path and its rotated copies (path.*.gz,
 * path.N, path.N.gz), oldest first (by their first record's time), listed
 * again when the directory changed meanwhile. -errno.
 */
int query_output_files(const char *path, struct query_files **ret);
/*
 * FILE operands, in their order, each opened now; err says which cannot be.
 * Past the fd budget the first ones are opened again by name at their turn.
 */
int query_open_files(char *const *paths, size_t n, struct query_files **ret, char *err, size_t errlen);
void query_files_free(struct query_files *f);
/* How many files the last scan could not read whole (their error is set). */
size_t query_files_unread(const struct query_files *f);
/*
 * The output file of the daemon of pin_path: asked over its control
 * socket, else from the record it left in /run/execgate (NAME.output).
 * err gets one line on failure.
 */
int query_daemon_output(const char *pin_path, char *buf, size_t len, char *err, size_t errlen);

/*
 * Calls fn for every line of the files in order (plain or gzip), from their
 * start; fn returns non-zero to stop. A file that cannot be read whole is
 * skipped with its error set, and the others are read; -ENOMEM (err says
 * so) is the only failure.
 */
typedef int (*query_line_fn)(const char *line, size_t len, void *arg);
int query_scan(struct query_files *files, query_line_fn fn, void *arg, char *err, size_t errlen);

/* Text view: one line per record, cut at width columns (0: no limit). */
void query_text(struct sbuf *b, const json_t *r, unsigned int width);

/* The tree of an exec or session (tree.c): records in, the picture out. */
struct query_tree;
struct query_tree *query_tree_new(void);
void query_tree_free(struct query_tree *t);
void query_tree_add(struct query_tree *t, const json_t *r);
/* root: an exec_id or a session id; color: ANSI marks for denied and killed. -ENOENT if unseen. */
int query_tree_print(struct query_tree *t, const char *root, struct sbuf *b, unsigned int width, bool color);

/*
 * The tree's two passes over a large log: an index of every exec from the
 * raw bytes (no parse), the tree's execs chosen in it, and only their
 * records (execs, exits, refusals) parsed and added to a query_tree.
 */
struct query_tree_index;
struct query_tree_index *query_tree_index_new(void);
void query_tree_index_free(struct query_tree_index *ix);
void query_tree_index_line(struct query_tree_index *ix, const char *line, size_t len);
/* -ENOENT: root (an exec_id or s-SESSION) is not among the execs read */
int query_tree_index_select(struct query_tree_index *ix, const char *root);
bool query_tree_index_wants(const struct query_tree_index *ix, const char *line, size_t len);

#endif
