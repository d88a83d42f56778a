// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The datagram socket both sinks share: connect lazily, send without waiting, count. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "events/sinks.h"
#include "util/clock.h"

#define RECONNECT_MS	1000	/* no listener: try again at most this often */

struct eg_sink {
	struct eg_tap tap;
	const char *kind;
	char *path;
	bool journal;
	int fd;
	uint64_t next_connect_ms;
	struct sbuf msg;
	char host[256];
	int pid;
	struct eg_sink_stats st;
};

static int sink_connect(struct eg_sink *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (s->fd >= 0)
		return 0;
	if (eg_mono_ms() < s->next_connect_ms)
		return -EAGAIN;
	s->next_connect_ms = eg_mono_ms() + RECONNECT_MS;
	if (strlen(s->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, s->path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	s->fd = fd;
	return 0;
}

/* journald takes a datagram too large for the socket as a sealed memfd (its native protocol) */
static int send_memfd(struct eg_sink *s)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {};
	struct msghdr mh = { .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = memfd_create("execgate-journal", MFD_CLOEXEC | MFD_ALLOW_SEALING), rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s->msg.data, s->msg.len) != (ssize_t)s->msg.len ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)) {
		close(fd);
		return -EIO;
	}
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(s->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static void on_record(struct eg_tap *t, const char *line, size_t len, enum eg_rec_kind kind, int severity)
{
	struct eg_sink *s = (struct eg_sink *)t;
	int rc;

	(void)kind;
	if (len && line[len - 1] == '\n')
		len--;
	sbuf_reset(&s->msg);
	rc = s->journal ? sink_format_journal(&s->msg, line, len, severity)
			: sink_format_syslog(&s->msg, line, len, severity, s->host, s->pid);
	if (!rc && s->msg.oom)
		rc = -ENOMEM;
	if (!rc)
		rc = sink_connect(s);
	if (!rc && send(s->fd, s->msg.data, s->msg.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		rc = -errno;
		if (rc == -EMSGSIZE && s->journal)
			rc = send_memfd(s);
		if (rc == -ECONNREFUSED || rc == -ENOTCONN || rc == -ENOENT) {
			/* the listener went away (restarted): connect again later */
			close(s->fd);
			s->fd = -1;
		}
	}
	if (rc) {
		s->st.dropped++;
		s->st.last_error = rc;
	} else {
		s->st.sent++;
		s->st.last_error = 0;
	}
}

int sink_new(const char *kind, const char *path, int min_severity, struct eg_sink **ret)
{
	struct eg_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->journal = !strcmp(kind, "journal");
	s->kind = s->journal ? "journal" : "syslog";
	s->path = strdup(path ? path : s->journal ? JOURNAL_DEFAULT_SOCKET : SYSLOG_DEFAULT_SOCKET);
	if (!s->path) {
		free(s);
		return -ENOMEM;
	}
	s->fd = -1;
	s->tap.fn = on_record;
	s->tap.min_severity = min_severity;
	if (gethostname(s->host, sizeof(s->host)) || !s->host[0])
		strcpy(s->host, "-");
	s->host[sizeof(s->host) - 1] = '\0';
	s->pid = getpid();
	sink_connect(s);	/* a first try; a missing listener is counted per record */
	*ret = s;
	return 0;
}

void sink_free(struct eg_sink *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	sbuf_free(&s->msg);
	free(s->path);
	free(s);
}

struct eg_tap *sink_tap(struct eg_sink *s)
{
	return &s->tap;
}

const struct eg_sink_stats *sink_stats(const struct eg_sink *s)
{
	return &s->st;
}

const char *sink_path(const struct eg_sink *s)
{
	return s->path;
}

const char *sink_kind(const struct eg_sink *s)
{
	return s->kind;
}

void sink_restore_stats(struct eg_sink *s, const struct eg_sink_stats *st)
{
	s->st.sent = st->sent;
	s->st.dropped = st->dropped;
}
