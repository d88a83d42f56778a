/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The refusals of the sessions' Landlock domains, read from audit (Landlock
 * ABI 7, audit on) and counted per session: session/denials.c.
 */
#ifndef EG_SESSION_DENIALS_H
#define EG_SESSION_DENIALS_H

#include <stdint.h>
#include <jansson.h>
#include "util/jsonw.h"

struct eg_sessions;

/* Subscribes to audit's log where it can; where not, remembers why (0 all the same). */
int denials_init(struct eg_sessions *s);
void denials_fini(struct eg_sessions *s);
/* Counts what audit has delivered by now (a session's end record comes after its refusals). */
void denials_drain(struct eg_sessions *s);
/*
 * A handover: the Landlock domains known to be session's ("domains": [hex
 * ids]); audit names a domain's maker once only, so the next daemon could
 * not tell whose they are.
 */
struct jsonw;
void denials_export(const struct eg_sessions *s, uint32_t session, struct jsonw *w);
void denials_import(struct eg_sessions *s, uint32_t session, const json_t *arr);
/* {"counted", "audit_enabled", "why", "unattributed", "lost"} for status. */
void denials_status(const struct eg_sessions *s, struct jsonw *w);

#endif
