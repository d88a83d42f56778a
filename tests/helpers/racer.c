// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A TOCTOU attacker: while one thread execs an allowed command, another
 * flips what that exec names to a denied one, hoping the flip lands after
 * the supervisor read it and before the kernel did.
 *   racer argv N PROG [PAD] execve(PROG, [PROG, buf(, PAD x's)]) with buf flipping SAFE <-> EVIL
 *                         (a PAD of a few KiB: the ticket goes to the large map)
 *   racer path N OK NO    execve(buf, [buf]) with buf flipping OK <-> NO (same length)
 * Prints "allowed A denied D killed K other O" after N tries.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[256];
static char alt[2][256];
static atomic_int stop;

static void *flipper(void *arg)
{
	unsigned long i = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		memcpy(buf, alt[i++ & 1], strlen(alt[0]) + 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n, i, allowed = 0, denied = 0, killed = 0, other = 0;
	char *pad = NULL;
	bool path;

	if (argc < 4)
		return 2;
	path = !strcmp(argv[1], "path");
	n = atol(argv[2]);
	if (path) {
		if (argc < 5 || strlen(argv[3]) != strlen(argv[4]))
			return 2;
		snprintf(alt[0], sizeof(alt[0]), "%s", argv[3]);
		snprintf(alt[1], sizeof(alt[1]), "%s", argv[4]);
	} else {
		strcpy(alt[0], "SAFE");
		strcpy(alt[1], "EVIL");
		if (argc > 4) {
			size_t len = strtoul(argv[4], NULL, 10);

			pad = malloc(len + 1);
			if (!pad)
				return 2;
			memset(pad, 'x', len);
			pad[len] = '\0';
		}
	}
	/* the marker's file ($EG_MARKER) is the only variable the exec'd program gets */
	char marker_env[PATH_MAX + 16] = "", *envp[2] = { NULL, NULL };

	if (getenv("EG_MARKER")) {
		snprintf(marker_env, sizeof(marker_env), "EG_MARKER=%s", getenv("EG_MARKER"));
		envp[0] = marker_env;
	}
	for (i = 0; i < n; i++) {
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			pthread_t t;
			char *av[4];

			strcpy(buf, alt[0]);
			pthread_create(&t, NULL, flipper, NULL);
			if (path) {
				av[0] = buf;
				av[1] = NULL;
				execve(buf, av, envp);
			} else {
				av[0] = argv[3];
				av[1] = buf;
				av[2] = pad;
				av[3] = NULL;
				execve(argv[3], av, envp);
			}
			_exit(errno == EACCES ? 126 : 127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) < 0) {
			other++;
			continue;
		}
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 126)
			denied++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			allowed++;
		else
			other++;
	}
	printf("allowed %ld denied %ld killed %ld other %ld\n", allowed, denied, killed, other);
	return 0;
}
