/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Where records go besides --output: a syslog socket (RFC 5424 datagrams,
 * events/syslog.c) and journald (its native protocol, events/journal.c).
 * Each is an output tap (events/output.h): it sees every whole JSON record
 * at each flush, sends it without ever waiting (MSG_DONTWAIT), and counts
 * what it could not send, as the file counts its drops.
 */
#ifndef EG_SINKS_H
#define EG_SINKS_H

#include <stdint.h>
#include "events/output.h"

#define SYSLOG_DEFAULT_SOCKET	"/dev/log"
#define JOURNAL_DEFAULT_SOCKET	"/run/systemd/journal/socket"
#define SYSLOG_FACILITY		10	/* authpriv: security records, readable by root and adm */

struct eg_sink_stats {
	uint64_t sent;
	uint64_t dropped;		/* not sent: no listener, its queue full, too large */
	uint64_t cut;			/* syslog: sent with argv cut to its limit (sink_set_max_bytes) */
	int last_error;			/* -errno of the last failure, 0 after a good send */
};

struct eg_sink;

/*
 * kind: "syslog" or "journal"; path: the socket. Never fails for want of a
 * listener (counted). Datagrams the listener's queue has no room for wait
 * in a backlog (4 MiB), sent as the socket takes them (loop: an EPOLLOUT
 * watch; NULL: at each flush); past it they are dropped and counted. The
 * backlog's buffer holds at most 4.5 MiB however long it never empties
 * (allocated: at most 8 MiB, freed once it empties).
 */
struct eg_loop;
int sink_new(const char *kind, const char *path, int min_severity, struct eg_loop *loop, struct eg_sink **ret);
/* Waits up to ms for the listener to take what waits in the backlog (a stop, a handover). */
void sink_drain(struct eg_sink *s, unsigned int ms);
/* What still waits is given up, counted as dropped (before a handover). */
void sink_drop_backlog(struct eg_sink *s);
void sink_free(struct eg_sink *s);	/* drains for a second first */
struct eg_tap *sink_tap(struct eg_sink *s);
const struct eg_sink_stats *sink_stats(const struct eg_sink *s);
/* The bytes the backlog's buffer holds, datagrams sent and not yet moved out of it included. */
size_t sink_backlog_held(const struct eg_sink *s);
size_t sink_backlog_allocated(const struct eg_sink *s);	/* the buffer's size, for tests */
const char *sink_path(const struct eg_sink *s);
const char *sink_kind(const struct eg_sink *s);
/* The stats of a handover's previous daemon go on. */
void sink_restore_stats(struct eg_sink *s, const struct eg_sink_stats *st);

/* RFC 5424 syslog severity (0 emerg .. 7 debug) for a record. */
int sink_syslog_severity(const char *line, size_t len, int rule_severity);

#define SYSLOG_MAX_DEFAULT	8000	/* under rsyslog's default maxMessageSize (8096) */
/*
 * syslog: a datagram longer than max (0: no limit) carries its record with
 * argv cut to fit (sink_cut_argv), counted in cut; one that cannot be made
 * to fit is dropped, counted.
 */
void sink_set_max_bytes(struct eg_sink *s, size_t max);
/* The syslog HOSTNAME field (--hostname); by default gethostname()'s. */
void sink_set_host(struct eg_sink *s, const char *host);
/*
 * The record line (no '\n') into out with its argv's strings cut, in
 * order, so that it is at most max bytes, and
 * "syslog_cut":{"bytes":the record's length,"argc":N,"argv_kept":K} added
 * (the last argument kept may be cut). -E2BIG: it cannot fit even with no
 * argument; -EINVAL: not a record with an argv.
 */
int sink_cut_argv(struct sbuf *out, const char *line, size_t len, size_t max);
/*
 * A record that cannot be cut to fit (its path and working directory are
 * long): the record's own v, type, time, exec_id, pid, uid, session,
 * decision, rule, action, layer and reason (strings up to 256 bytes), and
 * "syslog_cut":{"bytes":the record's length,"stub":true}.
 */
int sink_stub_record(struct sbuf *out, const char *line, size_t len);

/* Formatting, for tests: the datagram for one JSON record (no '\n'). */
int sink_format_syslog(struct sbuf *b, const char *line, size_t len, int rule_severity, const char *host,
		       int pid);
int sink_format_journal(struct sbuf *b, const char *line, size_t len, int rule_severity);

#endif
