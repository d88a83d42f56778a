/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What ran before the daemon: depths and agent contexts read from /proc into task storage. */
#ifndef EG_RUNNING_H
#define EG_RUNNING_H

#include "policy/policy.h"

struct seed_stats {
	unsigned int scanned;		/* processes read */
	unsigned int inferred;		/* given an inferred depth (the kernel knew nothing of them) */
	unsigned int contexts;		/* put in an agent context */
	unsigned int failed;		/* storage the kernel refused */
};

/*
 * Walks /proc (again while a walk puts processes in a context: what they
 * forked meanwhile); map_fd is the "tasks" task storage. p: the policy
 * whose contexts' identities are looked for (NULL: depths only).
 */
int tasks_seed(int map_fd, const struct eg_policy *p, struct seed_stats *ret);

#endif
