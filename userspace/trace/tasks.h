/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Per-task exec state in the pinned "tasks" map, keyed by pidfd. */
#ifndef EG_TASK_H
#define EG_TASK_H

#include <sys/types.h>
#include <linux/types.h>
#include "execgate.h"

/* Opens <pin_path>/tasks; returns an fd or -errno. */
int task_open_map(const char *pin_path);
int task_get(int map_fd, pid_t pid, struct eg_task *ret);
/* Marks the task's current image as depth `depth` (-1: the next exec is 0). */
int task_set_depth(int map_fd, pid_t pid, int depth);

#endif
