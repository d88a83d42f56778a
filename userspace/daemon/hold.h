/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Exec records of a dynamic loader run as the command, held until the
 * kernel's record of the program the loader mapped (EG_EVENT_LOADED)
 * arrives, so that one exec event names both programs and one verdict.
 * Bounded: HOLD_MAX records, each at most HOLD_MS; past either it is
 * written alone (its "loaded" null).
 */
#ifndef EG_HOLD_H
#define EG_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOLD_MAX	256
#define HOLD_MS		100

struct eg_hold;

int hold_new(struct eg_hold **ret);
void hold_free(struct eg_hold *h);
/* Keeps a copy of an exec record; -ENOSPC (full) or -ENOMEM: the caller writes it now. */
int hold_put(struct eg_hold *h, uint32_t pid, uint64_t ktime, const void *data, size_t size,
	     uint64_t now_ms);
/* The held record of exec (pid, ktime), taken out (the caller frees it), or NULL. */
void *hold_take(struct eg_hold *h, uint32_t pid, uint64_t ktime, size_t *ret_size);
/* The oldest held record, taken out, when it is past its time (or always with force); else NULL. */
void *hold_expired(struct eg_hold *h, uint64_t now_ms, bool force, size_t *ret_size);
size_t hold_count(const struct eg_hold *h);

#endif
