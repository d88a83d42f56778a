// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "daemon/instance.h"

static pid_t read_pid(const char *path)
{
	char b[32] = "";
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return 0;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = '\0';
	return (pid_t)strtol(b, NULL, 10);
}

int instance_lock(const struct eg_paths *p, struct eg_instance *ret, pid_t *ret_other)
{
	char parent[PATH_MAX], b[32];
	char *slash;
	int fd, n, rc;

	*ret_other = 0;
	snprintf(parent, sizeof(parent), "%s", p->pin);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -EINVAL;
	*slash = '\0';
	rc = eg_on_bpffs(parent);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return -ENOTDIR;
	if (mkdir(p->pin, 0700) && errno != EEXIST)
		return -errno;
	fd = open(p->pin, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	/* readers (instance_running) hold a shared lock for an instant: retry a little */
	for (n = 0; flock(fd, LOCK_EX | LOCK_NB); n++) {
		if (errno != EWOULDBLOCK || n == 20) {
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(fd);
			if (rc == -EBUSY)
				*ret_other = read_pid(p->pidfile);
			return rc;
		}
		usleep(10000);
	}
	ret->dir_fd = fd;
	if (mkdir(EG_RUN_DIR, 0755) && errno != EEXIST) {
		rc = -errno;
		goto fail;
	}
	snprintf(ret->pidfile, sizeof(ret->pidfile), "%s", p->pidfile);
	snprintf(ret->pin, sizeof(ret->pin), "%s", p->pin);
	ret->pid_fd = open(p->pidfile, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (ret->pid_fd < 0) {
		rc = -errno;
		goto fail;
	}
	n = snprintf(b, sizeof(b), "%d\n", (int)getpid());
	if (ftruncate(ret->pid_fd, 0) || pwrite(ret->pid_fd, b, n, 0) != n) {
		rc = -errno;
		close(ret->pid_fd);
		goto fail;
	}
	return 0;
fail:
	close(fd);
	return rc;
}

void instance_unlock(struct eg_instance *in)
{
	if (!in || in->dir_fd <= 0)
		return;
	unlink(in->pidfile);
	close(in->pid_fd);
	rmdir(in->pin);
	close(in->dir_fd);
	in->dir_fd = -1;
}

int instance_running(const struct eg_paths *p, pid_t *ret_pid)
{
	int fd = open(p->pin, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	/* A lock we can take means nobody holds it. */
	if (!flock(fd, LOCK_SH | LOCK_NB)) {
		flock(fd, LOCK_UN);
		close(fd);
		return 0;
	}
	close(fd);
	if (ret_pid)
		*ret_pid = read_pid(p->pidfile);
	return 1;
}
