// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * exit_race [TOKEN]: starts 7 threads that spin, and a millisecond later
 * the process exits with 3 (exit_group): the spinning threads leave
 * do_exit() at once on every CPU, the race in which two of them could
 * both report the process's end. The token is only for the records.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void *spin(void *arg)
{
	(void)arg;
	for (;;)
		;
	return NULL;
}

int main(void)
{
	pthread_t t;
	int i;

	for (i = 0; i < 7; i++)
		if (pthread_create(&t, NULL, spin, NULL))
			return 1;
	usleep(1000);
	exit(3);
}
