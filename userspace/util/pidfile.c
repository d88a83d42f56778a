// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/pidfile.h"

int pidfile_path(const char *pin_path, char *buf, size_t len)
{
	char name[256];
	size_t i, j = 0;
	int n;

	if (!pin_path || !strcmp(pin_path, EG_PIN_PATH_DEFAULT)) {
		n = snprintf(buf, len, "%s/daemon.pid", EG_RUN_DIR);
	} else {
		/* /sys/fs/bpf/x/y -> daemon-sys-fs-bpf-x-y.pid */
		for (i = 0; pin_path[i] && j < sizeof(name) - 1; i++) {
			char c = pin_path[i];

			if (c == '/' && (j == 0 || name[j - 1] == '-'))
				continue;
			name[j++] = (c == '/') ? '-' : c;
		}
		while (j && name[j - 1] == '-')
			j--;
		name[j] = '\0';
		n = snprintf(buf, len, "%s/daemon-%s.pid", EG_RUN_DIR, name);
	}
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

static pid_t read_pid(int fd)
{
	char b[32] = "";
	ssize_t n = pread(fd, b, sizeof(b) - 1, 0);

	if (n <= 0)
		return 0;
	b[n] = '\0';
	return (pid_t)strtol(b, NULL, 10);
}

int pidfile_acquire(const char *path, int *ret_fd, pid_t *ret_pid)
{
	char b[32];
	int fd, n;

	if (mkdir(EG_RUN_DIR, 0755) && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno == EWOULDBLOCK ? -EBUSY : -errno;

		if (ret_pid)
			*ret_pid = read_pid(fd);
		close(fd);
		return err;
	}
	n = snprintf(b, sizeof(b), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, b, n, 0) != n) {
		int err = -errno;

		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

int pidfile_read(const char *path, pid_t *ret_pid)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	pid_t pid;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	/* A lock we can take means nobody holds it: no daemon. */
	if (!flock(fd, LOCK_SH | LOCK_NB)) {
		close(fd);
		return -ESRCH;
	}
	pid = read_pid(fd);
	close(fd);
	if (pid <= 0)
		return -ESRCH;
	*ret_pid = pid;
	return 0;
}

void pidfile_release(const char *path, int fd)
{
	if (fd < 0)
		return;
	unlink(path);
	close(fd);
}
