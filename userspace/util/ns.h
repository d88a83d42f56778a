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
#include "execgate.h"

/* The user namespace that owns /proc/PID/ns/NAME, as a descriptor (NS_GET_USERNS), or -1. */
static inline int eg_ns_owner_fd(pid_t pid, const char *name)
{
	char path[64];
	int fd, ufd;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ufd = ioctl(fd, NS_GET_USERNS);
	close(fd);
	return ufd;
}

/* Whether the namespace file fd is our own user namespace. */
static inline bool eg_ns_is_our_userns(int fd)
{
	struct stat st, ours;

	return !fstat(fd, &st) && !stat("/proc/self/ns/user", &ours) && st.st_ino == ours.st_ino &&
	       st.st_dev == ours.st_dev;
}

/*
 * The namespace /proc/PID/ns/NAME is owned by our own user namespace (the
 * initial one, for the daemon): root made it, not a user in a user
 * namespace of their own. False when it cannot be told.
 */
static inline bool eg_ns_ours(pid_t pid, const char *name)
{
	int ufd = eg_ns_owner_fd(pid, name);
	bool ours;

	if (ufd < 0)
		return false;
	ours = eg_ns_is_our_userns(ufd);
	close(ufd);
	return ours;
}

/*
 * The namespace /proc/PID/ns/NAME is root's, as the kernel's judge tells a
 * user's mount (mount_by_user, bpf/paths.bpf.h): its user namespace and
 * each one above it, up to ours, were made by root (NS_GET_OWNER_UID 0),
 * as a runtime's are; none by a user (unshare -U). False when it cannot be
 * told, or more than EG_USERNS_LEVELS up, as the kernel counts it.
 */
static inline bool eg_ns_root_made(pid_t pid, const char *name)
{
	int ufd = eg_ns_owner_fd(pid, name), pfd, i;
	bool root = false;
	uid_t uid;

	for (i = 0; i < EG_USERNS_LEVELS && ufd >= 0; i++) {
		if (eg_ns_is_our_userns(ufd)) {
			root = true;
			break;
		}
		if (ioctl(ufd, NS_GET_OWNER_UID, &uid) || uid != 0)
			break;
		pfd = ioctl(ufd, NS_GET_PARENT);
		close(ufd);
		ufd = pfd;
	}
	if (ufd >= 0)
		close(ufd);
	return root;
}

#endif
