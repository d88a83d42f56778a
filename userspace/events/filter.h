/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Volume control for a host-wide agent: which records the daemon leaves
 * out of its output (--uid, --exclude-comm, --exclude-path). Filters are
 * about logging only: they run in userspace after the ring buffer, every
 * exec is still traced, judged and enforced, and what a filter leaves out
 * is counted by cause. A record the daemon must show (an exec that was
 * killed, or one the policy denies or asks about) is never filtered.
 */
#ifndef EG_FILTER_H
#define EG_FILTER_H

#include <stddef.h>
#include <stdint.h>
#include "trace/record.h"
#include "util/sbuf.h"

enum eg_filter_cause {
	EG_FILTER_NONE = -1,
	EG_FILTER_UID = 0,		/* not one of the --uid values */
	EG_FILTER_COMM,			/* --exclude-comm */
	EG_FILTER_PATH,			/* --exclude-path */
	EG_FILTER__COUNT,
};

struct eg_filter {
	const uint32_t *uids;		/* keep only these real uids (n_uids 0: all) */
	size_t n_uids;
	const char *const *comm;	/* fnmatch globs on comm */
	size_t n_comm;
	const char *const *path;	/* fnmatch globs ('*' crosses '/') on the program's path */
	size_t n_path;
	uint64_t n[EG_FILTER__COUNT];	/* records left out, by cause */
	struct sbuf tmp;
};

/* Whether any filter is set. */
bool filter_active(const struct eg_filter *f);
/*
 * The cause that leaves r out, or EG_FILTER_NONE. The path is the one an
 * event's "filename" shows: the program (a script's own file for a
 * script), and for a failed exec the path as the caller passed it. The
 * caller counts what it really leaves out in n[].
 */
enum eg_filter_cause filter_match(struct eg_filter *f, const struct eg_record *r);
const char *filter_cause_name(enum eg_filter_cause c);	/* "uid", "comm", "path" */
uint64_t filter_total(const struct eg_filter *f);
void filter_free(struct eg_filter *f);

#endif
