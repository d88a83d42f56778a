/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The kernel rule maps: writing a compiled policy into the set not in
 * force, switching to it in one store, and reading back what is in force
 * (from a loaded object's maps or from the pins, with no daemon).
 */
#ifndef EG_ENFORCE_KMAPS_H
#define EG_ENFORCE_KMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include "enforce/compile.h"

/* Map fds; -1 when not open. */
struct kmaps {
	int krules, kindex, kmember, kglobs, kconf, kstate, kctx;
};

/* Names of the rule maps as pinned (docs/maps.md). */
extern const char *const kmaps_names[];

/* Opens the pins under dir (kmaps_close() closes them). -ENOENT: none pinned. */
int kmaps_open_pinned(const char *dir, struct kmaps *ret);
void kmaps_close(struct kmaps *m);

/*
 * Writes k into the set not in force and switches to it; the previous set
 * is then cleared. enforce: the kernel acts on a deny (else it only judges
 * and reports). Returns 0 and the new sequence number in *ret_seq.
 */
int kmaps_load(const struct kmaps *m, const struct kc_prog *k, bool enforce, uint32_t *ret_seq);

/*
 * New maps, no program acting on them yet: their sequence goes on from
 * seq (another copy's, in force), so that its records' seq never names a
 * rule set of these maps. The set seq names stays empty: kmaps_load next.
 */
int kmaps_continue(const struct kmaps *m, uint32_t seq);

/* Rules off (seq 0) and both sets cleared. */
int kmaps_unload(const struct kmaps *m);

/* What is in force. loaded false: no rules (seq 0). */
struct kmaps_status {
	bool loaded;
	uint32_t seq;
	uint32_t set;
	struct eg_kconf conf;
};
int kmaps_status(const struct kmaps *m, struct kmaps_status *ret);

#endif
