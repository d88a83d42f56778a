// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A log that keeps the latest output by rotating two files (procs/plog.h).
 * Two plain files rather than a ring inside one: each is readable as it is
 * (cat PATH.1 PATH is the kept output, in order), and offsets need no
 * header to be found again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "procs/plog.h"
#include "procs/text.h"

void plog_init(struct eg_plog *l)
{
	memset(l, 0, sizeof(*l));
	l->fd = l->old_fd = -1;
}

static int create(const char *path)
{
	return open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
}

int plog_open(struct eg_plog *l, const char *path, uint64_t bound)
{
	int fd;

	if (!bound || strlen(path) + 3 > sizeof(l->path))
		return -EINVAL;
	fd = create(path);
	if (fd < 0)
		return -errno;
	plog_init(l);
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->bound = bound;
	l->fd = fd;
	return 0;
}

static void old_name(const struct eg_plog *l, char *buf, size_t len)
{
	snprintf(buf, len, "%s.1", l->path);
}

/* PATH becomes PATH.1, a new PATH starts at the stream's end. */
static int rotate(struct eg_plog *l)
{
	char old[PATH_MAX + 2];
	bool moved;
	int fd;

	old_name(l, old, sizeof(old));
	moved = !rename(l->path, old);
	if (!moved) {
		if (errno != ENOENT)
			return -errno;
		/* PATH was removed (by hand, or the age cleaning): the PATH.1
		 * there is no longer what old_fd reads, and goes too */
		unlink(old);
	}
	fd = create(l->path);
	if (fd < 0) {
		int err = -errno;

		if (moved) {
			/* PATH.1 holds what PATH held: the previous PATH.1 is gone */
			if (l->old_fd >= 0)
				close(l->old_fd);
			l->old_fd = -1;
			rename(old, l->path);
		}
		return err;
	}
	if (l->old_fd >= 0)
		close(l->old_fd);
	l->old_fd = l->fd;
	l->old_base = l->base;
	l->fd = fd;
	l->base = l->size;
	l->rotations++;
	return 0;
}

int plog_append(struct eg_plog *l, const void *buf, size_t n)
{
	const char *p = buf;
	int err = 0;

	if (l->fd < 0) {
		l->failed += n;
		return -EBADF;
	}
	while (n) {
		uint64_t used = l->size - l->base, room;
		ssize_t w;

		if (used >= l->bound) {
			err = rotate(l);
			if (err) {
				l->failed += n;
				return err;
			}
			used = 0;
		}
		room = l->bound - used;
		w = pwrite(l->fd, p, n < room ? n : room, used);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			l->failed += n;
			return err;
		}
		l->size += w;
		p += w;
		n -= w;
	}
	return 0;
}

uint64_t plog_first(const struct eg_plog *l)
{
	return l->old_fd >= 0 ? l->old_base : l->base;
}

ssize_t plog_pread(const struct eg_plog *l, void *buf, size_t n, uint64_t off)
{
	char *p = buf;
	size_t done = 0;

	if (off < plog_first(l))
		return -ERANGE;
	while (done < n && off < l->size) {
		bool old = off < l->base;
		uint64_t end = old ? l->base : l->size;
		size_t want = n - done;
		ssize_t r;

		if (want > end - off)
			want = end - off;
		r = pread(old ? l->old_fd : l->fd, p + done, want, off - (old ? l->old_base : l->base));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;		/* a file shorter than its count: what there is */
		done += r;
		off += r;
	}
	return done;
}

static ssize_t rd(void *arg, void *buf, size_t n, uint64_t off)
{
	return plog_pread(arg, buf, n, off);
}

int64_t plog_tail_offset(const struct eg_plog *l, unsigned int n, uint64_t max_scan)
{
	return eg_tail_offset(rd, (void *)l, plog_first(l), l->size, n, max_scan);
}

void plog_close(struct eg_plog *l, bool remove)
{
	char old[PATH_MAX + 2];

	if (remove && l->path[0]) {
		old_name(l, old, sizeof(old));
		unlink(l->path);
		unlink(old);
	}
	if (l->fd >= 0)
		close(l->fd);
	if (l->old_fd >= 0)
		close(l->old_fd);
	l->fd = l->old_fd = -1;
}
