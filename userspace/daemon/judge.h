/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The policy's verdict on an exec record: every program that runs is
 * judged (a script by its own path with the argv its caller passed, its
 * interpreter with the argv the kernel gave it) and the strongest verdict
 * stands. One budget covers the whole exec.
 */
#ifndef EG_JUDGE_H
#define EG_JUDGE_H

#include <stdint.h>
#include "policy/policy.h"
#include "trace/record.h"
#include "util/sbuf.h"

struct cgroup_cache;

/* Reusable buffers, so judging allocates only while records grow. */
struct eg_judge {
	const char **argvp;
	size_t argvp_cap;
	struct sbuf fname, req, sname, sreq, interp;
	uint32_t host_mnt_ns;
};

/*
 * Judges r under p. session: a supervisor decides (on_truncated and
 * on_error apply). Returns 0, or -ENOMEM (then *ret is an error verdict).
 */
int judge_record(struct eg_judge *j, const struct eg_policy *p, const struct eg_record *r,
		 const char *cgroup, bool session, struct eg_verdict *ret);
void judge_free(struct eg_judge *j);

#endif
