// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Which files hold a daemon's records, and reading their lines (plain or gzip) in large blocks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "ctl/client.h"
#include "query/query.h"
#include "util/paths.h"

#define BLOCK		(1u << 20)
#define LINE_MAX_BYTES	(64u << 20)	/* a longer "line" is not a record: the file is refused */

#define LIST_TRIES	5	/* listings the directory changed under before one is taken as it is */
#define FD_RESERVE	64	/* fds a query leaves for everything else */

void query_files_free(struct query_files *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->n; i++) {
		if (f->v[i].fd >= 0)
			close(f->v[i].fd);
		free(f->v[i].path);
		free(f->v[i].error);
	}
	free(f->v);
	free(f);
}

/*
 * Opened O_NONBLOCK: a FIFO named like a rotated file would hold the open
 * (and the query) for good; then read as before, blocking (a pipe given
 * as a FILE, /dev/stdin, is read to its end).
 */
static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd >= 0)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

/*
 * How many files may be held open: the soft RLIMIT_NOFILE is raised toward
 * the hard one for want of them, FD_RESERVE kept for the rest.
 */
static size_t fd_budget(size_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 256;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want + 2 * FD_RESERVE && rl.rlim_cur < rl.rlim_max) {
		rlim_t old = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want + 2 * FD_RESERVE ?
			      rl.rlim_max : want + 2 * FD_RESERVE;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = old;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want + 2 * FD_RESERVE)
		return want;
	return rl.rlim_cur > 2 * FD_RESERVE + 16 ? rl.rlim_cur - 2 * FD_RESERVE : 16;
}

struct file_time {
	char *path;
	int fd;
	char first[32];			/* the first record's time; "" if none */
	unsigned long num;		/* path.N: logrotate's generation */
	bool hold;			/* opened now (within the fd budget) */
	dev_t dev;			/* not held: the file listed, for its turn */
	ino_t ino;
};

/* The first record's time: the order of rotated files, whatever their names */
static void first_time(int fd, const char *path, char ret[32])
{
	int dfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : open_ro(path);
	gzFile g = dfd >= 0 ? gzdopen(dfd, "rb") : NULL;
	char line[4096];
	const char *t;

	ret[0] = '\0';
	if (!g) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	if (gzgets(g, line, sizeof(line)) && (t = query_line_time(line, strlen(line))))
		snprintf(ret, 32, "%.30s", t);
	gzclose(g);
	/* the copy shared the offset */
	if (fd >= 0)
		lseek(fd, 0, SEEK_SET);
}

static int by_time(const void *a, const void *b)
{
	const struct file_time *x = a, *y = b;
	int c;

	/* a file with no record yet goes last (the live file just rotated) */
	if (!x->first[0] || !y->first[0])
		return !x->first[0] - !y->first[0];
	c = strcmp(x->first, y->first);
	return c ? c : (x->num > y->num ? -1 : x->num < y->num);
}

/* "events.jsonl" + a suffix that names a rotation: .N, .N.gz, .TIME.gz, -DATE(.gz) */
static bool rotated(const char *base, const char *name, unsigned long *ret_num)
{
	size_t bl = strlen(base), n = strlen(name);
	const char *s = name + bl;

	*ret_num = 0;
	if (n <= bl + 1 || strncmp(name, base, bl) || (*s != '.' && *s != '-'))
		return false;
	if (n > 4 && !strcmp(name + n - 4, ".tmp"))
		return false;	/* the compressor's work in progress */
	if (!strcmp(name + n - 4, ".new"))
		return false;
	s++;
	if (*s < '0' || *s > '9')
		return false;
	*ret_num = strtoul(s, NULL, 10);
	return true;
}

static bool is_gz(const char *name)
{
	size_t n = strlen(name);

	return n > 3 && !strcmp(name + n - 3, ".gz");
}

/*
 * A file past the fd budget, when it is listed: its identity and its first
 * record's time, from one open (a rename between two looks would mix two
 * files). Compressed since it was named: the .gz. -errno.
 */
static int note_file(struct file_time *f)
{
	char gz[PATH_MAX + 4];
	struct stat st;
	int fd, rc = 0;

	fd = open_ro(f->path);
	if (fd < 0 && errno == ENOENT && !is_gz(f->path)) {
		snprintf(gz, sizeof(gz), "%s.gz", f->path);
		fd = open_ro(gz);
		if (fd >= 0) {
			free(f->path);
			if (!(f->path = strdup(gz))) {
				close(fd);
				return -ENOMEM;
			}
		}
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
	} else {
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		first_time(fd, f->path, f->first);
	}
	close(fd);
	return rc;
}

