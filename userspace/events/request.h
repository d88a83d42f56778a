/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * An exec a supervisor holds (a session's trapped execve): the fields the
 * records about it share (a refusal's exec_failed, an approval, a listing
 * of approvals), each written here once.
 */
#ifndef EG_EVENTS_REQUEST_H
#define EG_EVENTS_REQUEST_H

#include <stdbool.h>
#include <stdint.h>
#include "events/format.h"
#include "util/jsonw.h"
#include "util/sbuf.h"

struct eg_request_view {
	int pid, tid;
	uint32_t euid;
	bool execveat;
	const char *filename;		/* the file that runs, resolved (the script, for a script) */
	const char *path_requested;	/* as the caller spelled it */
	const char *interpreter;	/* NULL: not a script */
	const char *interpreter_requested;
	char *const *argv;
	unsigned int argc;
	/* a listing's shortened copy: this many of argv are written (argc stays the whole's count) */
	bool argv_listed_set;
	unsigned int argv_listed;
	bool truncated;
	int depth;			/* the host's */
	bool depth_known;
	int session_depth;
	uint32_t session;
	const char *cgroup;		/* NULL: not known */
};

/* "pid" ... "cgroup": the request's facts, into an object w has open. */
void format_request_fields(struct jsonw *w, const struct eg_request_view *v);

/*
 * The exec_failed record of an exec the supervisor refused before the
 * kernel ran it (exec_id null): the request's facts, the errno, the
 * verdict's fields as the kernel's records write them, the approval that
 * refused it (NULL: none). Ends with a newline.
 */
void format_refused_json(struct sbuf *b, const struct eg_request_view *v, int err,
			 const struct eg_annotation *a, const char *approval_id);

#endif
