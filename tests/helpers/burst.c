// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * burst CGROUP_DIR N TOKEN: join the cgroup, then fork+exec /bin/true TOKEN
 * N times, sequentially. Prints the number of successful execs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[4096], pid[32];
	int fd, n, i, ok = 0, len;

	if (argc != 4) {
		fprintf(stderr, "usage: burst CGROUP_DIR N TOKEN\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/cgroup.procs", argv[1]);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	len = snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (fd < 0 || write(fd, pid, len) != len) {
		fprintf(stderr, "burst: joining %s: %s\n", path, strerror(errno));
		return 1;
	}
	close(fd);
	n = atoi(argv[2]);
	for (i = 0; i < n; i++) {
		char *args[] = { "/bin/true", argv[3], NULL };
		int st;
		pid_t c = fork();

		if (c < 0)
			return 1;
		if (c == 0) {
			execv("/bin/true", args);
			_exit(127);
		}
		if (waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ok++;
	}
	printf("%d\n", ok);
	return ok == n ? 0 : 1;
}
