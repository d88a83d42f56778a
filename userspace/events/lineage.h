/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The recent execs the daemon wrote, by exec id: what an exec record says
 * of its parent ("parent": exec_id, filename, comm) and an exit record of
 * the image that ended (filename, severity). Bounded: LINEAGE_ENTRIES
 * execs and LINEAGE_BYTES of file names, the oldest forgotten first. A
 * parent that is not here (it exec'd before the daemon started, or so long
 * ago that it was forgotten) is written with null filename and comm.
 */
#ifndef EG_LINEAGE_H
#define EG_LINEAGE_H

#include <stddef.h>
#include <stdint.h>

#define LINEAGE_ENTRIES		65536
#define LINEAGE_BYTES		(16u << 20)
#define LINEAGE_INLINE		48

struct eg_lineage_entry {
	uint32_t pid;
	uint64_t ktime;
	char *filename;
	uint32_t filename_len;
	uint8_t severity;		/* enum eg_severity of the rule that judged it, 0: none */
	char comm[16];
	int32_t next;			/* hash chain, -1: end */
	uint32_t bucket;
	char inl[LINEAGE_INLINE];	/* a name shorter than this is kept here, not allocated */
};

struct eg_lineage;

struct eg_lineage *lineage_new(size_t max_entries, size_t max_bytes);
void lineage_free(struct eg_lineage *l);
/* Remembers an exec (a later add of the same id replaces nothing: ids are unique). */
void lineage_add(struct eg_lineage *l, uint32_t pid, uint64_t ktime, const char *filename, size_t len,
		 const char comm[16], uint8_t severity);
/* NULL when the exec is not (or no longer) known. */
const struct eg_lineage_entry *lineage_get(const struct eg_lineage *l, uint32_t pid, uint64_t ktime);
size_t lineage_count(const struct eg_lineage *l);

#endif
