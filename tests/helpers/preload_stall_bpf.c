// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * LD_PRELOAD into an execgate command or daemon: the first bpf(2) call
 * that writes a task's storage from user space, or runs the iterator that
 * does it in the kernel (bpf/amend.bpf.c), waits: BPF_MAP_UPDATE_ELEM on a
 * task-storage map, or BPF_LINK_CREATE of an iterator link that names
 * what it runs on. Before it, the file EG_STALL_MARK is made; the call
 * goes on once the test has removed it (10 s at most). With EG_STALL_ARM
 * set, only a call made while that file exists counts (a daemon's start
 * writes task storage too). A test makes a traced process exec meanwhile:
 * what the exec wrote must not be put back. With EG_STALL_MAP set, the
 * call that waits is instead the first BPF_MAP_UPDATE_ELEM on the map of
 * that name ("control": a daemon's switch to its programs).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include "preload_bpf.h"

static long (*real)(long, ...);

static int is_task_storage(int fd)
{
	struct bpf_map_info info;

	return !preload_map_info(real, fd, &info) && info.type == BPF_MAP_TYPE_TASK_STORAGE;
}

static int is_named(int fd, const char *name)
{
	struct bpf_map_info info;

	return !preload_map_info(real, fd, &info) && !strcmp(info.name, name);
}

static int matches(long cmd, const union bpf_attr *attr)
{
	const char *map = getenv("EG_STALL_MAP");

	if (map)
		return cmd == BPF_MAP_UPDATE_ELEM && is_named(attr->map_fd, map);
	if (cmd == BPF_MAP_UPDATE_ELEM)
		return is_task_storage(attr->map_fd);
	return cmd == BPF_LINK_CREATE && attr->link_create.attach_type == BPF_TRACE_ITER &&
	       attr->link_create.iter_info;
}

long syscall(long nr, ...)
{
	static int stalled;
	const char *mark = getenv("EG_STALL_MARK"), *arm = getenv("EG_STALL_ARM");
	long a[6];
	int i, fd;

	PRELOAD_ARGS(nr, a, real);
	if (nr == SYS_bpf && mark && !stalled && (!arm || !access(arm, F_OK)) &&
	    matches(a[0], (const union bpf_attr *)a[1])) {
		struct timespec ms = { 0, 10 * 1000 * 1000 };

		stalled = 1;
		fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
		for (i = 0; i < 1000 && !access(mark, F_OK); i++)
			nanosleep(&ms, NULL);
	}
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
