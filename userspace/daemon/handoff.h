/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The daemon re-executing itself without dropping sessions or events (daemon/handoff.c). */
#ifndef EG_HANDOFF_H
#define EG_HANDOFF_H

#include <jansson.h>

struct daemon;

/*
 * SIGUSR2: starts the new binary's check (`daemon --check`); once it passes,
 * the loop re-executes it. 0: the check runs (or ran already); else said.
 */
int daemon_handoff(struct daemon *d);
/* The daemon stops: a check still running is killed. */
void handoff_cancel(struct daemon *d);
/* The new daemon's side: the state the previous one left in fd (closed). */
int handoff_read(int fd, json_t **ret);
/* ... its output's counters, unreported drops included, into the new output. */
void handoff_import_output(struct daemon *d, const json_t *state);
/* ... and the sinks' (--syslog, --journal), once they are set up. */
void handoff_import_sinks(struct daemon *d, const json_t *state);

#endif
