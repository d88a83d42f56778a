// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execve() of /bin/echo with its argv array at the very end of a page:
 *   pageedge cross  WORDS...   the array goes on into the next page (mapped)
 *   pageedge end    WORDS...   the array ends with the page; the next is not mapped
 *   pageedge fault  WORDS...   the array's NULL would be in that unmapped page: EFAULT
 * echo prints the words; a failed exec prints its errno's name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned int n = argc - 1, i;	/* "echo" and the words: argv[2..] */
	char *area, **arr;
	size_t bytes;

	if (argc < 3) {
		fprintf(stderr, "usage: pageedge cross|end|fault WORDS...\n");
		return 2;
	}
	area = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return 1;
	bytes = (n + 1) * sizeof(char *);	/* the words, "echo", and NULL */
	if (!strcmp(argv[1], "cross")) {
		arr = (char **)(area + page - sizeof(char *));	/* one pointer in the first page */
	} else {
		munmap(area + page, page);
		if (!strcmp(argv[1], "end"))
			arr = (char **)(area + page - bytes);
		else
			arr = (char **)(area + page - bytes + sizeof(char *));	/* NULL past the end */
	}
	arr[0] = "echo";
	for (i = 2; i < (unsigned int)argc; i++)
		arr[i - 1] = argv[i];
	if (strcmp(argv[1], "fault"))
		arr[n] = NULL;
	execve("/bin/echo", arr, NULL);
	printf("%s\n", strerrorname_np(errno));
	return 0;
}
