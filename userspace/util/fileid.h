/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* A file's identity as the kernel sees it, so that userspace and BPF compare the same numbers. */
#ifndef EG_FILEID_H
#define EG_FILEID_H

#include <stdint.h>
#include <sys/sysmacros.h>

/* st_dev in the kernel's encoding (MKDEV: major << 20 | minor), what BPF reads from s_dev. */
static inline uint64_t eg_kdev(uint64_t st_dev)
{
	return ((uint64_t)major(st_dev) << 20) | minor(st_dev);
}

#endif
