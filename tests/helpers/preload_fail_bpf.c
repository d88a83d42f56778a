// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * LD_PRELOAD into an execgate daemon: every bpf(2) BPF_MAP_UPDATE_ELEM on
 * the map named EG_FAIL_MAP fails with ENOMEM, as a kernel out of memory
 * would make it. A test makes a daemon's start fail at a chosen step
 * ("krules": loading the kernel rules, after the switch to its programs)
 * and checks what the failed start leaves in force. With EG_FAIL_PIN set,
 * BPF_OBJ_PIN at a path that contains it fails instead (ENOSPC), after
 * EG_FAIL_PIN_SKIP (default 0) such pins went through. With
 * EG_FAIL_RENAME set, rename(2) of a path that contains it fails (ENOMEM:
 * bpffs renames within a directory fail only so), after
 * EG_FAIL_RENAME_SKIP (default 0) such renames went through. With
 * EG_FAIL_PROG set, BPF_PROG_LOAD of the program of that name fails
 * (EACCES, as the verifier refusing it): a binary whose programs this
 * kernel does not take.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include "preload_bpf.h"

static long (*real)(long, ...);

static int named(int fd, const char *name)
{
	struct bpf_map_info info;

	return !preload_map_info(real, fd, &info) && !strcmp(info.name, name);
}

static int pin_fails(const union bpf_attr *attr)
{
	const char *pin = getenv("EG_FAIL_PIN"), *skip = getenv("EG_FAIL_PIN_SKIP");
	const char *path = (const char *)(unsigned long)attr->pathname;
	static int seen;

	if (!pin || !path || !strstr(path, pin))
		return 0;
	return seen++ >= (skip ? atoi(skip) : 0);
}

int rename(const char *from, const char *to)
{
	static int (*real_rename)(const char *, const char *);
	const char *match = getenv("EG_FAIL_RENAME"), *skip = getenv("EG_FAIL_RENAME_SKIP");
	static int seen;

	if (!real_rename)
		real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	if (match && from && strstr(from, match) && seen++ >= (skip ? atoi(skip) : 0)) {
		errno = ENOMEM;
		return -1;
	}
	return real_rename(from, to);
}

long syscall(long nr, ...)
{
	const char *name = getenv("EG_FAIL_MAP"), *prog = getenv("EG_FAIL_PROG");
	const union bpf_attr *attr;
	long a[6];

	PRELOAD_ARGS(nr, a, real);
	attr = (const union bpf_attr *)a[1];
	if (nr == SYS_bpf && a[0] == BPF_OBJ_PIN && pin_fails(attr)) {
		errno = ENOSPC;
		return -1;
	}
	if (nr == SYS_bpf && prog && a[0] == BPF_PROG_LOAD && !strncmp(attr->prog_name, prog, BPF_OBJ_NAME_LEN)) {
		errno = EACCES;
		return -1;
	}
	if (nr == SYS_bpf && name && a[0] == BPF_MAP_UPDATE_ELEM && named(attr->map_fd, name)) {
		errno = ENOMEM;
		return -1;
	}
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
