/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * One daemon per pin directory. The daemon takes an exclusive flock on the
 * pin directory itself (so every spelling of it is one lock, and two
 * different directories are two), and writes its pid to the pid file named
 * after it. A lock dies with its process: a pid file left by a killed
 * daemon is stale and simply overwritten.
 */
#ifndef EG_INSTANCE_H
#define EG_INSTANCE_H

#include <sys/types.h>
#include "util/paths.h"

struct eg_instance {
	int dir_fd;			/* the locked pin directory */
	int pid_fd;
	char pidfile[PATH_MAX];
	char pin[PATH_MAX];
};

/*
 * Creates the pin directory if needed (its parent must be on a bpffs) and
 * locks it. -EBUSY with *ret_other (0 if unknown) when another daemon holds
 * it; -ENOTDIR when the parent is not on a bpffs.
 */
int instance_lock(const struct eg_paths *p, struct eg_instance *ret, pid_t *ret_other);
/* Unlocks; removes the pin directory if nothing is left pinned in it. */
void instance_unlock(struct eg_instance *in);

/*
 * 1 if a daemon holds the lock of this pin directory, 0 if none does,
 * -errno. Does not take the lock.
 */
int instance_running(const struct eg_paths *p, pid_t *ret_pid);

#endif
