// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The leader leaves first: the main thread calls pthread_exit() while a
 * second thread lives on for MS milliseconds. Prints "ready" when the
 * leader is gone.   leader_exit MS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long ms;

static void *worker(void *arg)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	(void)arg;
	usleep(100000);		/* let the leader go first */
	printf("ready\n");
	fflush(stdout);
	nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	ms = argc > 1 ? atol(argv[1]) : 1000;
	pthread_create(&t, NULL, worker, NULL);
	pthread_exit(NULL);
}
