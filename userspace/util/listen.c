// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Listening sockets (util/listen.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "util/listen.h"

int eg_listen(const struct sockaddr *sa, socklen_t len, int backlog, mode_t mode)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
	int fd, one = 1, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, sa, len))
		goto fail;
	/* a path, not an abstract name: its file's mode says who may connect */
	if (sa->sa_family == AF_UNIX && mode && un->sun_path[0] && chmod(un->sun_path, mode))
		goto fail;
	if (listen(fd, backlog))
		goto fail;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

int eg_listen_adopt(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fcntl(fd, F_SETFD, FD_CLOEXEC) || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK))
		return -errno;
	return 0;
}
