// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Holds a program's memory map lock while it execs: N times, a child
 * execs PROG ARGS while its parent writes VALUE to /proc/CHILD/clear_refs
 * without pause ("4", clearing soft-dirty bits, takes the new image's
 * mmap lock for writing). Prints "ran=R killed=K other=O".
 *   clear_refs_race N VALUE PROG [ARGS...]
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int i, n, ran = 0, killed = 0, other = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: clear_refs_race N VALUE PROG [ARGS...]\n");
		return 2;
	}
	n = atoi(argv[1]);
	for (i = 0; i < n; i++) {
		char path[64], x;
		int p[2], fd, st = 0;
		pid_t c, w;

		if (pipe(p))
			return perror("pipe"), 1;
		c = fork();
		if (c < 0)
			return perror("fork"), 1;
		if (c == 0) {
			close(p[1]);
			if (read(p[0], &x, 1) != 1)
				_exit(126);
			execv(argv[3], argv + 3);
			_exit(127);
		}
		close(p[0]);
		snprintf(path, sizeof(path), "/proc/%d/clear_refs", c);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			return perror(path), 1;
		if (write(p[1], "g", 1) != 1)
			return perror("write"), 1;
		close(p[1]);
		while ((w = waitpid(c, &st, WNOHANG)) == 0)
			if (write(fd, argv[2], strlen(argv[2])) < 0)
				break;
		if (w == 0)
			w = waitpid(c, &st, 0);
		close(fd);
		if (w < 0)
			return perror("waitpid"), 1;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ran++;
		else
			other++;
	}
	printf("ran=%d killed=%d other=%d\n", ran, killed, other);
	return 0;
}