static void free_list(struct file_time *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i].fd >= 0)
			close(v[i].fd);
		free(v[i].path);
	}
	free(v);
}

/*
 * One listing: the live file opened first, then the rotated ones named in
 * dir and opened (those past the fd budget by name only). A rotated file
 * that is the live one (rotated since it was opened) is left out.
 */
static int list_once(const char *dir, const char *base, struct file_time **ret, size_t *ret_n)
{
	char full[PATH_MAX * 2];
	struct file_time *v = NULL;
	size_t n = 0, cap = 0, i, j, budget;
	struct stat live_st = {}, st;
	struct dirent *de;
	int live, rc = 0;
	DIR *d;

	snprintf(full, sizeof(full), "%s/%s", dir, base);
	live = open_ro(full);
	if (live < 0 && errno != ENOENT)
		return -errno;
	if (live >= 0 && fstat(live, &live_st)) {
		rc = -errno;
		close(live);
		return rc;
	}
	d = opendir(dir);
	if (!d) {
		rc = -errno;
		goto fail;
	}
	while ((de = readdir(d))) {
		unsigned long num;

		if (!rotated(base, de->d_name, &num))
			continue;
		if (n + 1 >= cap) {
			struct file_time *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
		}
		snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
		/* the daemon's and logrotate's are files: not a FIFO, a symlink or a directory so named */
		if (lstat(full, &st) || !S_ISREG(st.st_mode))
			continue;
		v[n] = (struct file_time){ .path = strdup(full), .fd = -1, .num = num };
		if (!v[n].path) {
			rc = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (!rc && n + 1 > cap) {
		/* room for the live file */
		struct file_time *nv = realloc(v, (n + 1) * sizeof(*v));

		if (nv)
			v = nv;
		else
			rc = -ENOMEM;
	}
	if (rc)
		goto fail;
	/*
	 * A rotated file being compressed: the daemon's compressor renames a
	 * whole .gz into place, then removes the plain file; logrotate's
	 * (compress, delaycompress) writes the .gz under its own name while
	 * gzip fills it, and a truncated gzip stream reads as a short file.
	 * The plain file is whole while it is there: it is read, and a plain
	 * file gone by its turn is read from its .gz (note_file, below).
	 */
	for (i = 0; i < n; i++) {
		size_t len = strlen(v[i].path);

		if (!is_gz(v[i].path) || len - 3 >= sizeof(full))
			continue;
		snprintf(full, sizeof(full), "%.*s", (int)(len - 3), v[i].path);
		for (j = 0; j < n && strcmp(v[j].path, full); j++)
			;
		if (j < n) {
			free(v[i].path);
			v[i--] = v[--n];
		}
	}
	budget = fd_budget(n + 1);
	if (n > budget) {
		/* more files than fds: the newest are held, the oldest read at their turn (open_listed()) */
		for (i = 0; i < n; i++) {
			rc = note_file(&v[i]);
			if (rc == -ENOENT || (!rc && live >= 0 && v[i].dev == live_st.st_dev &&
					      v[i].ino == live_st.st_ino)) {
				/* removed since it was named (past --output-keep); or the live file, rotated since */
				free(v[i].path);
				v[i--] = v[--n];
				rc = 0;
				continue;
			}
			if (rc)
				goto fail;
		}
		qsort(v, n, sizeof(*v), by_time);
	}
	for (i = 0; i < n; i++)
		v[i].hold = n <= budget || i >= n - budget;
	for (i = 0; i < n; i++) {
		if (!v[i].hold)
			continue;
		v[i].fd = open_ro(v[i].path);
		if (v[i].fd < 0 && errno == ENOENT && !is_gz(v[i].path)) {
			/* compressed since: the .gz */
			snprintf(full, sizeof(full), "%s.gz", v[i].path);
			v[i].fd = open_ro(full);
			if (v[i].fd >= 0) {
				free(v[i].path);
				v[i].path = strdup(full);
			}
		}
		if (v[i].fd >= 0 && live >= 0 && !fstat(v[i].fd, &st) && st.st_dev == live_st.st_dev &&
		    st.st_ino == live_st.st_ino) {
			close(v[i].fd);
			v[i].fd = -1;
			free(v[i].path);
			v[i].path = NULL;
		}
		if (v[i].fd < 0 && !v[i].path) {
			v[i--] = v[--n];
			continue;
		}
		if (v[i].fd < 0) {
			/* removed since it was listed (the oldest, past --output-keep): not there to read */
			if (errno == ENOENT) {
				free(v[i].path);
				v[i--] = v[--n];
				continue;
			}
			rc = -errno;
			goto fail;
		}
	}
	for (i = 0; i < n; i++) {
		if (!v[i].path) {
			rc = -ENOMEM;
			goto fail;
		}
		if (v[i].fd >= 0)
			first_time(v[i].fd, v[i].path, v[i].first);
	}
	if (live >= 0) {
		snprintf(full, sizeof(full), "%s/%s", dir, base);
		v[n] = (struct file_time){ .path = strdup(full), .fd = live };
		live = -1;
		if (!v[n].path) {
			rc = -ENOMEM;
			n++;
			goto fail;
		}
		first_time(v[n].fd, v[n].path, v[n].first);
		n++;
	}
	*ret = v;
	*ret_n = n;
	return 0;
fail:
	if (live >= 0)
		close(live);
	free_list(v, n);
	return rc;
}

static int files_from(struct file_time *v, size_t n, struct query_files **ret)
{
	struct query_files *f = calloc(1, sizeof(*f));
	size_t i;

	if (!f || !(f->v = calloc(n ? n : 1, sizeof(*f->v)))) {
		free(f);
		free_list(v, n);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		f->v[i].path = v[i].path;
		f->v[i].fd = v[i].fd;
		f->v[i].dev = v[i].dev;
		f->v[i].ino = v[i].ino;
		memcpy(f->v[i].first, v[i].first, sizeof(f->v[i].first));
	}
	f->n = n;
	free(v);
	*ret = f;
	return 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int query_output_files(const char *path, struct query_files **ret)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *base;
	struct stat before, after;
	struct file_time *v = NULL;
	size_t n = 0;
	int rc, tries;

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	base = slash ? slash + 1 : path;
	/* a rotation, a compression or a removal while listing: list again */
	for (tries = 1;; tries++) {
		if (stat(dir, &before))
			return -errno;
		rc = list_once(dir, base, &v, &n);
		if (rc)
			return rc;
		if (stat(dir, &after))
			return -errno;
		if ((same_time(&before.st_mtim, &after.st_mtim) && same_time(&before.st_ctim, &after.st_ctim)) ||
		    tries == LIST_TRIES)
			break;
		free_list(v, n);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), by_time);
	return files_from(v, n, ret);
}

int query_open_files(char *const *paths, size_t n, struct query_files **ret, char *err, size_t errlen)
{
	struct file_time *v = calloc(n ? n : 1, sizeof(*v));
	size_t i, budget;
	int rc;

	if (!v)
		return -ENOMEM;
	budget = fd_budget(n);
	for (i = 0; i < n; i++) {
		v[i].fd = open_ro(paths[i]);
		if (v[i].fd < 0) {
			rc = -errno;
			snprintf(err, errlen, "cannot open %s: %s", paths[i], strerror(errno));
			free_list(v, i);
			return rc;
		}
		/* more operands than fds: the last ones are held, the first (read first) opened at their turn */
		if (n > budget && i < n - budget) {
			struct stat st;

			if (!fstat(v[i].fd, &st)) {
				v[i].dev = st.st_dev;
				v[i].ino = st.st_ino;
			}
			first_time(v[i].fd, paths[i], v[i].first);
			close(v[i].fd);
			v[i].fd = -1;
		}
		v[i].path = strdup(paths[i]);
		if (!v[i].path) {
			free_list(v, i + 1);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
	}
	rc = files_from(v, n, ret);
	if (rc)
		snprintf(err, errlen, "out of memory");
	return rc;
}

/* The file name of a daemon's record of its output: its pid file's, .output for .pid */
static void record_path(const struct eg_paths *p, char *buf, size_t len)
{
	size_t n = strlen(p->pidfile);

	if (n > 4 && !strcmp(p->pidfile + n - 4, ".pid"))
		n -= 4;
	snprintf(buf, len, "%.*s.output", (int)n, p->pidfile);
}

int query_daemon_output(const char *pin_path, char *buf, size_t len, char *err, size_t errlen)
{
	struct eg_paths paths;
	char rec[PATH_MAX + 16], cerr[512];
	json_t *reply = NULL;
	const char *out;
	FILE *f;
	int rc;

	rc = eg_paths_resolve(pin_path, &paths);
	if (rc) {
		snprintf(err, errlen, "--pin-path %s: %s", pin_path ? pin_path : EG_PIN_PATH_DEFAULT, strerror(-rc));
		return rc;
	}
	rc = ctl_call(pin_path, "{\"op\":\"status\"}", &reply, cerr, sizeof(cerr));
	if (!rc) {
		out = json_string_value(json_object_get(json_object_get(reply, "output"), "path"));
		if (!out || !strcmp(out, "stdout")) {
			snprintf(err, errlen, "the daemon of %s writes to stdout, not a file: name the files to read",
				 paths.pin);
			json_decref(reply);
			return -ENOENT;
		}
		snprintf(buf, len, "%s", out);
		json_decref(reply);
		return 0;
	}
	json_decref(reply);
	/* no daemon answers: the file the last one wrote */
	record_path(&paths, rec, sizeof(rec));
	f = fopen(rec, "re");
	if (f && fgets(buf, len, f) && buf[0] == '/') {
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
		return 0;
	}
	if (f)
		fclose(f);
	snprintf(err, errlen, "%s; and no daemon of %s left a record of its output in %s: name the files to read",
		 cerr, paths.pin, rec);
	return -ENOENT;
}

static void file_error(struct query_file *f, const char *fmt, ...)
{
	va_list ap;

	free(f->error);
	f->error = NULL;
	va_start(ap, fmt);
	if (vasprintf(&f->error, fmt, ap) < 0)
		f->error = NULL;
	va_end(ap);
}

static bool is_listed(const struct query_file *f, const struct stat *st)
{
	return st->st_dev == f->dev && st->st_ino == f->ino;
}

/* Found under another name: read there from now on (the tree's second pass too). */
static int moved_to(struct query_file *f, const char *path, int fd)
{
	struct stat st;
	char *p = strdup(path);

	if (!p || fstat(fd, &st)) {
		free(p);
		close(fd);
		return -1;
	}
	free(f->path);
	f->path = p;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	return fd;
}

/*
 * The file listed, in its directory under another name: renamed (the same
 * inode), or compressed (a .gz whose first record is the one it began
 * with). An fd, or -1.
 */
static int find_listed(struct query_file *f)
{
	char dir[PATH_MAX], full[PATH_MAX * 2], first[32];
	const char *slash = strrchr(f->path, '/');
	struct dirent *de;
	struct stat st;
	int pass, fd = -1;
	DIR *d;

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == f->path ? 1 : (int)(slash - f->path), f->path);
	else
		snprintf(dir, sizeof(dir), ".");
	d = opendir(dir);
	if (!d)
		return -1;
	for (pass = 0; pass < 2 && fd < 0; pass++) {
		if (pass == 1 && !f->first[0])
			break;
		rewinddir(d);
		while (fd < 0 && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || (pass == 1 && !is_gz(de->d_name)))
				continue;
			snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
			if (lstat(full, &st) || !S_ISREG(st.st_mode) || (pass == 0 && !is_listed(f, &st)))
				continue;
			fd = open_ro(full);
			if (fd < 0)
				continue;
			if (pass == 0 ? fstat(fd, &st) || !is_listed(f, &st)
				      : (first_time(fd, full, first), strcmp(first, f->first))) {
				close(fd);
				fd = -1;
				continue;
			}
			fd = moved_to(f, full, fd);
		}
	}
	closedir(d);
	return fd;
}

