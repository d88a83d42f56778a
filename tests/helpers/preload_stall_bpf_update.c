// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * LD_PRELOAD into an execgate command: its first BPF_MAP_UPDATE_ELEM
 * waits. Before it, the file EG_STALL_MARK is made; the call goes on once
 * the test has removed it (10 s at most). A test makes a traced process
 * exec meanwhile: a change to that process's task storage must not put
 * back what the exec wrote.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	static int stalled;
	const char *mark = getenv("EG_STALL_MARK");
	long a[6];
	va_list ap;
	int i, fd;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (nr == SYS_bpf && a[0] == BPF_MAP_UPDATE_ELEM && mark && !stalled) {
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
