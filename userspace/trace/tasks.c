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
	struct eg_task t = {};
	int pidfd = syscall(SYS_pidfd_open, pid, 0), err = 0;

	if (pidfd < 0)
		return -errno;
	/* keep the session and exec id; only the depth changes */
	if (bpf_map_lookup_elem(map_fd, &pidfd, &t) && errno != ENOENT) {
		err = -errno;
		goto out;
	}
	t.depth = depth;
	t.flags = (t.flags & ~(EG_TASK_PENDING | EG_TASK_PENDING_AT)) | EG_TASK_KNOWN |
		  EG_TASK_DEPTH_KNOWN;
	if (bpf_map_update_elem(map_fd, &pidfd, &t, BPF_ANY))
		err = -errno;
out:
	close(pidfd);
	return err;
}
