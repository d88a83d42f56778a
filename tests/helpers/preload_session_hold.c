// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A launcher caught between its two requests: LD_PRELOAD into `execgate
 * exec` (a process the kernel marks as a launcher), it opens a session on
 * the control socket EG_TEST_SOCKET, prints the daemon's reply, and never
 * attaches a listener: it waits, its connection open, until killed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

__attribute__((constructor)) static void hold(void)
{
	static const char req[] = "{\"op\":\"session_open\"}\n";
	const char *sock = getenv("EG_TEST_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char reply[4096];
	size_t len = 0;
	ssize_t n;
	int s;

	if (!sock)
		return;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(s, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		perror("preload_session_hold");
		_exit(2);
	}
	while (len < sizeof(reply) && (n = read(s, reply + len, sizeof(reply) - len)) > 0) {
		len += n;
		if (memchr(reply, '\n', len))
			break;
	}
	fwrite(reply, 1, len, stdout);
	fflush(stdout);
	for (;;)
		pause();
}
