// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * own_listener PROG ARGS...: installs a seccomp filter of its own that
 * sends execve/execveat to a listener it answers itself (CONTINUE at
 * once, from a thread), then execs PROG: a supervised task trying to take
 * its execs from the daemon's supervisor. Prints "listener ok" or
 * "listener refused ERRNO" on stderr first.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *answer(void *arg)
{
	int fd = (int)(intptr_t)arg;

	for (;;) {
		struct seccomp_notif req;
		struct seccomp_notif_resp resp;

		memset(&req, 0, sizeof(req));
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req))
			continue;
		memset(&resp, 0, sizeof(resp));
		resp.id = req.id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	pthread_t t;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: own_listener PROG ARGS...\n");
		return 2;
	}
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (fd < 0) {
		fprintf(stderr, "listener refused %d\n", errno);
	} else {
		fprintf(stderr, "listener ok\n");
		if (pthread_create(&t, NULL, answer, (void *)(intptr_t)fd))
			return 3;
	}
	execv(argv[1], argv + 1);
	fprintf(stderr, "execv: %s\n", strerror(errno));
	return 126;
}