/*
 * A file past the fd budget, at its turn: opened by its name, it must be
 * the file listed, else it is looked for (find_listed()). A logrotate
 * meanwhile renames (events.jsonl.1 to .2) and compresses: by its name
 * alone the query would read another file, one twice and one not at all.
 */
static int open_listed(struct query_file *f)
{
	struct stat st;
	int fd, err;

	fd = open_ro(f->path);
	if (!f->ino)
		goto out;
	if (fd >= 0 && !fstat(fd, &st) && is_listed(f, &st))
		return fd;
	if (fd >= 0)
		close(fd);
	/* twice: a directory read while names change may miss one */
	fd = find_listed(f);
	if (fd < 0)
		fd = find_listed(f);
	if (fd < 0)
		file_error(f, "%s was renamed, compressed or removed since the query listed it (a rotation?), "
			   "and is not in its directory under another name: left out", f->path);
	return fd;
out:
	err = errno;
	if (fd < 0)
		file_error(f, "cannot open %s: %s", f->path, strerror(err));
	return fd;
}

/*
 * Reads a whole file's lines in blocks; gzip is read through zlib, plain
 * files with read(2). A file that cannot be read whole gets its error and
 * the others are read; < 0 only when the scan cannot go on (fn stopped it:
 * 1; out of memory).
 */
