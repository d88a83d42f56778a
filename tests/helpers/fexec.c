// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Runs a program by file descriptor.
 *   fexec memfd SRC NAME ARGV...   copy SRC into a memfd called NAME, fexecve it
 *   fexec fd SRC ARGV...           open SRC, execveat(fd, "", AT_EMPTY_PATH)
 *   fexec at DIR NAME ARGV...      execveat(open(DIR), NAME, 0)
 * Exits 127 with a message if the exec fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
	int fd, src;
	struct stat st;

	if (argc < 4)
		return 2;
	if (!strcmp(argv[1], "memfd")) {
		if (argc < 5)
			return 2;
		src = open(argv[2], O_RDONLY);
		fd = memfd_create(argv[3], 0);
		if (src < 0 || fd < 0 || fstat(src, &st) ||
		    sendfile(fd, src, NULL, st.st_size) != st.st_size) {
			perror("memfd");
			return 127;
		}
		fexecve(fd, argv + 4, environ);
	} else if (!strcmp(argv[1], "fd")) {
		fd = open(argv[2], O_RDONLY | O_CLOEXEC);
		syscall(SYS_execveat, fd, "", argv + 3, environ, AT_EMPTY_PATH);
	} else if (!strcmp(argv[1], "at")) {
		if (argc < 5)
			return 2;
		fd = open(argv[2], O_RDONLY | O_DIRECTORY);
		syscall(SYS_execveat, fd, argv[3], argv + 4, environ, 0);
	} else {
		return 2;
	}
	fprintf(stderr, "fexec: %s\n", strerror(errno));
	return 127;
}
