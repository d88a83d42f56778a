/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The service manager's readiness protocol (sd_notify(3), systemd's
 * Type=notify): one datagram of "KEY=VALUE" lines to the unix socket named
 * by $NOTIFY_SOCKET ('@' for an abstract name). Written here rather than
 * linked from libsystemd: it is a sendto(), and the daemon runs without
 * systemd too. Without $NOTIFY_SOCKET every call does nothing.
 */
#ifndef EG_NOTIFY_H
#define EG_NOTIFY_H

/*
 * Sends state ("READY=1", "STOPPING=1", "STATUS=...", lines joined by
 * '\n'). Returns 0 (also when no manager listens) or -errno; a failure is
 * logged here, once per kind of error.
 */
int notify_send(const char *state);

/* "RELOADING=1" with the MONOTONIC_USEC= that newer managers require; READY=1 ends it. */
int notify_reloading(void);

#endif
