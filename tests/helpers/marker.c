// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Proof that a program ran: appends its argv[1] (or "ran") and pid to the
 * file named by $EG_MARKER, or to /tmp/egmarker when unset... unless argv[1]
 * is SAFE. The racer's "denied" outcome must never leave a line here.
 *   marker [WORD]
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *word = argc > 1 ? argv[1] : "ran";
	char line[300];
	int fd, n;

	if (!strcmp(word, "SAFE"))
		return 0;
	fd = open("/tmp/egmarker", O_WRONLY | O_CREAT | O_APPEND, 0666);
	if (fd < 0)
		return 1;
	n = snprintf(line, sizeof(line), "%s %d\n", word, (int)getpid());
	if (write(fd, line, n) != n)
		return 1;
	close(fd);
	return 0;
}
