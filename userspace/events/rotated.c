// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The output's rotated files: their names (the time of the rotation, in
 * UTC, after the newest), their compression (a .gz.tmp of our own, synced
 * and renamed into place), what a compressor killed with its daemon left
 * (finished at the next start), and the oldest pruned past --output-keep.
 * Apart from the writer (output.c), which calls these from its threads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "events/rotated.h"
#include "util/clock.h"

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
void rotated_compress(const char *path, gid_t gid)
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
	if (fd >= 0 && ((gid != (gid_t)-1 && fchown(fd, 0, gid)) || fchmod(fd, 0640))) {
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

/* The directory the rotated files of o are in, into dir; returns their names' base (o's file name). */
const char *rotated_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, len, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1,
		 slash ? path : ".");
	return slash ? slash + 1 : path;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The rotated files' names in dir, sorted (as their ages: the names are
 * times; a generation's plain file, then its .gz, then its .gz.tmp), with
 * tmp the .gz.tmp files too. The count, or 0 (*ret NULL) for none or no
 * memory; free with free_names().
 */
static size_t list_rotated(const char *dir, const char *base, bool tmp, char ***ret)
{
	char **v = NULL, name[NAME_MAX + 1];
	size_t n = 0, cap = 0, len;
	struct dirent *de;
	DIR *d = opendir(dir);

	*ret = NULL;
	while (d && (de = readdir(d))) {
		len = strlen(de->d_name);
		snprintf(name, sizeof(name), "%s", de->d_name);
		if (tmp && len > 7 && !strcmp(name + len - 7, ".gz.tmp"))
			name[len - 4] = '\0';
		if (!is_rotated(base, name))
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
	if (d)
		closedir(d);
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_names);
	if (!n)
		free(v);
	else
		*ret = v;
	return n;
}

static void free_names(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
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
void rotated_recover(const char *path, unsigned int keep, gid_t gid, atomic_bool *stop)
{
	char dir[PATH_MAX], full[PATH_MAX * 2 + 16], plain[PATH_MAX * 2], prev[NAME_MAX + 1] = "";
	const char *base = rotated_dir(path, dir, sizeof(dir));
	char **v;
	size_t n = list_rotated(dir, base, true, &v), i, gens = 0;

	/* newest first */
	for (i = n; i-- > 0 && !atomic_load(stop);) {
		size_t len = strlen(v[i]);
		bool tmp = len > 4 && !strcmp(v[i] + len - 4, ".tmp");
		bool gz = !tmp && len > 3 && !strcmp(v[i] + len - 3, ".gz");
		struct stat st;
		int fd;

		/* the generation's plain name */
		len -= tmp ? 7 : gz ? 3 : 0;
		snprintf(plain, sizeof(plain), "%s/%.*s", dir, (int)len, v[i]);
		if (strlen(prev) != len || strncmp(prev, v[i], len))
			gens++;
		snprintf(prev, sizeof(prev), "%.*s", (int)len, v[i]);
		if (tmp) {
			snprintf(full, sizeof(full), "%s.gz.tmp", plain);
			/* O_NONBLOCK: a FIFO by that name would hold the open, and the stop with it */
			fd = open(plain, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
			/* no plain file: nothing it could finish; a plain file nobody holds: its compressor is gone */
			if (fd < 0 ? errno == ENOENT : !flock(fd, LOCK_EX | LOCK_NB))
				unlink(full);
			if (fd >= 0)
				close(fd);
		} else if (!gz && gens <= keep && !lstat(plain, &st) && S_ISREG(st.st_mode)) {
			rotated_compress(plain, gid);
		}
	}
	free_names(v, n);
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
static uint64_t newest_rotated_ms(const char *path)
{
	char dir[PATH_MAX], **v;
	const char *base = rotated_dir(path, dir, sizeof(dir));
	size_t n = list_rotated(dir, base, false, &v);
	uint64_t newest = n ? rotated_ms(base, v[n - 1]) : 0;

	free_names(v, n);
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
void rotated_name(const char *path, char *buf, size_t len)
{
	uint64_t ms = eg_clock_ns(CLOCK_REALTIME) / 1000000, newest = newest_rotated_ms(path);
	char gz[PATH_MAX + 48];
	int tries;

	/* a clock gone back, not a name made up years ahead (past 9999 names would not parse) */
	if (newest >= ms && newest - ms < 366ull * 86400 * 1000)
		ms = newest + 1;
	for (tries = 0; tries < 1000; tries++, ms++) {
		time_t t = ms / 1000;
		struct tm tm;

		gmtime_r(&t, &tm);
		snprintf(buf, len, "%s.%04d%02d%02dT%02d%02d%02d.%03uZ", path, tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned int)(ms % 1000));
		snprintf(gz, sizeof(gz), "%s.gz", buf);
		if (!exists(buf) && !exists(gz))
			return;
	}
}

/* The oldest rotated files go until keep are left, the one just rotated among them. */
void rotated_prune(const char *path, unsigned int keep)
{
	char dir[PATH_MAX], full[PATH_MAX * 2], **v;
	const char *base = rotated_dir(path, dir, sizeof(dir));
	size_t n = list_rotated(dir, base, false, &v), i, j, gens;

	/* a generation may be there twice for a moment (plain, and .gz being made) */
	for (gens = 0, i = 0; i < n; i++)
		if (!i || strncmp(v[i], v[i - 1], strlen(base) + 21))
			gens++;
	for (i = 0; i < n && gens > keep; i = j) {
		for (j = i; j < n && !strncmp(v[j], v[i], strlen(base) + 21); j++) {
			snprintf(full, sizeof(full), "%s/%s", dir, v[j]);
			unlink(full);
		}
		gens--;
	}
	free_names(v, n);
}
