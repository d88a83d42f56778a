/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Changes to running tasks' storage, made in the kernel (bpf/seed.bpf.c). */
#ifndef EG_TRACE_SEED_H
#define EG_TRACE_SEED_H

#include <stddef.h>
#include <sys/types.h>
#include "execgate.h"

struct task_seed {
	pid_t tid;		/* the thread whose storage changes (a process: its leader) */
	struct eg_seed s;	/* op and values in; s.result out (0: no such task) */
};

/*
 * Makes each change of v in tasks_fd ("tasks") with one run of the
 * iterator: only the fields asked are written, nothing the task's own
 * programs wrote is put back. 0 (each v[i].s.result says what came of
 * it), or -errno when the kernel refused the iterator (nothing changed).
 */
int tasks_seed_apply(int tasks_fd, struct task_seed *v, size_t n);

#endif
