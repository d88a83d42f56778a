// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "events/output.h"
#include "events/rotated.h"
#include "util/clock.h"

#define ROTATE_RETRY_MS	5000	/* after a failed rotation: not at every flush */

struct mark {
	size_t end;			/* offset just past the record's '\n' */
	enum eg_rec_kind kind;
	int severity;
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
	pthread_t rthread;		/* the start's recovery (recover()) */
	bool rrunning;
	atomic_bool zstop;		/* the daemon stops: the recovery begins no other file */
	uint64_t rotate_after_ms;	/* after a failure: no rotation before this (monotonic) */
	char rotate_err[PATH_MAX + 256];	/* the last failure; "" once a rotation worked */
	uint64_t rotate_streaks;	/* runs of failures begun */
	bool rotate_failing;		/* in one now */
	bool cut_line;			/* the file opened last ended in a cut line, now ended */
	char cut_line_err[PATH_MAX + 128];	/* or why it could not be ended; "" */
	struct eg_tap *taps;
};

static void *recover_main(void *arg);

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

/* A new file at path: an fd, or -errno with the reason in err. */
static int create_file(const struct eg_output *o, const char *path, char *err, size_t errlen)
{
	int fd, rc;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
		return rc;
	}
	/* umask may have taken bits; the mode is part of the contract */
	if (fchmod(fd, 0640) ||
	    (o->o.gid != (gid_t)-1 && fchown(fd, 0, o->o.gid))) {
		rc = -errno;
		snprintf(err, errlen, "cannot set the owner or mode of %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	return fd;
}

/*
 * A daemon killed in the middle of a write leaves the file's last line cut:
 * it is ended with a '\n' here, so that the next record is a line of its
 * own and not glued to the cut one (a reader leaves the cut line out).
 */
static bool end_cut_line(struct eg_output *o, int fd, uint64_t size)
{
	ssize_t n;
	char last;

	if (!size || pread(fd, &last, 1, size - 1) != 1 || last == '\n')
		return false;
	n = write(fd, "\n", 1);
	if (n != 1) {
		/* a full disk: the open goes on (a handover must), counted and said; the next record is glued to the cut line */
		o->st.write_errors++;
		snprintf(o->cut_line_err, sizeof(o->cut_line_err), "cannot end the cut last line of %s: %s; "
			 "the first record is glued to it", o->path, n < 0 ? strerror(errno) : "short write");
		return false;
	}
	return true;
}

/* o is changed only once the file is open: a caller that fails keeps writing the file it had */
static int open_file(struct eg_output *o, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;
	uint64_t size = 0;
	bool cut = false;

	/* read too: the last byte tells a cut last line */
	fd = open(o->path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd >= 0) {
		rc = check_existing(fd, o->path, err, errlen);
		if (rc) {
			close(fd);
			return rc;
		}
	} else if (errno == ENOENT) {
		fd = create_file(o, o->path, err, errlen);
		if (fd < 0)
			return fd;
	} else {
		rc = -errno;
		snprintf(err, errlen, "cannot open %s: %s%s", o->path, strerror(errno),
			 errno == ELOOP ? " (a symlink: give the real path)" : "");
		return rc;
	}
	/* O_NONBLOCK was only there so that opening a FIFO cannot hang */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	o->cut_line_err[0] = '\0';
	if (fstat(fd, &st) == 0) {
		size = st.st_size;
		cut = end_cut_line(o, fd, size);
		size += cut;
	}
	o->size = size;
	o->cut_line = cut;
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
		/* what a compressor killed with its daemon left, finished beside the event loop */
		if (!pthread_create(&o->rthread, NULL, recover_main, o))
			o->rrunning = true;
	}
	*ret = o;
	return 0;
}

struct sbuf *output_buf(struct eg_output *o)
{
	return &o->buf;
}

void output_add_tap(struct eg_output *o, struct eg_tap *t)
{
	t->next = o->taps;
	o->taps = t;
}

void output_del_tap(struct eg_output *o, struct eg_tap *t)
{
	struct eg_tap **p;

	for (p = &o->taps; *p; p = &(*p)->next)
		if (*p == t) {
			*p = t->next;
			return;
		}
}

void output_end(struct eg_output *o, enum eg_rec_kind kind)
{
	output_end_sev(o, kind, kind == EG_REC_META ? EG_SEV_ALWAYS : 0);
}

