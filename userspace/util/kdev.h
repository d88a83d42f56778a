/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The device number the kernel's programs read for a file (its super
 * block's s_dev), from what stat() said. They are the same on most file
 * systems, not on btrfs: stat() gives each subvolume (the top one too) a
 * device number of its own, and the programs see the file system's. A
 * file identity taken from st_dev alone would then never match there.
 */
#ifndef EG_KDEV_H
#define EG_KDEV_H

#include <stdint.h>
#include <sys/stat.h>

/*
 * The kernel's device number (eg_kdev encoding) of the file at path
 * (dirfd, at_flags as for statx: AT_EMPTY_PATH with path "" for dirfd
 * itself, AT_SYMLINK_NOFOLLOW for an lstat) whose stat is st. A device
 * with a major number is its own; an anonymous one (0:N: btrfs, tmpfs,
 * overlayfs, ...) is looked up once per mount and device in
 * /proc/self/mountinfo (btrfs: the mount's device). Whatever fails (the
 * file changed meanwhile, no mount id) leaves eg_kdev(st->st_dev).
 * Thread-safe.
 */
uint64_t eg_kdev_at(int dirfd, const char *path, int at_flags, const struct stat *st);

static inline uint64_t eg_kdev_fd(int fd, const struct stat *st)
{
	return eg_kdev_at(fd, "", 0x1000 /* AT_EMPTY_PATH */, st);
}

#endif
