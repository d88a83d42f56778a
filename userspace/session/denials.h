/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The refusals of the sessions' Landlock domains, read from audit (Landlock
 * ABI 7, audit on) and counted per session: session/denials.c.
 */
#ifndef EG_SESSION_DENIALS_H
#define EG_SESSION_DENIALS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "util/jsonw.h"

struct eg_denials;
struct eg_loop;

struct eg_denials_opts {
	struct eg_loop *loop;
	int landlock_abi;		/* below 7 the kernel logs nothing to read */
	/* the session whose launcher is pid (the maker of a domain), or 0 */
	uint32_t (*session_of_launcher)(void *arg, pid_t pid);
	/* one refusal more in session: its count now, 0 once it has ended */
	uint64_t (*counted)(void *arg, uint32_t session);
	/* one complete JSON line (with its '\n'), and a short text */
	void (*emit)(void *arg, const char *json, size_t len, const char *text);
	void *arg;
};

/* Subscribes to audit's log where it can; where not, remembers why (0 all the same). */
int denials_new(const struct eg_denials_opts *o, struct eg_denials **ret);
void denials_free(struct eg_denials *d);
/* Counts what audit has delivered by now (a session's end record comes after its refusals). */
void denials_drain(struct eg_denials *d);
/*
 * A handover: the Landlock domains known to be session's ("domains": [hex
 * ids]); audit names a domain's maker once only, so the next daemon could
 * not tell whose they are.
 */
struct jsonw;
void denials_export(const struct eg_denials *d, uint32_t session, struct jsonw *w);
void denials_import(struct eg_denials *d, uint32_t session, const json_t *arr);
/* {"counted", "audit_enabled", "why", "unattributed", "lost"} for status. */
void denials_status(const struct eg_denials *d, struct jsonw *w);

#endif
