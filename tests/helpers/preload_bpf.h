/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the LD_PRELOAD helpers that intercept bpf(2) share. */
#ifndef EG_PRELOAD_BPF_H
#define EG_PRELOAD_BPF_H

#include <dlfcn.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/bpf.h>

/* The map fd names, through the real syscall(): 0, or -1 when it is no map. */
static inline int preload_map_info(long (*real)(long, ...), int fd, struct bpf_map_info *info)
{
	union bpf_attr attr;

	memset(info, 0, sizeof(*info));
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = fd;
	attr.info.info_len = sizeof(*info);
	attr.info.info = (unsigned long)info;
	return real(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr)) ? -1 : 0;
}

/* The six arguments of an intercepted syscall(nr, ...) into a[], and the real syscall() into *real. */
#define PRELOAD_ARGS(nr, a, real)							\
	do {										\
		va_list ap_;								\
		va_start(ap_, nr);							\
		for (int i_ = 0; i_ < 6; i_++)						\
			(a)[i_] = va_arg(ap_, long);					\
		va_end(ap_);								\
		if (!(real))								\
			(real) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");	\
	} while (0)

#endif
