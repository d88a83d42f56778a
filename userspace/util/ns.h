/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Namespaces of other processes, as /proc/PID/ns/ shows them. */
#ifndef EG_NS_H
#define EG_NS_H

#include <fcntl.h>
#include <linux/nsfs.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/*
 * The namespace /proc/PID/ns/NAME is owned by our own user namespace (the
 * initial one, for the daemon): root made it, not a user in a user
 * namespace of their own. False when it cannot be told.
 */
static inline bool eg_ns_ours(pid_t pid, const char *name)
{
	struct stat owner, ours;
	char path[64];
	int fd, ufd, rc;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ufd = ioctl(fd, NS_GET_USERNS);
	close(fd);
	if (ufd < 0)
		return false;
	rc = fstat(ufd, &owner);
	close(ufd);
	return !rc && !stat("/proc/self/ns/user", &ours) && owner.st_ino == ours.st_ino &&
	       owner.st_dev == ours.st_dev;
}

#endif
