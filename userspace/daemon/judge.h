/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The policy's verdict on an exec record: every program that runs is
 * judged and the strongest verdict stands. A '#!' script by its own path
 * with the argv its caller passed, each script between it and the
 * interpreter, the interpreter with the argv the kernel gave it; a dynamic
 * loader run as the command, and the program it was asked to run (the
 * file it really mapped, when the kernel reported it). One budget covers
 * the whole exec. Depth is the host's; rules scoped to cgroups judge the
 * depth in the container.
 */
#ifndef EG_JUDGE_H
#define EG_JUDGE_H

#include <stdint.h>
#include "events/format.h"
#include "policy/policy.h"
#include "trace/record.h"
#include "util/loaders.h"
#include "util/sbuf.h"

#define JUDGE_PROGRAMS_MAX	(EG_CHAIN_MAX + 3)

/* Reusable buffers, so judging allocates only while records grow. */
struct eg_judge {
	const char **argvp;
	size_t argvp_cap;
	struct sbuf fname, req, sname, sreq, interp, target, content;
	struct sbuf chain[EG_CHAIN_MAX];
	uint32_t host_mnt_ns;
	const struct eg_loaders *loaders;	/* NULL: none known */
	/* the last record's programs, one verdict each (for the event's "programs") */
	struct eg_program_verdict progs[JUDGE_PROGRAMS_MAX];
	unsigned int n_progs;
};

/*
 * Judges r under p. session: a supervisor decides (on_truncated and
 * on_error apply). Returns 0, or -ENOMEM (then *ret is an error verdict).
 * j->progs holds each program's verdict until the next call.
 */
int judge_record(struct eg_judge *j, const struct eg_policy *p, const struct eg_record *r,
		 const char *cgroup, bool session, struct eg_verdict *ret);
void judge_free(struct eg_judge *j);

#endif