static int scan_one(struct query_file *f, query_line_fn fn, void *arg, struct sbuf *buf)
{
	unsigned char magic[2] = {};
	gzFile g = NULL;
	size_t start;
	ssize_t n;
	int fd, stop = 0;
	bool gz, past = false, limited = false;
	uint64_t limit = 0, got = 0;
	struct stat st;

	free(f->error);
	f->error = NULL;
	if (f->fd < 0) {
		fd = open_listed(f);
		if (fd < 0)
			return 0;
	} else {
		fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0) {
			file_error(f, "cannot open %s: %s", f->path, strerror(errno));
			return 0;
		}
	}
	/* from its start: the tree reads the files twice */
	if (f->fd >= 0 && lseek(fd, 0, SEEK_SET) < 0 && errno != ESPIPE) {
		file_error(f, "cannot read %s: %s", f->path, strerror(errno));
		close(fd);
		return 0;
	}
	gz = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
	if (gz) {
		g = gzdopen(fd, "rb");
		if (!g) {
			close(fd);
			return -ENOMEM;
		}
		gzbuffer(g, 256 * 1024);
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	/*
	 * A file as it was when its read began (query.h): what the daemon
	 * appends meanwhile is left to a later query, or to the stream of
	 * --follow, which began before (a read that chased the appends met
	 * the stream past what its overlap check keeps, and wrote records
	 * twice). The line under way at that size is read to its end.
	 */
	if (!gz && !fstat(fd, &st) && S_ISREG(st.st_mode))
		limit = (uint64_t)st.st_size, limited = true;
	sbuf_reset(buf);
	for (;;) {
		size_t want = BLOCK;
		char *nl, *p;

		/* up to the limit; past it, only the rest of the line under way there */
		if (past && !buf->len)
			break;
		if (limited && !past && limit - got < want)
			want = (size_t)(limit - got);
		if (sbuf_reserve(buf, BLOCK)) {
			stop = -ENOMEM;
			break;
		}
		n = gz ? gzread(g, buf->data + buf->len, BLOCK) : read(fd, buf->data + buf->len, want);
		if (n < 0 && !gz && errno == EINTR)
			continue;
		if (n < 0) {
			file_error(f, "cannot read %s: %s: the rest of it is left out", f->path,
				   gz ? "corrupt gzip data" : strerror(errno));
			break;
		}
		if (n == 0)
			break;
		buf->len += n;
		got += (uint64_t)n;
		/* whole lines only; a last line with no '\n' is one being written: left out */
		for (p = buf->data, start = 0; (nl = memchr(p, '\n', buf->data + buf->len - p)); p = nl + 1) {
			start = nl + 1 - buf->data;
			if (nl > p && (stop = fn(p, nl - p, arg)))
				break;
			/* past the limit, the line that crossed it was the last */
			if (past) {
				start = buf->len;
				break;
			}
		}
		if (stop)
			break;
		past = limited && got >= limit;
		if (start) {
			memmove(buf->data, buf->data + start, buf->len - start);
			buf->len -= start;
		} else if (buf->len > LINE_MAX_BYTES) {
			file_error(f, "%s: a line longer than %u MiB: not a file of records; left out", f->path,
				   LINE_MAX_BYTES >> 20);
			break;
		}
	}
	if (gz) {
		/* a gzip file cut short (a crash mid-compression): what was read stands */
		gzclose(g);
	} else {
		close(fd);
	}
	return stop < 0 ? stop : stop ? 1 : 0;
}

int query_scan(struct query_files *files, query_line_fn fn, void *arg, char *err, size_t errlen)
{
	struct sbuf buf = {};
	size_t i;
	int rc = 0;

	for (i = 0; i < files->n && !rc; i++)
		rc = scan_one(&files->v[i], fn, arg, &buf);
	sbuf_free(&buf);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	/* 1: the callback stopped it, and knows why */
	return rc < 0 ? rc : 0;
}

size_t query_files_unread(const struct query_files *files)
{
	size_t i, n = 0;

	for (i = 0; i < files->n; i++)
		n += files->v[i].error != NULL;
	return n;
}
