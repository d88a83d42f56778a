/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Task storage of an older layout carried into this version's (bpf/migrate.bpf.c). */
#ifndef EG_TRACE_MIGRATE_H
#define EG_TRACE_MIGRATE_H

#include <stdbool.h>
#include <stdint.h>

struct tasks_migrated {
	uint64_t copied;	/* entries written into the new map */
	uint64_t newer;		/* left: written by this version's programs since */
	uint64_t failed;	/* the kernel had no room */
};

/* Whether fd is a "tasks" map of the older layout (96-byte values). */
bool tasks_old_layout(int fd);
/*
 * Copies every task's entry of old_fd into new_fd (both task storage),
 * threads included, keeping what is newer in new_fd. 0 or -errno.
 */
int tasks_migrate(int old_fd, int new_fd, struct tasks_migrated *ret);

#endif
