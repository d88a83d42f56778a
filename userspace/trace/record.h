/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Decoding of one ring-buffer record (struct eg_event + its strings) into
 * views of its fields. The record's memory is the ring buffer's, mapped
 * read-only: decoding never writes to it; argv elements point into it and
 * the working directory is rebuilt into the caller's buffer.
 */
#ifndef EG_RECORD_H
#define EG_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "execgate.h"
#include "util/sbuf.h"

struct eg_str {
	const char *p;
	size_t len;
};

/* A middle script of a '#!' chain (chain[] of the record). */
struct eg_chain_view {
	uint64_t dev, ino;
	struct eg_str path;		/* rebuilt "/a/b" (its name alone for EG_CE_ANON) */
	uint16_t flags;			/* EG_CE_* */
};

struct eg_record {
	struct eg_event h;		/* a copy: aligned and writable */
	struct eg_str filename;		/* exec: the file that runs, rebuilt "/a/b"; failed: as passed */
	struct eg_str requested;	/* exec: the path as spelled (bprm->filename) */
	struct eg_str interp;		/* a script's interpreter as its '#!' spells it */
	struct eg_str script;		/* the script file, rebuilt (EG_F_SCRIPT_FOUND) */
	struct eg_chain_view chain[EG_CHAIN_MAX];	/* a '#!' chain's middle scripts, outermost first */
	size_t chain_n;
	struct eg_str cwd;		/* "/a/b", in the caller's buffer */
	struct eg_str *argv;		/* the whole arguments kept */
	size_t argv_kept;
	bool argv_truncated;		/* argv cut (at an argument boundary) */
	/* a loader run as the command: the kernel's record of the program it mapped, or NULL */
	const struct eg_record *loaded;
	bool filename_truncated;	/* the file that runs (a script's interpreter, for a script) */
	bool script_truncated;		/* the script's own path (EG_F_SCRIPT_TRUNC) */
	bool requested_truncated;	/* the path as spelled (EG_F_REQUESTED_TRUNC) */
	bool chain_truncated;		/* a middle script's path (EG_CE_TRUNC) */
	bool cwd_truncated;
};

/* Reusable buffers, so decoding allocates only while records grow. */
struct eg_decoder {
	struct sbuf cwd;
	struct sbuf filename;
	struct sbuf script;
	struct sbuf chain[EG_CHAIN_MAX];
	struct eg_str *argv;
	size_t argv_cap;
};

/*
 * Decodes data[0..size). Returns 0, or -EINVAL for a record whose lengths
 * do not add up (never expected from our BPF side; counted, not trusted).
 */
int record_decode(struct eg_decoder *d, const void *data, size_t size, struct eg_record *ret);
void decoder_free(struct eg_decoder *d);

#endif
