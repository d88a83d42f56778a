/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The seccomp user-notify names newer than the system headers may be, for
 * whoever installs a listener or answers its notifications (exec's launcher,
 * the probe, tools/bench/spawn.c).
 */
#ifndef EG_SECCOMP_NOTIF_H
#define EG_SECCOMP_NOTIF_H

#include <linux/seccomp.h>
#include <sys/ioctl.h>

/* Linux 5.19: a trapped task waits for its answer killable, not interruptible */
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV	(1UL << 5)
#endif
/* Linux 6.6: the listener's task and its supervisor hand the CPU to each other */
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS	SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP	(1UL << 0)
#endif

#endif
