/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where events go: stdout, or a file the daemon owns, written in whole lines
 * only. Records are formatted into output_buf() and closed with
 * output_end(); output_flush() writes them in one go. A record counts as
 * written once write(2) put it in the file; when the disk is full (or any
 * write fails) the records that did not fit are dropped whole, counted in
 * dropped[], any partial line is cut back off the file, and writing resumes
 * at the next flush once there is room again.
 *
 * Files: opened with O_NOFOLLOW; an existing file must be a regular file
 * owned by root and not writable by group or others; new files are 0640
 * (group: --ctl-group). Built-in rotation at max_size bytes keeps `keep`
 * older files, named by the time they were rotated and compressed (gzip
 * format, zlib) in the background; what a compressor killed with its
 * daemon left (a handover, kill -9) is finished after output_open(), in
 * the background too.
 */
#ifndef EG_OUTPUT_H
#define EG_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/sbuf.h"

enum eg_rec_kind {
	EG_REC_EXEC,
	EG_REC_EXEC_FAILED,
	EG_REC_META,			/* daemon, lost, approval, ... */
	EG_REC_EXIT,
	EG_REC__COUNT,
};

/* A record's severity for --min-severity: enum eg_severity; meta records always pass. */
#define EG_SEV_ALWAYS	0xff

/*
 * A tap sees every whole record at each flush, before the file is
 * written, whatever becomes of the file's write (the syslog and journal
 * sinks, live followers). Records below min_severity are not shown to it.
 */
struct eg_tap {
	void (*fn)(struct eg_tap *t, const char *line, size_t len, enum eg_rec_kind kind, int severity);
	void (*flushed)(struct eg_tap *t);	/* after each flush's records, or NULL */
	int min_severity;
	uint64_t filtered;		/* records below min_severity */
	struct eg_tap *next;
};

struct eg_output_opts {
	const char *path;		/* NULL or "-": stdout */
	gid_t gid;			/* (gid_t)-1: root's group */
	uint64_t max_size;		/* 0: no rotation */
	int min_severity;		/* records below are not written to the file (counted) */
	unsigned int keep;		/* rotated files kept */
};

struct eg_output_stats {
	uint64_t written[EG_REC__COUNT];
	uint64_t dropped[EG_REC__COUNT];
	uint64_t write_errors;
	uint64_t rotations;
	uint64_t rotation_failures;	/* nothing kept was lost; the file was written on */
	int last_error;			/* -errno of the last failed write, 0 after a good one */
	uint64_t filtered_severity;	/* records below --min-severity, not written */
};

struct eg_output;

/* Opens the sink; on failure a one-line reason is in err. */
int output_open(const struct eg_output_opts *o, struct eg_output **ret, char *err, size_t errlen);
void output_close(struct eg_output *o);	/* flushes; NULL is fine */

struct sbuf *output_buf(struct eg_output *o);
/* Marks the end of one record (its '\n' is already in the buffer). */
void output_end(struct eg_output *o, enum eg_rec_kind kind);
/* ... with its severity (enum eg_severity, 0: none; EG_SEV_ALWAYS: no filter applies). */
void output_end_sev(struct eg_output *o, enum eg_rec_kind kind, int severity);
void output_add_tap(struct eg_output *o, struct eg_tap *t);
void output_del_tap(struct eg_output *o, struct eg_tap *t);
/* Bytes formatted and not yet flushed. */
size_t output_pending(const struct eg_output *o);
/* Writes what is buffered. 0, or the -errno of a failed write (records were dropped). */
int output_flush(struct eg_output *o);
/* SIGHUP: reopens the path (after logrotate moved it). */
int output_reopen(struct eg_output *o);
const struct eg_output_stats *output_stats(const struct eg_output *o);
/* A handover: the counters go on from the previous daemon's (last_error is not taken). */
void output_restore_stats(struct eg_output *o, const struct eg_output_stats *st);
uint64_t output_dropped_total(const struct eg_output *o);
bool output_is_terminal(const struct eg_output *o);
const char *output_path(const struct eg_output *o);
/*
 * The file opened last (at the start, at a reopen) ended in a line cut by a
 * daemon killed mid-write: a '\n' was written after it, for the start or
 * reopened record to say.
 */
bool output_ended_cut_line(const struct eg_output *o);
/*
 * Why the file opened last (at the start, a reopen, a rotation that found
 * the file replaced) ended in a cut line that could not be ended (a full
 * disk), NULL if none: the open went on, the failed write counted in
 * write_errors, for the caller to say.
 */
const char *output_cut_line_error(const struct eg_output *o);
/*
 * Why the last rotation failed (one line), NULL once one worked; *ret_streak
 * counts the runs of failures begun, to say each run once. A failed
 * rotation moves no kept file and is tried again after a few seconds; a
 * file removed or replaced under the daemon is not rotated but opened
 * again by its path (a failure too, that ends its run: what the file held
 * is in no kept file).
 */
const char *output_rotation_error(const struct eg_output *o, uint64_t *ret_streak);

/*
 * Called after a rotation with the new file's empty buffer, to write the
 * record that starts it (a daemon record saying which file it continues).
 * prev is the previous file's new name, the time of the rotation in UTC
 * ("events.jsonl.20260119T143000.123Z", compressed to "....123Z.gz" in
 * the background), NULL with keep 0 (the file was started over) and when
 * the file was removed under us (written anew).
 */
void output_set_rotate_cb(struct eg_output *o, void (*fn)(struct eg_output *o, const char *prev,
							   void *arg), void *arg);

#endif