void output_end_sev(struct eg_output *o, enum eg_rec_kind kind, int severity)
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
	o->marks[o->nmarks++] = (struct mark){ o->buf.len, kind, severity };
}

size_t output_pending(const struct eg_output *o)
{
	return o->buf.len;
}

const struct eg_output_stats *output_stats(const struct eg_output *o)
{
	return &o->st;
}

void output_restore_stats(struct eg_output *o, const struct eg_output_stats *st)
{
	int last_error = o->st.last_error;

	o->st = *st;
	o->st.last_error = last_error;
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

bool output_ended_cut_line(const struct eg_output *o)
{
	return o->cut_line;
}

const char *output_cut_line_error(const struct eg_output *o)
{
	return o->cut_line_err[0] ? o->cut_line_err : NULL;
}

const char *output_path(const struct eg_output *o)
{
	return o->path ? o->path : "stdout";
}

const char *output_rotation_error(const struct eg_output *o, uint64_t *ret_streak)
{
	*ret_streak = o->rotate_streaks;
	return o->rotate_err[0] ? o->rotate_err : NULL;
}

void output_set_rotate_cb(struct eg_output *o, void (*fn)(struct eg_output *, const char *, void *),
			  void *arg)
{
	o->rotate_cb = fn;
	o->rotate_arg = arg;
}

/* ---- rotation ------------------------------------------------------------ */

static void *recover_main(void *arg)
{
	struct eg_output *o = arg;

	rotated_recover(o->path, o->o.keep, o->o.gid, &o->zstop);
	return NULL;
}

static void *compress_main(void *arg)
{
	struct eg_output *o = arg;

	rotated_compress(o->zpath, o->o.gid);
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

/*
 * The compressor renames .1 and unlinks it when done: no rotation while it
 * runs. It is not waited for on the event loop (a large file takes
 * seconds): the rotation waits for a later flush instead.
 */
static bool compressor_busy(struct eg_output *o)
{
	if (o->zrunning) {
		if (pthread_tryjoin_np(o->zthread, NULL) == EBUSY)
			return true;
		o->zrunning = false;
	}
	free(o->zpath);
	o->zpath = NULL;
	return false;
}

/* Counted, kept for the caller to report (output_rotation_error()), and tried again later. */
__attribute__((format(printf, 3, 4)))
static int rotate_failed(struct eg_output *o, int rc, const char *fmt, ...)
{
	va_list ap;

	o->st.rotation_failures++;
	if (!o->rotate_failing)
		o->rotate_streaks++;
	o->rotate_failing = true;
	o->rotate_after_ms = eg_mono_ms() + ROTATE_RETRY_MS;
	va_start(ap, fmt);
	vsnprintf(o->rotate_err, sizeof(o->rotate_err), fmt, ap);
	va_end(ap);
	return rc;
}

/*
 * Nothing that is kept moves until the rotation is sure to work: the path
 * must still be the file we write, and the new file must exist (under a
 * name of its own). Generations shift only as far as the first gap, so a
 * rotation that failed half-way and is tried again pushes no more files
 * out.
 */
static int rotate(struct eg_output *o)
{
	char to[PATH_MAX + 32], tmp[PATH_MAX + 32], err[PATH_MAX + 64];
	int oldfd = o->fd, newfd, rc;
	struct stat cur, st;

	if (compressor_busy(o))
		return 0;
	if (o->o.keep == 0) {
		/* keep nothing: start the file over */
		if (ftruncate(o->fd, 0))
			return rotate_failed(o, -errno, "cannot start %s over: %s", o->path, strerror(errno));
		o->size = 0;
		o->cut_line = false;
		o->cut_line_err[0] = '\0';
		o->st.rotations++;
		o->rotate_err[0] = '\0';
		o->rotate_failing = false;
		if (o->rotate_cb)
			o->rotate_cb(o, NULL, o->rotate_arg);
		return 0;
	}
	if (fstat(o->fd, &cur))
		return rotate_failed(o, -errno, "cannot rotate %s: %s", o->path, strerror(errno));
	if (lstat(o->path, &st) || st.st_dev != cur.st_dev || st.st_ino != cur.st_ino) {
		/* removed or replaced under us: write to the path again, as SIGHUP does; the kept files stay */
		rc = open_file(o, err, sizeof(err));
		if (rc) {
			o->fd = oldfd;
			return rotate_failed(o, rc, "cannot rotate %s: it was removed or replaced, and %s",
					     o->path, err);
		}
		close(oldfd);
		rotate_failed(o, -ESTALE, "%s was removed or replaced while the daemon wrote it: not rotated; "
			      "writing to %s again, the rotated files are untouched", o->path, o->path);
		/* that is over: the next failure is news */
		o->rotate_failing = false;
		o->rotate_after_ms = 0;
		/* a new file still says who writes it; it continues no kept file */
		if (o->rotate_cb)
			o->rotate_cb(o, NULL, o->rotate_arg);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", o->path);
	unlink(tmp);	/* left by a crash */
	newfd = create_file(o, tmp, err, sizeof(err));
	if (newfd < 0)
		return rotate_failed(o, newfd, "cannot rotate %s: %s; still writing to it", o->path, err);

	rotated_name(o->path, to, sizeof(to));
	if (rename(o->path, to)) {
		rc = -errno;
		goto undo;
	}
	if (rename(tmp, o->path)) {
		rc = -errno;
		rename(to, o->path);	/* put it back and keep writing the old file */
		goto undo;
	}
	close(oldfd);
	o->fd = newfd;
	o->size = 0;
	o->cut_line = false;
	o->cut_line_err[0] = '\0';
	o->st.rotations++;
	/* only now that the rotation worked: the oldest beyond --output-keep go */
	rotated_prune(o->path, o->o.keep);
	o->rotate_err[0] = '\0';
	o->rotate_failing = false;
	o->zpath = strdup(to);
	if (o->zpath && !pthread_create(&o->zthread, NULL, compress_main, o))
		o->zrunning = true;
	if (o->rotate_cb) {
		const char *slash = strrchr(to, '/');

		o->rotate_cb(o, slash ? slash + 1 : to, o->rotate_arg);
	}
	return 0;
undo:
	close(newfd);
	unlink(tmp);
	return rotate_failed(o, rc, "cannot rotate %s: %s; still writing to it", o->path, strerror(-rc));
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

/* Every whole record to each tap, before the file sees them. */
static void run_taps(struct eg_output *o)
{
	struct eg_tap *t, *next;
	size_t i, start;

	for (t = o->taps; t; t = next) {
		next = t->next;	/* a tap may take itself off */
		for (i = 0, start = 0; i < o->nmarks; start = o->marks[i++].end) {
			if (o->marks[i].severity != EG_SEV_ALWAYS && o->marks[i].severity < t->min_severity) {
				t->filtered++;
				continue;
			}
			t->fn(t, o->buf.data + start, o->marks[i].end - start, o->marks[i].kind, o->marks[i].severity);
		}
		if (t->flushed)
			t->flushed(t);
	}
}

/* Records below the file's --min-severity leave the buffer (counted). */
static void squeeze(struct eg_output *o)
{
	size_t i, j = 0, start = 0, w = 0;

	for (i = 0; i < o->nmarks; start = o->marks[i++].end) {
		size_t len = o->marks[i].end - start;

		if (o->marks[i].severity != EG_SEV_ALWAYS && o->marks[i].severity < o->o.min_severity) {
			o->st.filtered_severity++;
			continue;
		}
		memmove(o->buf.data + w, o->buf.data + start, len);
		w += len;
		o->marks[j] = o->marks[i];
		o->marks[j++].end = w;
	}
	o->buf.len = w;
	o->nmarks = j;
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
	run_taps(o);
	if (o->o.min_severity)
		squeeze(o);
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

	o->buf = (struct sbuf){};
	o->marks = NULL;
	o->nmarks = o->cap_marks = 0;
	rotate(o);
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
	if (o->buf.len && o->o.max_size && o->path && o->size >= o->o.max_size &&
	    (!o->rotate_after_ms || eg_mono_ms() >= o->rotate_after_ms))
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
	/* a stop waits for the compression under way, not for the rest of a recovery: the next start's */
	atomic_store(&o->zstop, true);
	if (o->rrunning)
		pthread_join(o->rthread, NULL);
	wait_compressor(o);
	if (o->fd >= 0)
		close(o->fd);
	sbuf_free(&o->buf);
	free(o->marks);
	free(o->path);
	free(o);
}
