// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Which files hold a daemon's records, and reading their lines (plain or gzip) in large blocks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "ctl/client.h"
#include "query/query.h"
#include "util/paths.h"

#define BLOCK		(1u << 20)
#define LINE_MAX_BYTES	(64u << 20)	/* a longer "line" is not a record: the file is refused */

void query_files_free(char **v)
{
	char **p;

	for (p = v; p && *p; p++)
		free(*p);
	free(v);
}

struct file_time {
	char *path;
	char first[32];			/* the first record's time; "" if none */
	unsigned long num;		/* path.N: logrotate's generation */
};

/* The first record's time: the order of rotated files, whatever their names */
static void first_time(const char *path, char ret[32])
{
	gzFile g = gzopen(path, "rb");
	char line[4096];
	const char *t;

	ret[0] = '\0';
	if (!g)
		return;
	if (gzgets(g, line, sizeof(line)) && (t = query_line_time(line, strlen(line))))
		snprintf(ret, 32, "%.30s", t);
	gzclose(g);
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

int query_output_files(const char *path, char ***ret)
{
	char dir[PATH_MAX], full[PATH_MAX * 2];
	const char *slash = strrchr(path, '/'), *base;
	struct file_time *v = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	char **out;
	DIR *d;

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	base = slash ? slash + 1 : path;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned long num;
		bool live = !strcmp(de->d_name, base);

		if (!live && !rotated(base, de->d_name, &num))
			continue;
		if (live)
			num = 0;
		/* a rotated file being compressed: its .gz is whole once it exists */
		if (!live && strlen(de->d_name) > 3 && strcmp(de->d_name + strlen(de->d_name) - 3, ".gz")) {
			struct stat st;

			snprintf(full, sizeof(full), "%s/%s.gz", dir, de->d_name);
			if (!stat(full, &st))
				continue;
		}
		if (n == cap) {
			struct file_time *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
		v[n].path = strdup(full);
		v[n].num = num;
		if (!v[n].path)
			break;
		first_time(full, v[n].first);
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), by_time);
	out = calloc(n + 1, sizeof(*out));
	if (!out) {
		for (i = 0; i < n; i++)
			free(v[i].path);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		out[i] = v[i].path;
	free(v);
	*ret = out;
	return 0;
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

/* Reads a whole file's lines in blocks; gzip is read through zlib, plain files with read(2). */
static int scan_one(const char *path, query_line_fn fn, void *arg, struct sbuf *buf, char *err, size_t errlen)
{
	unsigned char magic[2] = {};
	gzFile g = NULL;
	size_t start;
	ssize_t n;
	int fd, stop = 0;
	bool gz;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -errno;
	}
	gz = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
	if (gz) {
		g = gzdopen(fd, "rb");
		if (!g) {
			close(fd);
			snprintf(err, errlen, "cannot read %s: out of memory", path);
			return -ENOMEM;
		}
		gzbuffer(g, 256 * 1024);
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	sbuf_reset(buf);
	for (;;) {
		char *nl, *p;

		if (sbuf_reserve(buf, BLOCK)) {
			stop = -ENOMEM;
			break;
		}
		n = gz ? gzread(g, buf->data + buf->len, BLOCK) : read(fd, buf->data + buf->len, BLOCK);
		if (n < 0 && !gz && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "cannot read %s: %s", path, gz ? "corrupt gzip data" : strerror(errno));
			stop = -EIO;
			break;
		}
		if (n == 0)
			break;
		buf->len += n;
		/* whole lines only; a last line with no '\n' is one being written: left out */
		for (p = buf->data, start = 0; (nl = memchr(p, '\n', buf->data + buf->len - p)); p = nl + 1) {
			start = nl + 1 - buf->data;
			if (nl > p && (stop = fn(p, nl - p, arg)))
				break;
		}
		if (stop)
			break;
		if (start) {
			memmove(buf->data, buf->data + start, buf->len - start);
			buf->len -= start;
		} else if (buf->len > LINE_MAX_BYTES) {
			snprintf(err, errlen, "%s: a line longer than %u MiB: not a file of records", path,
				 LINE_MAX_BYTES >> 20);
			stop = -EINVAL;
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

int query_scan(char *const *files, query_line_fn fn, void *arg, char *err, size_t errlen)
{
	struct sbuf buf = {};
	int rc = 0;

	for (; *files && !rc; files++)
		rc = scan_one(*files, fn, arg, &buf, err, errlen);
	sbuf_free(&buf);
	return rc < 0 ? rc : 0;
}
