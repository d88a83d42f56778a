// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Proof that a program ran: appends its argv[1] (or "ran") and pid to the
 * file named by $EG_MARKER, or to /tmp/egmarker when unset (tests/run.sh
 * gives each of its lanes its own), unless argv[1] is SAFE. The racer's "denied" outcome must never leave a line here.
 *   marker [WORD]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *word = argc > 1 ? argv[1] : "ran", *file = getenv("EG_MARKER");
	char line[300];
	int fd, n;

	if (!strcmp(word, "SAFE"))
		return 0;
	if (!file || !*file)
		file = "/tmp/egmarker";
	fd = open(file, O_WRONLY | O_CREAT | O_APPEND, 0666);
	if (fd < 0)
		return 1;
	n = snprintf(line, sizeof(line), "%s %d\n", word, (int)getpid());
	if (write(fd, line, n) != n)
		return 1;
	close(fd);
	return 0;
}
