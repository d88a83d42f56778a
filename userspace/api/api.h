/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The HTTP and WebSocket API (docs/api.md), off unless the daemon is
 * given --api-listen: what the control socket offers a user who is not
 * root (runs, their output, input, keys and signals, a run's terminal over
 * WebSocket), the approvals, and the event stream, for a harness that is
 * not on this host's unix socket; and at / a page where a person answers
 * approvals. libwebsockets serves it in a thread of its own; every call
 * reaches the daemon as a control-socket request on a socketpair the
 * control server adopts (ctl_server_adopt), with the API's identity: the
 * token's name, --api-run-as's uid and gid, and the session (if any) of
 * the process at the other end of the TCP connection.
 */
#ifndef EG_API_H
#define EG_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct eg_loop;
struct ctl_server;
struct eg_procs;
struct eg_api;

struct eg_api_opts {
	struct eg_loop *loop;
	struct ctl_server *ctl;
	struct eg_procs *procs;		/* NULL: no runs (no sessions here) */
	const char *listen;		/* "PORT", "ADDR:PORT", "[ADDR6]:PORT"; loopback unless spelled */
	const char *token_file;		/* "NAME TOKEN" a line; root's, not readable by others */
	bool run_as_set;		/* --api-run-as: runs become this user; else runs are refused */
	uid_t run_as_uid;
	gid_t run_as_gid;
	const char *output_path;	/* the daemon's records, for the events' backlog (?since=) */
	int tasks_fd;			/* the task storage map: which session a peer process is in */
};

/* What the API refused or cut off, and what it served (atomic counters, any thread may read). */
struct eg_api_stats {
	uint64_t requests;		/* HTTP requests and WebSocket upgrades with a valid token */
	uint64_t unauthorized;		/* answered 401: no token, or not one of --api-token-file's */
	uint64_t refused;		/* connections past API_MAX_CONNS */
	uint64_t too_large;		/* a request body or WebSocket message past its bound */
	uint64_t slow_clients;		/* dropped: more than API_MAX_QUEUED waited for them */
	uint64_t in_session;		/* refused: the peer runs inside a supervised session, or cannot be placed */
};

/* Parses o->listen, reads the tokens, binds and starts the server thread. err: one line. */
int api_start(const struct eg_api_opts *o, struct eg_api **ret, char *err, size_t errlen);
/* What api_start() reads of o, read and let go: the address, the tokens; nothing bound. err: one line. */
int api_check(const struct eg_api_opts *o, char *err, size_t errlen);
/* Stops the thread and closes every connection; NULL is fine. The loop's lock must not be held. */
void api_stop(struct eg_api *a);
void api_get_stats(const struct eg_api *a, struct eg_api_stats *ret);
/* The port bound (the one asked for, or the kernel's pick for port 0). */
int api_port(const struct eg_api *a);

/* "ADDR:PORT" -> address and port; a bare port is 127.0.0.1. -EINVAL with err. */
int api_parse_listen(const char *s, char *addr, size_t addrlen, int *ret_port, char *err, size_t errlen);

#endif
