/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The exit record (EG_EVENT_EXIT): a process's end, its status and lifetime (docs/events.md). */
#ifndef EG_EXIT_H
#define EG_EXIT_H

#include "events/format.h"
#include "execgate.h"

struct eg_lineage_entry;

/* A copy of the ring buffer's record (it is read-only and may be unaligned); -EINVAL if too short. */
int exit_decode(const void *data, size_t size, struct eg_exit_event *ret);
/* "SIGKILL" for a wait status that says killed by signal 9; NULL for an exit. */
const char *exit_signal_name(uint32_t status);
/* One JSON line; e is the exec that ended, from the recent execs (NULL: not known). */
void format_exit_json(struct sbuf *b, const struct eg_exit_event *x, const struct eg_format_ctx *fc,
		      const struct eg_lineage_entry *e);
/* One line of the terminal table. */
void format_exit_text(struct sbuf *b, const struct eg_exit_event *x, const struct eg_format_ctx *fc,
		      const struct eg_lineage_entry *e);

#endif
