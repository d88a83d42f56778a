/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A background run's output log that keeps the latest output (procs.h).
 * The file PATH grows to `bound` bytes, then becomes PATH.1 (replacing the
 * previous PATH.1) and a new PATH starts: at most 2 x bound bytes are on
 * disk, and at least the last `bound` bytes of output are kept.
 *
 * Offsets are positions in the process's whole output stream (byte 0 is the
 * first byte it ever wrote), the same before and after a rotation: the
 * bytes [first, size) are kept, where first (plog_first) is the number of
 * bytes dropped from the front. Bytes the disk refused (ENOSPC, EIO) are
 * not part of the stream; they are counted in `failed`.
 */
#ifndef EG_PROCS_PLOG_H
#define EG_PROCS_PLOG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct eg_plog {
	char path[PATH_MAX];		/* "": no log */
	uint64_t bound;			/* bytes a file holds before it rotates */
	int fd;				/* PATH: stream bytes [base, size) */
	int old_fd;			/* PATH.1: [old_base, base); -1 when there is none */
	uint64_t base, old_base, size;
	uint64_t failed;		/* bytes lost to write errors */
	uint64_t rotations;
};

/* An empty log (no file, fds -1). */
void plog_init(struct eg_plog *l);
/* Creates (truncates) PATH; the fds are O_CLOEXEC. */
int plog_open(struct eg_plog *l, const char *path, uint64_t bound);
/* Appends n bytes, rotating as often as the bound says; 0 or the first -errno (then counted). */
int plog_append(struct eg_plog *l, const void *buf, size_t n);
/* The first offset still kept: the bytes dropped from the front. */
uint64_t plog_first(const struct eg_plog *l);
/* Up to n bytes at stream offset off (>= plog_first), across both files; -errno. */
ssize_t plog_pread(const struct eg_plog *l, void *buf, size_t n, uint64_t off);
/* Where the last n lines start (at least plog_first), scanning at most max_scan bytes; -errno. */
int64_t plog_tail_offset(const struct eg_plog *l, unsigned int n, uint64_t max_scan);
/* Closes the fds; with remove, unlinks PATH and PATH.1 too. Accepts an empty log. */
void plog_close(struct eg_plog *l, bool remove);

#endif
