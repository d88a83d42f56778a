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

/* The directory entries of path reach the disk (a rename, before the unlink that relies on it). */
static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* "20260119T143000.123Z" or the same + ".gz": a name rotated_name() gives */
static bool is_rotated(const char *base, const char *name)
{
	size_t bl = strlen(base), i;
	const char *t = name + bl + 1;
	static const char shape[] = "DDDDDDDDTDDDDDD.DDDZ";

	if (strncmp(name, base, bl) || name[bl] != '.')
		return false;
	for (i = 0; shape[i]; i++)
		if (shape[i] == 'D' ? (t[i] < '0' || t[i] > '9') : t[i] != shape[i])
			return false;
	return !t[i] || !strcmp(t + i, ".gz");
}

/*
 * A .gz that our compressor renamed into place is whole (it was written
 * and synced first); one left beside its plain file (a compressor killed
 * between the rename and the unlink) is checked against it cheaply before
 * the plain file goes: gzip's trailer holds the plain size modulo 2^32.
 */
static bool gz_matches(const char *gz, const struct stat *plain)
{
	unsigned char m[2], t[4];
	struct stat st;
	bool ok = false;
	int fd;

	fd = open(gz, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= 18 && pread(fd, m, 2, 0) == 2 &&
	    m[0] == 0x1f && m[1] == 0x8b && pread(fd, t, 4, st.st_size - 4) == 4)
		ok = ((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24) ==
		     (uint32_t)plain->st_size;
	close(fd);
	return ok;
}

/*
 * path to path.gz through path.gz.tmp. The plain file is locked (flock)
 * for the whole of it, so that no second compressor (the start's
 * recovery, another daemon's) works on it at once, and a .gz.tmp whose
 * plain file nobody holds is known to be left over. Only a complete .gz
 * replaces the plain file.
 */
static void compress_one(struct eg_output *o, const char *path)
{
	char gz[PATH_MAX + 8], tmp[PATH_MAX + 16], buf[65536];
	struct stat in_st, st;
	gzFile out = NULL;
	ssize_t n;
	int in, fd, zfd = -1, ok = 0;

	snprintf(gz, sizeof(gz), "%s.gz", path);
	snprintf(tmp, sizeof(tmp), "%s.gz.tmp", path);
	in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (in < 0)
		return;
	/* held by another compressor; or compressed and removed since it was named */
	if (flock(in, LOCK_EX | LOCK_NB) || fstat(in, &in_st) || lstat(path, &st) ||
	    st.st_dev != in_st.st_dev || st.st_ino != in_st.st_ino || !S_ISREG(in_st.st_mode)) {
		close(in);
		return;
	}
	if (gz_matches(gz, &in_st)) {
		/* a compressor killed after its rename: the .gz is in place, the plain file goes */
		unlink(tmp);
		unlink(path);
		close(in);
		return;
	}
	/* a new .gz.tmp of our own (a leftover goes: the lock is ours), never a user's made first */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
	/* best effort: the plain file had the same owner; the mode whatever the umask */
	if (fd >= 0 && ((o->o.gid != (gid_t)-1 && fchown(fd, 0, o->o.gid)) || fchmod(fd, 0640))) {
	}
	/* zlib closes its own copy; ours is for the fsync */
	if (fd >= 0)
		zfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (zfd >= 0 && !(out = gzdopen(zfd, "wb6")))
		close(zfd);
	if (out) {
		ok = 1;
		for (;;) {
			n = read(in, buf, sizeof(buf));
			if (n <= 0) {
				ok = n == 0;
				break;
			}
			if (gzwrite(out, buf, (unsigned)n) != (int)n) {
				ok = 0;
				break;
			}
		}
		if (gzclose(out) != Z_OK)
			ok = 0;
	}
	/* on the disk before it replaces the plain file: a crash must not leave an empty .gz alone */
	if (ok && fsync(fd))
		ok = 0;
	if (fd >= 0)
		close(fd);
	/* removed meanwhile (past --output-keep after a rotation): its .gz would bring it back */
	if (ok && (lstat(path, &st) || st.st_dev != in_st.st_dev || st.st_ino != in_st.st_ino))
		ok = 0;
	if (ok && !rename(tmp, gz)) {
		sync_dir(gz);
		unlink(path);
	} else {
		unlink(tmp);
	}
	/* the lock goes last: the plain file is gone, or whole with no .gz.tmp beside it */
	close(in);
}

struct rotated_file {
	char *name;
	bool gz, tmp;
};

static int cmp_rotated(const void *a, const void *b)
{
	/* newest first: the names are times */
	return -strcmp(((const struct rotated_file *)a)->name, ((const struct rotated_file *)b)->name);
}

/* The directory the rotated files of o are in, into dir; returns their names' base (o's file name). */
static const char *output_dir(const struct eg_output *o, char *dir, size_t len)
{
	const char *slash = strrchr(o->path, '/');

	snprintf(dir, len, "%.*s", slash ? (slash == o->path ? 1 : (int)(slash - o->path)) : 1,
		 slash ? o->path : ".");
	return slash ? slash + 1 : o->path;
}

/*
 * At the start (after a handover too): what a compressor killed with its
 * daemon left (a handover's exec, kill -9, a crash) is finished here, on a
 * thread of its own. A .gz.tmp whose plain file no compressor holds is
 * removed; the plain rotated files of the newest --output-keep generations
 * are compressed, newest first, one at a time (older ones go at the next
 * rotation). Rotations go on meanwhile: the locks keep the two
 * compressors off each other's files. A stop lets it finish the file it
 * is in, and begin no other.
 */
static void recover(struct eg_output *o)
{
	char dir[PATH_MAX], full[PATH_MAX * 2 + 16], plain[PATH_MAX * 2];
	const char *base = output_dir(o, dir, sizeof(dir));
	struct rotated_file *v = NULL;
	size_t n = 0, cap = 0, i, gens = 0;
	struct dirent *de;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		bool tmp = len > 4 && !strcmp(de->d_name + len - 4, ".tmp");
		char name[NAME_MAX + 1];

		snprintf(name, sizeof(name), "%.*s", (int)(tmp ? len - 4 : len), de->d_name);
		if (!is_rotated(base, name) || (tmp && strcmp(name + strlen(name) - 3, ".gz")))
			continue;
		if (n == cap) {
			struct rotated_file *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		len = strlen(name);
		v[n].gz = len > 3 && !strcmp(name + len - 3, ".gz");
		v[n].tmp = tmp;
		if (v[n].gz)
			name[len - 3] = '\0';
		if (!(v[n].name = strdup(name)))
			break;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_rotated);
	for (i = 0; i < n && !atomic_load(&o->zstop); i++) {
		struct stat st;
		int fd;

		snprintf(plain, sizeof(plain), "%s/%s", dir, v[i].name);
		if (i == 0 || strcmp(v[i].name, v[i - 1].name))
			gens++;
		if (v[i].tmp) {
			snprintf(full, sizeof(full), "%s.gz.tmp", plain);
			/* O_NONBLOCK: a FIFO by that name would hold the open, and the stop with it */
			fd = open(plain, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
			/* no plain file: nothing it could finish; a plain file nobody holds: its compressor is gone */
			if (fd < 0 ? errno == ENOENT : !flock(fd, LOCK_EX | LOCK_NB))
				unlink(full);
			if (fd >= 0)
				close(fd);
		} else if (!v[i].gz && gens <= o->o.keep && !lstat(plain, &st) && S_ISREG(st.st_mode)) {
			compress_one(o, plain);
		}
	}
	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

static void *recover_main(void *arg)
{
	recover(arg);
	return NULL;
}

static void *compress_main(void *arg)
{
	struct eg_output *o = arg;

	compress_one(o, o->zpath);
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

static bool exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* The time a rotated file's name says, in ms since the epoch (0: not one). */
static uint64_t rotated_ms(const char *base, const char *name)
{
	const char *t = name + strlen(base) + 1;
	struct tm tm = {};
	time_t s;

	if (!is_rotated(base, name) ||
	    sscanf(t, "%4d%2d%2dT%2d%2d%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	s = timegm(&tm);
	return s < 0 ? 0 : (uint64_t)s * 1000 + (uint64_t)strtoul(t + 16, NULL, 10);
}

/* The newest rotated file's time by its name (0: none). */
static uint64_t newest_rotated_ms(const struct eg_output *o)
{
	char dir[PATH_MAX];
	const char *base = output_dir(o, dir, sizeof(dir));
	struct dirent *de;
	uint64_t newest = 0;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		newest = rotated_ms(base, de->d_name) > newest ? rotated_ms(base, de->d_name) : newest;
	if (d)
		closedir(d);
	return newest;
}

/*
 * A rotated file is named by the time it was rotated, in UTC:
 * events.jsonl.20260119T143000.123Z (.gz once compressed), so names sort
 * as the files' ages and a name never changes. Two rotations in one
 * millisecond take the next free one, and so does one made after the
 * clock went back (NTP, a VM resumed): a name just after the newest, so
 * that the oldest by name is still the oldest (prune() removes the
 * first names; it removed the file just rotated).
 */
static void rotated_name(const struct eg_output *o, char *buf, size_t len)
{
	uint64_t ms = eg_clock_ns(CLOCK_REALTIME) / 1000000, newest = newest_rotated_ms(o);
	char gz[PATH_MAX + 48];
	int tries;

	if (newest >= ms)
		ms = newest + 1;
	for (tries = 0; tries < 1000; tries++, ms++) {
		time_t t = ms / 1000;
		struct tm tm;

		gmtime_r(&t, &tm);
		snprintf(buf, len, "%s.%04d%02d%02dT%02d%02d%02d.%03uZ", o->path, tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned int)(ms % 1000));
		snprintf(gz, sizeof(gz), "%s.gz", buf);
		if (!exists(buf) && !exists(gz))
			return;
	}
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The oldest rotated files go until keep are left, the one just rotated among them. */
static void prune(struct eg_output *o)
{
	char dir[PATH_MAX], full[PATH_MAX * 2];
	const char *base = output_dir(o, dir, sizeof(dir));
	char **v = NULL;
	size_t n = 0, cap = 0, i, j, gens;
	struct dirent *de;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!is_rotated(base, de->d_name))
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		if (!(v[n] = strdup(de->d_name)))
			break;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_names);
	/* a generation may be there twice for a moment (plain, and .gz being made) */
	for (gens = 0, i = 0; i < n; i++)
		if (!i || strncmp(v[i], v[i - 1], strlen(base) + 21))
			gens++;
	for (i = 0; i < n && gens > o->o.keep; i = j) {
		for (j = i; j < n && !strncmp(v[j], v[i], strlen(base) + 21); j++) {
			snprintf(full, sizeof(full), "%s/%s", dir, v[j]);
			unlink(full);
		}
		gens--;
	}
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
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

	rotated_name(o, to, sizeof(to));
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
	prune(o);
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
