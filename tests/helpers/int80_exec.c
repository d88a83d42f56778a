// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * int80_exec FILE: a 64-bit process execs FILE through the 32-bit system
 * call ABI (int $0x80, execve), which fires no syscall tracepoint; then,
 * under a seccomp filter of its own that refuses execve with EPERM, it
 * execs /bin/true the native way. Prints the two errno names ("EPERM
 * EPERM" where FILE is refused by the BPF LSM), or "no-ia32".
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static void no_ia32(int sig)
{
	(void)sig;
	write(1, "no-ia32\n", 8);
	_exit(3);
}

static const char *name(long err)
{
	const char *n = strerrorname_np((int)err);

	return n ? n : "error";
}

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	char *const tv[] = { "/bin/true", NULL };
	unsigned int *args;
	char *path;
	long ret;

	if (argc != 2 || strlen(argv[1]) > 2000) {
		fprintf(stderr, "usage: int80_exec FILE\n");
		return 2;
	}
	/* below 4 GiB: a 32-bit call sees 32-bit pointers */
	args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (args == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	path = (char *)(args + 4);
	strcpy(path, argv[1]);
	args[0] = (unsigned int)(unsigned long)path;	/* argv: { FILE, NULL } */
	args[1] = 0;
	args[2] = 0;					/* envp: { NULL } */
	signal(SIGSEGV, no_ia32);
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(11 /* execve */), "b"((unsigned long)path),
			 "c"((unsigned long)args), "d"((unsigned long)(args + 2)) : "memory");
	printf("%s ", ret < 0 ? name(-ret) : "ran");
	fflush(stdout);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 2;
	}
	execve(tv[0], tv, NULL);
	printf("%s\n", name(errno));
	return 0;
}
