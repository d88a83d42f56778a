/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The pseudo file systems the daemon depends on. Both calls are idempotent:
 * nothing is mounted when the file system is already there. They return 0
 * or -errno and print nothing.
 */
#ifndef EG_MOUNTS_H
#define EG_MOUNTS_H

#define EG_TRACEFS_DIR	"/sys/kernel/tracing"
#define EG_BPFFS_DIR	"/sys/fs/bpf"
#define EG_SECURITYFS_DIR "/sys/kernel/security"

/*
 * Makes tracepoints visible to libbpf (it reads their ids from tracefs):
 * mounts tracefs at EG_TRACEFS_DIR unless EG_TRACEFS_DIR/events or the
 * debugfs copy libbpf prefers (/sys/kernel/debug/tracing/events) exists.
 */
int eg_mount_tracefs(void);

/*
 * Mounts a bpffs at dir (an existing directory) unless dir already is the
 * root of one or lies inside one. Pinning fails anywhere else.
 */
int eg_mount_bpffs(const char *dir);

/*
 * Mounts securityfs at EG_SECURITYFS_DIR unless EG_SECURITYFS_DIR/lsm (the
 * active LSM list) is already readable there.
 */
int eg_mount_securityfs(void);

#endif
