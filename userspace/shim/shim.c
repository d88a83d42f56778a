// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * execgate-shim: installed at /bin/sh and /bin/bash by `execgate shim
 * install`, the real shells moved to sh.real and bash.real beside it.
 *
 * Invoked as sh it runs sh.real, as bash (or -bash) bash.real, with every
 * argument and argv[0] as given. Whether it already runs inside a
 * supervised session is asked of the daemon (the `whoami` op, answered from
 * the kernel's task storage for this very process), never read from the
 * environment: inside one it execs the real shell directly; outside it runs
 * it through `execgate exec`, so the shell and everything below it are
 * judged. When the daemon cannot be asked the shim refuses (exit 126)
 * unless the install said --fail-open.
 *
 * libc only and small: every shell on the machine starts here.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "shim/shimlib.h"

/* Kept in the binary so install/uninstall can tell a shim from a shell. */
__attribute__((used)) static const char marker[] = "\0" SHIM_MARKER "\0";

#define EXIT_REFUSED 126

static int die(const char *what)
{
	fprintf(stderr, "execgate-shim: %s\n", what);
	return EXIT_REFUSED;
}

/* 1: in a session, 0: not, -errno: the daemon could not be asked; -ECONNRESET: it closed at once. */
static int ask_in_session(const char *sock)
{
	static const char req[] = "{\"op\":\"whoami\"}\n";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 5 };
	char buf[2048];
	size_t got = 0;
	int fd, rc;

	if (strlen(sock) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, sock, strlen(sock));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != sizeof(req) - 1) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while (got < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);

		if (n < 0 && !got) {
			rc = -errno;	/* no answer in time (EAGAIN): not a refusal, not asked again */
			close(fd);
			return rc;
		}
		if (n <= 0)
			break;
		got += n;
		if (memchr(buf, '\n', got))
			break;
	}
	close(fd);
	buf[got] = 0;
	if (!got)
		return -ECONNRESET;	/* closed (EOF) before any answer: no room for us now */
	if (!memchr(buf, '\n', got) || !strstr(buf, "\"ok\":true"))
		return -EPROTO;
	if (strstr(buf, "\"in_session\":true"))
		return 1;
	if (strstr(buf, "\"in_session\":false"))
		return 0;
	return -EPROTO;
}

/*
 * The daemon closes a connection at once when it has no room for it (its
 * bounds: a session's share, a user's): a burst of shells (make -j) may
 * meet that for a moment. Asked again for up to about 3 s before the
 * answer counts as "no daemon".
 */
static int in_session(const char *sock)
{
	unsigned int i, ms = 5;
	int rc;

	for (i = 0;; i++) {
		rc = ask_in_session(sock);
		if (rc != -ECONNRESET || i == 16)
			return rc;
		usleep(ms * 1000);
		if (ms < 250)
			ms *= 2;
	}
}

static int read_conf(struct shim_conf *c, char *err, size_t errlen)
{
	char buf[SHIM_CONF_MAX];
	ssize_t n;
	int fd = open(SHIM_CONF_PATH, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		snprintf(err, errlen, "cannot read %s: %s", SHIM_CONF_PATH, strerror(errno));
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || n == sizeof(buf)) {
		snprintf(err, errlen, "%s: unreadable or too big", SHIM_CONF_PATH);
		return -1;
	}
	if (shim_conf_parse(buf, n, c, err, errlen))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const bases[] = { "/run/execgate/shim", "/tmp/execgate-shim", NULL };
	char self[PATH_MAX], real[PATH_MAX + 8], msg[PATH_MAX + 256], name[SHIM_NAME_MAX + 1];
	const char *inv = argc > 0 && argv[0] ? argv[0] : "sh", *base, *shell;
	struct shim_conf c;
	char **nargv;
	ssize_t n;
	int i, k = 0, rc;

	(void)marker;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return die("cannot find where this shim is (/proc/self/exe)");
	self[n] = 0;
	base = strrchr(inv, '/') ? strrchr(inv, '/') + 1 : inv;
	if (*base == '-')
		base++;
	if (!strcmp(base, "bash") || !strcmp(base, "sh"))
		shell = base;
	else if (!strcmp(strrchr(self, '/') + 1, "bash"))
		shell = "bash";
	else
		shell = "sh";
	*strrchr(self, '/') = 0;
	snprintf(real, sizeof(real), "%s/%s.real", self[0] ? self : "", shell);

	if (read_conf(&c, msg, sizeof(msg)))
		return die(msg);
	rc = in_session(c.socket);
	if (rc == 1) {
		execv(real, argv);
		snprintf(msg, sizeof(msg), "cannot run %s: %s", real, strerror(errno));
		return die(msg);
	}
	if (rc < 0) {
		if (!c.fail_open) {
			snprintf(msg, sizeof(msg), "no execgate daemon answers on %s (%s); refusing to run %s unsupervised",
				 c.socket, strerror(-rc), shell);
			return die(msg);
		}
		fprintf(stderr, "execgate-shim: warning: no execgate daemon answers on %s (%s); "
			"running %s unsupervised (installed with --fail-open)\n", c.socket, strerror(-rc), shell);
		execv(real, argv);
		snprintf(msg, sizeof(msg), "cannot run %s: %s", real, strerror(errno));
		return die(msg);
	}

	shim_session_name(getenv("EXECGATE_SESSION_ID"), getenv("EXECGATE_SESSION_FILE"), bases,
			  name, sizeof(name));
	nargv = calloc(argc + 12, sizeof(*nargv));
	if (!nargv)
		return die("out of memory");
	nargv[k++] = "execgate";
	nargv[k++] = "exec";
	nargv[k++] = "-p";
	nargv[k++] = c.pin_path;
	nargv[k++] = "--session";
	nargv[k++] = name;
	nargv[k++] = "--argv0";
	nargv[k++] = (char *)inv;
	nargv[k++] = "--";
	nargv[k++] = real;
	for (i = 1; i < argc; i++)
		nargv[k++] = argv[i];
	nargv[k] = NULL;
	execv(c.execgate, nargv);
	snprintf(msg, sizeof(msg), "cannot run %s: %s", c.execgate, strerror(errno));
	return die(msg);
}
