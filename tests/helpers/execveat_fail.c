// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execveat_fail DIR NAME TOKEN: execveat(dirfd(DIR), NAME) expected to fail; prints errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	/*
	 * Arguments on the stack: after an early ENOENT the kernel has not
	 * touched argv, and a literal in a never-read page cannot be read by
	 * a non-faulting probe (the event then says "unreadable").
	 */
	char extra[] = "execveat-arg";
	char *args[] = { argv[2], extra, argv[3], NULL };
	char *envp[] = { NULL };
	int dfd;

	if (argc != 4) {
		fprintf(stderr, "usage: execveat_fail DIR NAME TOKEN\n");
		return 2;
	}
	dfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 1;
	syscall(SYS_execveat, dfd, argv[2], args, envp, 0);
	printf("%d %d\n", errno, dfd);
	return 0;
}
