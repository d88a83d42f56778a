// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A launcher that execs while the daemon answers it: LD_PRELOAD into
 * `execgate exec` (a process the kernel marks as a launcher), it asks the
 * daemon for a session on the control socket EG_TEST_SOCKET, waits until
 * the file EG_STALL_MARK exists (the daemon, under preload_stall_bpf, has
 * stopped before it marks the launcher's session), and execs
 * `/bin/sh -c EG_TEST_AFTER` with the connection on fd 3: the shell reads
 * the daemon's reply there.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void ask(void)
{
	static const char req[] = "{\"op\":\"session_open\"}\n";
	const char *sock = getenv("EG_TEST_SOCKET"), *mark = getenv("EG_STALL_MARK");
	const char *after = getenv("EG_TEST_AFTER");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timespec ms = { 0, 10 * 1000 * 1000 };
	int s, i;

	if (!sock || !mark || !after)
		return;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(s, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
		perror("preload_launcher_execs");
		_exit(2);
	}
	for (i = 0; i < 1000 && access(mark, F_OK); i++)
		nanosleep(&ms, NULL);
	if (dup2(s, 3) != 3) {
		perror("preload_launcher_execs: dup2");
		_exit(2);
	}
	unsetenv("LD_PRELOAD");
	execl("/bin/sh", "sh", "-c", after, (char *)NULL);
	perror("preload_launcher_execs: exec");
	_exit(2);
}
