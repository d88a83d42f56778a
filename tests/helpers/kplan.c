// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Runs a plan of execs for the kernel enforcement tests, one per line of
 * stdin, each field separated by a tab:
 *   CGROUP_PROCS UID CHAIN PATH ARG0 [ARG...]
 * A child joins the cgroup (writes itself to CGROUP_PROCS, "-" for none),
 * takes UID (and its gid), then execs itself CHAIN times (each exec one
 * level deeper) before it execs PATH with ARG0.... For each line one
 * output line: "INDEX STATUS" (exit code, or -SIGNAL).
 *   kplan                         prints "ready PID", waits for "go", runs
 *   kplan --chain N PATH ARGS...  (internal) exec itself N more times
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ARGS 64

static void chain(int n, char **rest)
{
	char num[16], *argv[MAX_ARGS + 4];
	int i;

	if (n <= 0) {
		execv(rest[0], rest + 1);
		_exit(127);
	}
	snprintf(num, sizeof(num), "%d", n - 1);
	argv[0] = "kplan";
	argv[1] = "--chain";
	argv[2] = num;
	for (i = 0; rest[i] && i < MAX_ARGS; i++)
		argv[3 + i] = rest[i];
	argv[3 + i] = NULL;
	execv("/proc/self/exe", argv);
	_exit(127);
}

int main(int argc, char **argv)
{
	char line[8192];
	long index = 0;

	if (argc >= 4 && !strcmp(argv[1], "--chain")) {
		chain(atoi(argv[2]), argv + 3);
		return 127;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || strncmp(line, "go", 2))
		return 2;
	while (fgets(line, sizeof(line), stdin)) {
		char *f[MAX_ARGS + 4], *save = NULL, *t;
		int n = 0, st;
		pid_t pid;

		line[strcspn(line, "\n")] = '\0';
		for (t = strtok_r(line, "\t", &save); t && n < MAX_ARGS + 3; t = strtok_r(NULL, "\t", &save))
			f[n++] = t;
		f[n] = NULL;
		if (n < 5) {
			fprintf(stderr, "kplan: line %ld: too few fields\n", index);
			return 2;
		}
		/* an empty argument is written as \e */
		for (int i = 4; i < n; i++)
			if (!strcmp(f[i], "\\e"))
				f[i][0] = '\0';
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			uid_t uid = (uid_t)atol(f[1]);

			if (strcmp(f[0], "-")) {
				int fd = open(f[0], O_WRONLY);

				if (fd < 0 || write(fd, "0", 1) != 1)
					_exit(126);
				close(fd);
			}
			if (uid != getuid() && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
				_exit(125);
			chain(atoi(f[2]), f + 3);
		}
		if (waitpid(pid, &st, 0) < 0)
			return 1;
		printf("%ld %d\n", index++, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
	}
	fflush(stdout);
	return 0;
}
