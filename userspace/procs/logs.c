// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A background run's output: read from its pipe or pty as it comes, kept
 * in its log (plog.h), counted and shown; logs no entry holds, once old,
 * removed (procs/internal.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "procs/internal.h"
#include "util/log.h"

#define LOG_MAX_AGE_S	(7 * 24 * 3600)

static void log_append(struct proc *p, const char *buf, size_t n)
{
	int err;

	if (!p->log.path[0])
		return;
	err = plog_append(&p->log, buf, n);
	/* once per process: the count says the rest (log_failed) */
	if (err && p->log.failed == n)
		p_warn("run %s: writing its log %s: %s; its output is counted, not kept", p->id,
		       p->log.path, strerror(-err));
}

void proc_out_close(struct proc *p)
{
	loop_del(p->ow);
	p->ow = NULL;
	if (p->out_fd >= 0 && p->out_fd != p->in_fd)
		close(p->out_fd);
	p->out_fd = -1;
}

/* Reads what is there (at most rounds x 64 KiB); false at end of file. */
bool proc_out_drain(struct proc *p, int rounds)
{
	char buf[65536];

	while (rounds-- > 0 && p->out_fd >= 0) {
		ssize_t r = read(p->out_fd, buf, sizeof(buf));

		if (r > 0) {
			log_append(p, buf, r);
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return true;
		return false;	/* EOF, or EIO: a pty whose other side is closed */
	}
	return true;
}

void proc_on_out(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct proc *p = arg;

	(void)w;
	(void)fd;
	(void)events;
	if (!proc_out_drain(p, 4))
		proc_out_close(p);
}

/*
 * log_bytes: the output so far (offsets run up to it); log_dropped: what
 * the rotation dropped from the front (the first offset still kept);
 * log_failed: what the disk refused (not in the stream at all).
 */
void proc_log_counts_json(struct jsonw *w, const struct proc *p)
{
	jsonw_uint_field(w, "log_bytes", p->log.size);
	jsonw_uint_field(w, "log_dropped", plog_first(&p->log));
	jsonw_uint_field(w, "log_failed", p->log.failed);
}

/* The last lines of the log (at most 20 lines, 4 KiB), as a JSON array. */
void proc_last_lines_json(struct jsonw *w, struct proc *p)
{
	char buf[4096];
	int64_t off;
	ssize_t r;
	size_t i, start = 0;

	jsonw_key(w, "last_lines");
	jsonw_start_array(w);
	if (p->log.fd >= 0 && p->log.size > plog_first(&p->log)) {
		off = plog_tail_offset(&p->log, 20, sizeof(buf));
		if (off >= 0 && p->log.size - off > sizeof(buf))
			off = p->log.size - sizeof(buf);
		r = off < 0 ? -1 : plog_pread(&p->log, buf, p->log.size - off, off);
		for (i = 0; r > 0 && i <= (size_t)r; i++) {
			if (i == (size_t)r || buf[i] == '\n') {
				if (i > start || i < (size_t)r)
					jsonw_bytes(w, buf + start, i - start);
				start = i + 1;
			}
		}
	}
	jsonw_end_array(w);
}

/* Whether name (PATH or PATH.1 in the logs' directory) is a registered process's log. */
static bool log_in_use(const struct eg_procs *ps, const char *name)
{
	int i;

	for (i = 0; i < PROCS_MAX; i++) {
		const char *base = strrchr(ps->p[i].log.path, '/');
		size_t l;

		if (!ps->p[i].used || !base)
			continue;
		l = strlen(++base);
		if (!strncmp(name, base, l) && (!name[l] || !strcmp(name + l, ".1")))
			return true;
	}
	return false;
}

void procs_clean_old_logs(const struct eg_procs *ps)
{
	DIR *d = opendir(ps->dir);
	struct dirent *e;
	struct stat sb;
	time_t now = time(NULL);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if ((l < 5 || strcmp(e->d_name + l - 4, ".log")) && (l < 7 || strcmp(e->d_name + l - 6, ".log.1")))
			continue;
		if (log_in_use(ps, e->d_name))
			continue;
		if (!fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) &&
		    (!S_ISREG(sb.st_mode) || now - sb.st_mtime > LOG_MAX_AGE_S))
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}
