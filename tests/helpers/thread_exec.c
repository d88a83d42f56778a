// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A non-leader thread calls execve: thread_exec TOKEN. Prints "pid tid" first. */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static char *token;

static void *run(void *arg)
{
	char *argv[] = { "/bin/true", "thread-exec", token, NULL };
	char *envp[] = { NULL };

	(void)arg;
	printf("%d %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	execve("/bin/true", argv, envp);
	perror("execve");
	_exit(127);
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc != 2) {
		fprintf(stderr, "usage: thread_exec TOKEN\n");
		return 2;
	}
	token = argv[1];
	if (pthread_create(&t, NULL, run, NULL))
		return 1;
	pthread_join(t, NULL);	/* never returns: execve ends every thread */
	return 1;
}
