// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* A statically linked program, for chroots and containers with no libc. Prints its argv[1]. */
#include <unistd.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1) {
		write(1, argv[1], strlen(argv[1]));
		write(1, "\n", 1);
	}
	return 0;
}
