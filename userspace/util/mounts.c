// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include "util/mounts.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif
#ifndef SECURITYFS_MAGIC
#define SECURITYFS_MAGIC 0x73636673
#endif
#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

/* 1 if path is on a file system with this magic, 0 if not, -errno. */
static int fs_is(const char *path, long magic)
{
	struct statfs st;

	if (statfs(path, &st))
		return -errno;
	return st.f_type == magic;
}

int eg_mount_tracefs(void)
{
	int err;

	/* libbpf uses the debugfs path when it exists; either will do. */
	if (!access(EG_TRACEFS_DIR "/events", F_OK) ||
	    !access("/sys/kernel/debug/tracing/events", F_OK))
		return 0;
	err = fs_is(EG_TRACEFS_DIR, TRACEFS_MAGIC);
	if (err < 0)
		return err;
	/* Mounted, but without events: no CONFIG_FTRACE, mounting again won't help. */
	if (err == 1)
		return -ENOENT;
	if (mount("tracefs", EG_TRACEFS_DIR, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

int eg_mount_bpffs(const char *dir)
{
	int err;

	err = fs_is(dir, BPF_FS_MAGIC);
	if (err < 0)
		return err;
	if (err == 1)
		return 0;
	/* mode=0700 as systemd does: pinned objects are root's business. */
	if (mount("bpf", dir, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700"))
		return -errno;
	return 0;
}

int eg_mount_securityfs(void)
{
	int err;

	if (!access(EG_SECURITYFS_DIR "/lsm", F_OK))
		return 0;
	err = fs_is(EG_SECURITYFS_DIR, SECURITYFS_MAGIC);
	if (err < 0)
		return err;
	/* Mounted, but this kernel has no LSM list: mounting again will not help. */
	if (err == 1)
		return -ENOENT;
	if (mount("securityfs", EG_SECURITYFS_DIR, "securityfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}
