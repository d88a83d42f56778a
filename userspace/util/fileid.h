/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A file's identity as the kernel sees it, so that userspace and BPF compare the same numbers. */
#ifndef EG_FILEID_H
#define EG_FILEID_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

/* st_dev in the kernel's encoding (MKDEV: major << 20 | minor), what BPF reads from s_dev. */
static inline uint64_t eg_kdev(uint64_t st_dev)
{
	return ((uint64_t)major(st_dev) << 20) | minor(st_dev);
}

/*
 * The same file, unchanged as far as its inode tells: device, inode, size,
 * and the times of its last write and last change (a rename, chmod or
 * link count change moves ctime).
 */
static inline bool eg_stat_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/*
 * path_fd (opened O_PATH: nothing of the file's own ran) opened for
 * reading if it is a regular file, never blocking: a FIFO or a device is
 * never opened. path_fd is closed; *st is its fstat. The new fd, or
 * -EINVAL (not a regular file) or -errno.
 */
static inline int eg_open_regular(int path_fd, struct stat *st)
{
	char proc[64];
	int fd;

	if (fstat(path_fd, st) || !S_ISREG(st->st_mode)) {
		close(path_fd);
		return -EINVAL;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
	fd = open(proc, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(path_fd);
	return fd;
}

/*
 * What fd names, as its /proc/self/fd link reads ("/a/file",
 * "anon_inode:bpf_link", ...), NUL-terminated in buf; its length, or -1
 * (unreadable, or empty).
 */
static inline ssize_t eg_fd_link(int fd, char *buf, size_t len)
{
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

#endif
