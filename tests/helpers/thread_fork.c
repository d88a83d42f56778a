// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A process with a worker thread, started first: each line "main WORD" or
 * "thread WORD" on stdin has that thread fork and exec PROG WORD, wait for
 * it, and print "WHO WORD STATUS" (its exit code, 128+N for signal N).
 * Prints "ready PID TID" (the worker's id) once the worker runs.
 *   thread_fork PROG
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *prog;
static int to_worker[2], from_worker[2];

static int run(char *word)
{
	char *argv[] = { (char *)prog, word, NULL };
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid) {
		execv(prog, argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

static void *worker(void *arg)
{
	char word[256];
	ssize_t n;

	(void)arg;
	printf("ready %d %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	while ((n = read(to_worker[0], word, sizeof(word) - 1)) > 0) {
		int rc;

		word[n] = '\0';
		rc = run(word);
		if (write(from_worker[1], &rc, sizeof(rc)) != sizeof(rc))
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char line[300], who[16], word[256];
	pthread_t t;

	if (argc != 2) {
		fprintf(stderr, "usage: thread_fork PROG\n");
		return 2;
	}
	prog = argv[1];
	if (pipe2(to_worker, O_CLOEXEC) || pipe2(from_worker, O_CLOEXEC) ||
	    pthread_create(&t, NULL, worker, NULL))
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		int rc = -1;

		if (sscanf(line, "%15s %255s", who, word) != 2)
			continue;
		if (!strcmp(who, "main")) {
			rc = run(word);
		} else if (write(to_worker[1], word, strlen(word)) != (ssize_t)strlen(word) ||
			   read(from_worker[0], &rc, sizeof(rc)) != sizeof(rc)) {
			return 1;
		}
		printf("%s %s %d\n", who, word, rc);
		fflush(stdout);
	}
	return 0;
}
