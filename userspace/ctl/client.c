// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "ctl/client.h"
#include "util/json.h"
#include "util/paths.h"

int ctl_connect(const char *pin_path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct eg_paths p;
	int fd, err;

	err = eg_paths_resolve(pin_path, &p);
	if (err)
		return err;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p.sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

const char *ctl_connect_hint(int err)
{
	switch (-err) {
	case ENOENT:
	case ECONNREFUSED:
		return "no daemon is running";
	case EACCES:
	case EPERM:
		return "permission denied on the control socket";
	case EINVAL:
		return "--pin-path must be an absolute path";
	default:
		return strerror(-err);
	}
}

int ctl_send_request(int fd, const char *json, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(8 * sizeof(int))] = {};
	struct iovec iov[2] = { { (void *)json, len }, { "\n", 1 } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t sent = 0, total = len + 1;

	if (nfds > 8)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	while (sent < total) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		sent += n;
		/* the fds went with the first bytes; send the rest plainly */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		while (n > 0 && mh.msg_iovlen) {
			if ((size_t)n >= mh.msg_iov[0].iov_len) {
				n -= mh.msg_iov[0].iov_len;
				mh.msg_iov++;
				mh.msg_iovlen--;
			} else {
				mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
				mh.msg_iov[0].iov_len -= n;
				n = 0;
			}
		}
	}
	return 0;
}

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int ctl_read_line(int fd, struct sbuf *line, int timeout_ms, size_t max)
{
	long long deadline = timeout_ms >= 0 ? mono_ms() + timeout_ms : -1;
	bool peek = true;
	char buf[16384];

	sbuf_reset(line);
	for (;;) {
		ssize_t n;
		char *nl;

		if (deadline >= 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			long long left = deadline - mono_ms();
			int r;

			if (left < 0)
				return -ETIMEDOUT;
			r = poll(&pfd, 1, (int)left);
			if (r < 0 && errno == EINTR)
				continue;
			if (r == 0)
				return -ETIMEDOUT;
		}
		/*
		 * We must not read past the line (an fd passed on, a stream of
		 * lines read by the next call): look first, then take up to the
		 * newline. Not a socket: one byte at a time.
		 */
		n = peek ? recv(fd, buf, sizeof(buf), MSG_PEEK) : read(fd, buf, 1);
		if (n < 0 && errno == ENOTSOCK && peek) {
			peek = false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		nl = memchr(buf, '\n', n);
		if (nl)
			n = nl - buf + 1;
		if (peek) {
			ssize_t got = read(fd, buf, n);

			if (got < 0 && errno == EINTR)
				continue;
			if (got != n)
				return got < 0 ? -errno : -EIO;
		}
		if (line->len + n - (nl ? 1 : 0) > max)
			return -E2BIG;
		sbuf_put(line, buf, n - (nl ? 1 : 0));
		if (nl)
			return line->oom ? -ENOMEM : 0;
	}
}

int ctl_call(const char *pin_path, const char *json, json_t **ret, char *err, size_t errlen)
{
	return ctl_call_timeout(pin_path, json, 30000, ret, err, errlen);
}

int ctl_call_timeout(const char *pin_path, const char *json, int timeout_ms, json_t **ret,
		     char *err, size_t errlen)
{
	struct sbuf line = {};
	json_t *reply = NULL;
	int fd, rc;

	fd = ctl_connect(pin_path);
	if (fd < 0) {
		struct eg_paths p;

		if (fd == -ENOENT || fd == -ECONNREFUSED)
			snprintf(err, errlen, "no daemon is running for pin path %s (start one with "
				 "'execgate daemon', or pass its -p/--pin-path)",
				 eg_paths_resolve(pin_path, &p) ? pin_path : p.pin);
		else
			snprintf(err, errlen, "%s", ctl_connect_hint(fd));
		return fd;
	}
	rc = ctl_send_request(fd, json, strlen(json), NULL, 0);
	if (!rc)
		rc = ctl_read_line(fd, &line, timeout_ms, 64u << 20);
	close(fd);
	if (rc) {
		snprintf(err, errlen, "no reply from the daemon: %s",
			 rc == -EPIPE ? "it closed the connection" :
			 rc == -ETIMEDOUT ? "it did not answer in time (stopped or overloaded?)" : strerror(-rc));
		goto out;
	}
	/* bytes that are not UTF-8 (\udcXX, in argv and paths) read as U+FFFD: jansson refuses them */
	reply = json_load_record(line.data ? line.data : "", line.len);
	if (!json_is_object(reply)) {
		snprintf(err, errlen, "the daemon's reply is not a JSON object");
		rc = -EPROTO;
		goto out;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		const char *m = json_string_value(json_object_get(reply, "error"));

		snprintf(err, errlen, "%s", m ? m : "the daemon refused the request");
		rc = -EREMOTEIO;
	}
	*ret = reply;
	reply = NULL;
out:
	json_decref(reply);
	sbuf_free(&line);
	return rc;
}
