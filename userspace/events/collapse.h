/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --exec-failed=collapse: a PATH search (execvp, a shell) tries one
 * directory after another and fails with ENOENT in each until one has the
 * command. Those failures are held back per thread and, when the same
 * thread's next exec with the same arguments and the same command name
 * succeeds, folded into that exec's record as
 * "path_search":{"failed":N,"dirs":[...]} instead of one record each.
 *
 * Nothing is lost: failures that are not followed by such an exec within
 * COLLAPSE_HOLD_NS of the first one (command not found), that another
 * exec or failure of the thread interrupts, or that pass the count and
 * memory bounds, are written as they were formatted, only later.
 */
#ifndef EG_COLLAPSE_H
#define EG_COLLAPSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "events/format.h"
#include "trace/record.h"

#define COLLAPSE_HOLD_NS	(2ull * 1000000000ull)	/* from the first failure to the exec */
#define COLLAPSE_CHAIN_MAX	64			/* failures held per thread */
#define COLLAPSE_CHAINS_MAX	256			/* threads with failures held */
#define COLLAPSE_BYTES_MAX	(8u << 20)		/* bytes held in all */

struct eg_collapse;

/* Writes one held record (a whole line, '\n' included) to the output. */
typedef void (*collapse_emit_fn)(void *arg, const char *line, size_t len);

struct eg_collapse_stats {
	uint64_t folded;		/* failures folded into an exec's path_search */
	uint64_t written_late;		/* failures held, then written after all */
	uint64_t discarded;		/* failures left out with the filtered exec they belong to */
	uint64_t held;			/* held now */
};

struct eg_collapse *collapse_new(collapse_emit_fn emit, void *arg);
void collapse_free(struct eg_collapse *c);	/* writes what is held first; NULL is fine */

/*
 * A failed exec, formatted as line[0..len). Returns true when it is held;
 * false: the caller writes it now (after anything this call wrote). With
 * must_show (the policy refused it, or asked, or could not judge) it is
 * never held, so never folded or left out with a filtered exec: it ends
 * its thread's search like any failure that cannot be held.
 */
bool collapse_failed(struct eg_collapse *c, const struct eg_record *r, const char *line, size_t len,
		     bool must_show);
/*
 * A successful exec, before it is formatted. When it ends a PATH search,
 * the failures are folded: *ret describes them (valid until the next call)
 * and true is returned. Otherwise whatever its thread had held is written
 * first and false is returned.
 */
bool collapse_exec(struct eg_collapse *c, const struct eg_record *r, struct eg_path_search *ret);
/* The same for an exec the filters leave out: the failures it ends go with it; returns how many. */
unsigned int collapse_discard(struct eg_collapse *c, const struct eg_record *r);
/* Writes what was held longer than COLLAPSE_HOLD_NS before now (CLOCK_BOOTTIME ns). */
void collapse_expire(struct eg_collapse *c, uint64_t now_ns);
/* Writes everything held (stop, handover). */
void collapse_flush(struct eg_collapse *c);
void collapse_stats(const struct eg_collapse *c, struct eg_collapse_stats *ret);

#endif
