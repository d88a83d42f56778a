// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A launcher that does not play by the rules: LD_PRELOAD into
 * `execgate exec` (a process the kernel marks as a launcher), it asks the
 * daemon for a session before main runs, passing the file EG_TEST_POLICY
 * as the session policy as it is (open(2), no memfd), on the control
 * socket EG_TEST_SOCKET; prints the daemon's reply and exits.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

__attribute__((constructor)) static void ask(void)
{
	static const char req[] = "{\"op\":\"session_open\",\"policy\":true}\n";
	const char *sock = getenv("EG_TEST_SOCKET"), *file = getenv("EG_TEST_POLICY");
	char cbuf[CMSG_SPACE(sizeof(int))] = {}, reply[4096];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct iovec iov = { (void *)req, sizeof(req) - 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	size_t len = 0;
	ssize_t n;
	int s, fd;

	if (!sock || !file)
		return;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	fd = open(file, O_RDONLY);
	if (s < 0 || fd < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("preload_session_open");
		_exit(2);
	}
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(s, &mh, 0) != (ssize_t)iov.iov_len) {
		perror("preload_session_open: sendmsg");
		_exit(2);
	}
	while (len < sizeof(reply) && (n = read(s, reply + len, sizeof(reply) - len)) > 0) {
		len += n;
		if (memchr(reply, '\n', len))
			break;
	}
	fwrite(reply, 1, len, stdout);
	fflush(stdout);
	_exit(0);
}
