// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* execve() with a filename pointer nobody can read: the kernel says EFAULT. Prints the errno name. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	/* through a variable the compiler cannot see through */
	volatile unsigned long bad = 0x10;

	(void)argc;
	execve((const char *)bad, argv, NULL);
	printf("%s\n", strerrorname_np(errno));
	return 0;
}
