/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* What the kernel enforces, from the pins under a pin directory. */
#ifndef EG_ENFORCE_INFORCE_H
#define EG_ENFORCE_INFORCE_H

#include "util/jsonw.h"

/*
 * Writes one object: rules_loaded, and when loaded enforcing, rules,
 * sha256 and seq; links (each pinned link: pin, pending (a new_ pin),
 * link_id, type, prog_id, program). Works with or without a daemon.
 */
int inforce_json(const char *pin_dir, struct jsonw *w);

#endif
