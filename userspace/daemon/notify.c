// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "daemon/notify.h"
#include "util/log.h"

/* Fills *sa from $NOTIFY_SOCKET; returns the address length, 0 when unset, or -errno. */
static int notify_addr(struct sockaddr_un *sa)
{
	const char *e = getenv("NOTIFY_SOCKET");
	size_t n;

	if (!e || !*e)
		return 0;
	n = strlen(e);
	/* "vsock:CID:PORT" (a VM's manager) is not ours to reach */
	if ((e[0] != '/' && e[0] != '@') || n < 2 || n >= sizeof(sa->sun_path))
		return -EAFNOSUPPORT;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, e, n);
	if (e[0] == '@')
		sa->sun_path[0] = '\0';	/* abstract: the name is the n bytes, no NUL after */
	else
		n++;
	return (int)(offsetof(struct sockaddr_un, sun_path) + n);
}

int notify_send(const char *state)
{
	static int last_err;
	struct sockaddr_un sa;
	int len, fd, err = 0;

	len = notify_addr(&sa);
	if (len > 0) {
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			err = -errno;
		else if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
				(socklen_t)len) < 0)
			err = -errno;
		if (fd >= 0)
			close(fd);
	} else {
		err = len;
	}
	if (err && err != last_err)
		p_warn("cannot notify the service manager at NOTIFY_SOCKET=%s: %s",
		       getenv("NOTIFY_SOCKET"), strerror(-err));
	last_err = err;
	return err;
}

int notify_reloading(void)
{
	struct timespec ts;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
	return notify_send(msg);
}
