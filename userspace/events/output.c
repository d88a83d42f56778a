// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "events/output.h"

struct mark {
	size_t end;			/* offset just past the record's '\n' */
	enum eg_rec_kind kind;
};

struct eg_output {
	struct eg_output_opts o;
	char *path;
	int fd;
	bool is_stdout;
	bool tty;
	struct sbuf buf;
	struct mark *marks;
	size_t nmarks, cap_marks;
	uint64_t size;			/* bytes in the current file, as we wrote them */
	struct eg_output_stats st;
	void (*rotate_cb)(struct eg_output *o, const char *prev, void *arg);
	void *rotate_arg;
	pthread_t zthread;
	bool zrunning;
	char *zpath;			/* the file the compressor works on */
};

static int check_existing(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file; refusing to write events to it", path);
		return -EINVAL;
	}
	if (st.st_uid != 0) {
		snprintf(err, errlen, "%s is owned by uid %u, not root; refusing to append to it",
			 path, (unsigned)st.st_uid);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s is writable by group or others (mode %04o); fix with chmod go-w",
			 path, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

static int open_file(struct eg_output *o, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	fd = open(o->path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0) {
		rc = check_existing(fd, o->path, err, errlen);
		if (rc) {
			close(fd);
			return rc;
		}
	} else if (errno == ENOENT) {
		fd = open(o->path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
		if (fd < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot create %s: %s", o->path, strerror(errno));
			return rc;
		}
		/* umask may have taken bits; the mode is part of the contract */
		if (fchmod(fd, 0640) ||
		    (o->o.gid != (gid_t)-1 && fchown(fd, 0, o->o.gid))) {
			rc = -errno;
			snprintf(err, errlen, "cannot set the owner or mode of %s: %s", o->path, strerror(errno));
			close(fd);
			return rc;
		}
	} else {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s%s", o->path, strerror(errno),
			 errno == ELOOP ? " (a symlink: give the real path)" : "");
		return rc;
	}
	/* O_NONBLOCK was only there so that opening a FIFO cannot hang */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	if (fstat(fd, &st) == 0)
		o->size = st.st_size;
	o->fd = fd;
	return 0;
}

int output_open(const struct eg_output_opts *opts, struct eg_output **ret, char *err, size_t errlen)
{
	struct eg_output *o = calloc(1, sizeof(*o));
	int rc;

	if (!o) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	o->o = *opts;
	o->fd = -1;
	if (!opts->path || !strcmp(opts->path, "-")) {
		o->is_stdout = true;
		o->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (o->fd < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot use stdout: %s", strerror(errno));
			free(o);
			return rc;
		}
		o->tty = isatty(o->fd);
	} else {
		o->path = strdup(opts->path);
		if (!o->path) {
			free(o);
			return -ENOMEM;
		}
		rc = open_file(o, err, errlen);
		if (rc) {
			free(o->path);
			free(o);
			return rc;
		}
	}
	*ret = o;
	return 0;
}

struct sbuf *output_buf(struct eg_output *o)
{
	return &o->buf;
}

void output_end(struct eg_output *o, enum eg_rec_kind kind)
{
	if (o->nmarks == o->cap_marks) {
		size_t cap = o->cap_marks ? o->cap_marks * 2 : 1024;
		struct mark *m = realloc(o->marks, cap * sizeof(*m));

		if (!m) {
			o->buf.oom = true;
			return;
		}
		o->marks = m;
		o->cap_marks = cap;
	}
	o->marks[o->nmarks++] = (struct mark){ o->buf.len, kind };
}

size_t output_pending(const struct eg_output *o)
{
	return o->buf.len;
}

const struct eg_output_stats *output_stats(const struct eg_output *o)
{
	return &o->st;
}

uint64_t output_dropped_total(const struct eg_output *o)
{
	uint64_t n = 0;
	int k;

	for (k = 0; k < EG_REC__COUNT; k++)
		n += o->st.dropped[k];
	return n;
}

bool output_is_terminal(const struct eg_output *o)
{
	return o->tty;
}

const char *output_path(const struct eg_output *o)
{
	return o->path ? o->path : "stdout";
}

void output_set_rotate_cb(struct eg_output *o, void (*fn)(struct eg_output *, const char *, void *),
			  void *arg)
{
	o->rotate_cb = fn;
	o->rotate_arg = arg;
}

/* ---- rotation ------------------------------------------------------------ */

static void *compress_main(void *arg)
{
	struct eg_output *o = arg;
	char gz[PATH_MAX + 8], tmp[PATH_MAX + 16], buf[65536];
	gzFile out = NULL;
	ssize_t n;
	int in, fd, ok = 0;

	snprintf(gz, sizeof(gz), "%s.gz", o->zpath);
	snprintf(tmp, sizeof(tmp), "%s.gz.tmp", o->zpath);
	in = open(o->zpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return NULL;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	/* best effort: the plain file had the same owner */
	if (fd >= 0 && o->o.gid != (gid_t)-1 && fchown(fd, 0, o->o.gid)) {
	}
	if (fd >= 0)
		out = gzdopen(fd, "wb6");
	if (out) {
		ok = 1;
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (gzwrite(out, buf, (unsigned)n) != (int)n) {
				ok = 0;
				break;
			}
		if (n < 0)
			ok = 0;
		if (gzclose(out) != Z_OK)
			ok = 0;
	} else if (fd >= 0) {
		close(fd);
	}
	close(in);
	/* Only a complete .gz replaces the plain file; else the plain one stays. */
	if (ok && !rename(tmp, gz))
		unlink(o->zpath);
	else
		unlink(tmp);
	return NULL;
}

static void wait_compressor(struct eg_output *o)
{
	if (o->zrunning) {
		pthread_join(o->zthread, NULL);
		o->zrunning = false;
	}
	free(o->zpath);
	o->zpath = NULL;
}

static void rotated_name(const struct eg_output *o, unsigned int k, bool gz, char *buf, size_t len)
{
	snprintf(buf, len, "%s.%u%s", o->path, k, gz ? ".gz" : "");
}

static int rotate(struct eg_output *o)
{
	char from[PATH_MAX + 32], to[PATH_MAX + 32], err[256];
	unsigned int k;
	int oldfd = o->fd, rc;

	wait_compressor(o);
	if (o->o.keep == 0) {
		/* keep nothing: start the file over */
		if (ftruncate(o->fd, 0))
			return -errno;
		o->size = 0;
		o->st.rotations++;
		if (o->rotate_cb)
			o->rotate_cb(o, NULL, o->rotate_arg);
		return 0;
	}
	rotated_name(o, o->o.keep, true, to, sizeof(to));
	unlink(to);
	rotated_name(o, o->o.keep, false, to, sizeof(to));
	unlink(to);
	for (k = o->o.keep - 1; k >= 1; k--) {
		rotated_name(o, k, true, from, sizeof(from));
		rotated_name(o, k + 1, true, to, sizeof(to));
		rename(from, to);
		rotated_name(o, k, false, from, sizeof(from));
		rotated_name(o, k + 1, false, to, sizeof(to));
		rename(from, to);
	}
	rotated_name(o, 1, false, to, sizeof(to));
	if (rename(o->path, to))
		return -errno;
	rc = open_file(o, err, sizeof(err));
	if (rc) {
		/* put it back and keep writing the old file */
		rename(to, o->path);
		o->fd = oldfd;
		return rc;
	}
	close(oldfd);
	o->st.rotations++;
	o->zpath = strdup(to);
	if (o->zpath && !pthread_create(&o->zthread, NULL, compress_main, o))
		o->zrunning = true;
	if (o->rotate_cb) {
		const char *slash = strrchr(to, '/');

		o->rotate_cb(o, slash ? slash + 1 : to, o->rotate_arg);
	}
	return 0;
}

/* ---- writing ------------------------------------------------------------- */

static void drop_from(struct eg_output *o, size_t first_mark)
{
	size_t i;

	for (i = first_mark; i < o->nmarks; i++)
		o->st.dropped[o->marks[i].kind]++;
}

static void count_written(struct eg_output *o, size_t upto_mark)
{
	size_t i;

	for (i = 0; i < upto_mark; i++)
		o->st.written[o->marks[i].kind]++;
}

/* Writes the buffer: whole records are counted written, the rest dropped. */
static int write_buffer(struct eg_output *o)
{
	size_t off = 0, m = 0;
	int rc = 0;

	if (o->buf.oom) {
		/* the buffer may hold a cut record: drop everything, count it */
		drop_from(o, 0);
		rc = -ENOMEM;
		goto out;
	}
	while (off < o->buf.len) {
		ssize_t n = write(o->fd, o->buf.data + off, o->buf.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		off += n;
	}
	/* records wholly written */
	while (m < o->nmarks && o->marks[m].end <= off)
		m++;
	count_written(o, m);
	if (rc) {
		size_t whole = m ? o->marks[m - 1].end : 0;

		o->st.write_errors++;
		o->st.last_error = rc;
		/* a partial record reached the file: cut it back to the last whole line */
		if (off > whole && !o->is_stdout) {
			struct stat st;

			if (!fstat(o->fd, &st) && (uint64_t)st.st_size >= off - whole &&
			    !ftruncate(o->fd, st.st_size - (off - whole)))
				off = whole;
		}
		drop_from(o, m);
	} else {
		o->st.last_error = 0;
	}
	o->size += off;
out:
	sbuf_reset(&o->buf);
	o->buf.oom = false;
	o->nmarks = 0;
	return rc;
}

/*
 * A file past max_size is rotated when there is something to write: the
 * records waiting go to the new file, after the record that starts it (so
 * a file never ends up holding only that record, and the stop record ends
 * the file it is in).
 */
static void rotate_before(struct eg_output *o)
{
	struct sbuf pending = o->buf;
	struct mark *marks = o->marks;
	size_t nmarks = o->nmarks, cap = o->cap_marks;
	int r;

	o->buf = (struct sbuf){};
	o->marks = NULL;
	o->nmarks = o->cap_marks = 0;
	r = rotate(o);
	if (r)
		o->st.last_error = r;
	/* the rotation callback buffered the new file's first record */
	if (o->buf.len)
		write_buffer(o);
	sbuf_free(&o->buf);
	free(o->marks);
	o->buf = pending;
	o->marks = marks;
	o->nmarks = nmarks;
	o->cap_marks = cap;
}

int output_flush(struct eg_output *o)
{
	if (!o)
		return 0;
	if (o->buf.len && o->o.max_size && o->path && o->size >= o->o.max_size)
		rotate_before(o);
	return write_buffer(o);
}

int output_reopen(struct eg_output *o)
{
	char err[256];
	int oldfd = o->fd, rc;

	if (o->is_stdout)
		return 0;
	output_flush(o);
	rc = open_file(o, err, sizeof(err));
	if (rc) {
		o->fd = oldfd;
		return rc;
	}
	close(oldfd);
	return 0;
}

void output_close(struct eg_output *o)
{
	if (!o)
		return;
	output_flush(o);
	wait_compressor(o);
	if (o->fd >= 0)
		close(o->fd);
	sbuf_free(&o->buf);
	free(o->marks);
	free(o->path);
	free(o);
}
