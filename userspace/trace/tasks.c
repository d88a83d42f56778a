// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A process's exec state in the pinned task storage ("tasks"), reached
 * through a pidfd: the key task-storage maps take from userspace.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "execgate.h"
#include "trace/amend.h"
#include "trace/tasks.h"
#include "util/paths.h"

int task_open_map(const char *pin_path)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/tasks", pin_path ? pin_path : EG_PIN_PATH_DEFAULT);
	fd = bpf_obj_get(path);
	return fd < 0 ? -errno : fd;
}

int task_get(int map_fd, pid_t pid, struct eg_task *ret)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0), err = 0;

	if (pidfd < 0)
		return -errno;
	if (bpf_map_lookup_elem(map_fd, &pidfd, ret))
		err = -errno;
	close(pidfd);
	return err;
}

int task_set_depth(int map_fd, pid_t pid, int depth)
{
	struct task_amender *sd;
	int err;

	/* in the kernel: a map update would put back what an exec meanwhile wrote (bpf/amend.bpf.c) */
	err = task_amender_open(map_fd, &sd);
	if (err)
		return err;
	err = task_amender_set_depth(sd, map_fd, pid, depth);
	task_amender_close(sd);
	return err;
}
