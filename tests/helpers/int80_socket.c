// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * int80_socket PROTOCOL: a 64-bit process makes a socket through the
 * 32-bit system call ABI (int $0x80, socketcall(SYS_SOCKET, args)), whose
 * arguments are in memory where a seccomp filter cannot read them. Prints
 * "ok" or the errno name (a session refuses socketcall whole).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static void no_ia32(int sig)
{
	(void)sig;
	write(1, "no-ia32\n", 8);
	_exit(3);
}

int main(int argc, char **argv)
{
	unsigned int *args;
	long ret;

	if (argc != 2) {
		fprintf(stderr, "usage: int80_socket PROTOCOL\n");
		return 2;
	}
	/* below 4 GiB: a 32-bit call sees 32-bit pointers */
	args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (args == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	/* a kernel without 32-bit system calls kills the caller (SIGSEGV): say so instead */
	signal(SIGSEGV, no_ia32);
	args[0] = AF_INET;
	args[1] = SOCK_STREAM;
	args[2] = (unsigned int)atoi(argv[1]);
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(102 /* socketcall */), "b"(1 /* SYS_SOCKET */),
			 "c"((unsigned long)args) : "memory");
	if (ret < 0) {
		printf("%s\n", strerrorname_np((int)-ret) ? strerrorname_np((int)-ret) : "error");
		return 1;
	}
	printf("ok\n");
	return 0;
}
