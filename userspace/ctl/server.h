/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The control socket's server side: a listening unix socket in the event
 * loop, one buffered connection per peer, requests dispatched by "op" to
 * handlers the daemon's modules register. Peers are identified by
 * SO_PEERCRED/SO_PEERGROUPS at accept time; an op is either open to any
 * local user (what a user does for themself, such as starting a session)
 * or reserved to root and the members of --ctl-group.
 *
 * Bounds (a peer may be hostile): a request line is at most
 * CTL_MAX_REQUEST bytes; a connection that has not completed a request
 * CTL_IDLE_MS after connecting or after its last request is dropped; one
 * whose unread replies pass CTL_MAX_OUTPUT is dropped; at most
 * CTL_MAX_CONNS connections, of which the last CTL_ADMIN_RESERVE are kept
 * for root and --ctl-group; any other user has CTL_UID_FLOOR whenever
 * there is room, and up to CTL_MAX_CONNS_PER_UID while more than
 * CTL_UID_SLACK stay free for others (so three users holding all they
 * may leave room for every other); at most CTL_MAX_FDS fds per message.
 * A connection is served a bounded batch of requests a round of the loop,
 * and is not read while its replies wait for the peer, so no peer delays
 * another, the tracer or the output.
 */
#ifndef EG_CTL_SERVER_H
#define EG_CTL_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "loop/loop.h"
#include "util/jsonw.h"
#include "util/sbuf.h"

#define CTL_IDLE_MS		5000
#define CTL_MAX_OUTPUT		(8u << 20)
#define CTL_MAX_CONNS		1024
#define CTL_ADMIN_RESERVE	64
#define CTL_MAX_CONNS_PER_UID	320
#define CTL_UID_FLOOR		16
#define CTL_UID_SLACK		240
#define CTL_MAX_FDS		4
/*
 * Connections of processes inside supervised sessions (placer): at most
 * CTL_SESSION_CONNS of one session with all those started inside it, and
 * CTL_SESSIONS_CONNS of all, root's too. An agent that held every
 * connection its user may have (or, as root, every one) locked its
 * harness out, and a shim installed with --fail-open then ran the
 * harness's next command unsupervised. A refused connection is closed at
 * once; the shim asks again for a while (a burst of shells, make -j).
 * Those shares are apart from the user's own (CTL_MAX_CONNS_PER_UID counts
 * connections from outside sessions only: a harness's shims each start an
 * outermost session, and three of them held 320 between them), and one
 * user's sessions take at most CTL_SESSIONS_CONNS_PER_UID of all.
 */
#define CTL_SESSION_CONNS	128
#define CTL_SESSIONS_CONNS	512
#define CTL_SESSIONS_CONNS_PER_UID	256

struct ctl_server;
struct ctl_conn;

struct ctl_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	bool admin;			/* root or a member of --ctl-group */
	/*
	 * A peer that is no process on this socket: the HTTP API (api/) speaks
	 * for a token holder. Its identity is the API's: uid and gid the
	 * daemon's --api-run-as, name the token's; the API found out which
	 * session the process at the other end of its TCP connection is in
	 * (api_session; api_placed false: it could not tell, which counts as
	 * inside one, as a socket peer that cannot be placed does).
	 */
	bool api;
	bool api_placed;
	uint32_t api_session;
	char name[64];
};

enum ctl_access {
	CTL_ADMIN = 0,			/* root or --ctl-group */
	CTL_ANYONE = 1,			/* any local user, for themself */
};

/*
 * A handler replies (ctl_reply_*) or holds the connection for a later or
 * streamed reply. Returning a negative errno without replying sends a
 * generic error.
 */
typedef int (*ctl_handler)(struct ctl_conn *c, const json_t *req, void *arg);

/*
 * Listens on path (replaced if stale); mode 0666, access is checked per op.
 * adopt_fd >= 0: a listening socket inherited from the previous daemon.
 */
int ctl_server_new(struct eg_loop *loop, const char *path, gid_t ctl_gid, int adopt_fd,
		   struct ctl_server **ret);
/*
 * Serves fd (one end of a socketpair) as a connection whose peer is *peer,
 * not what SO_PEERCRED says: the HTTP API's calls (api/). Takes fd.
 */
int ctl_server_adopt(struct ctl_server *s, int fd, const struct ctl_peer *peer);
/*
 * Tells the server which session a connecting process is in (0: none; an
 * error: it cannot be placed, which counts as inside one of its own), for
 * the bounds on sessions' connections. Without it none are told apart.
 */
void ctl_server_set_placer(struct ctl_server *s,
			   int (*placer)(void *arg, const struct ctl_conn *c, uint32_t *ret_session), void *arg);
/* The listening socket (kept open across a re-exec). */
int ctl_server_fd(const struct ctl_server *s);
void ctl_server_free(struct ctl_server *s);
int ctl_register(struct ctl_server *s, const char *op, enum ctl_access access, ctl_handler fn,
		 void *arg);
unsigned int ctl_conn_count(const struct ctl_server *s);
/* What the server refused or cut off, for stats and metrics. */
struct ctl_server_stats {
	uint64_t accepted;
	uint64_t refused;		/* CTL_MAX_CONNS reached */
	uint64_t timed_out;		/* no complete request within CTL_IDLE_MS */
	uint64_t too_large;		/* a request line past CTL_MAX_REQUEST */
	uint64_t bad_request;		/* not a JSON request object */
	uint64_t slow_reader;		/* replies unread past CTL_MAX_OUTPUT */
	uint64_t no_fds;		/* accepting paused: the daemon was out of fds */
};
void ctl_server_stats(const struct ctl_server *s, struct ctl_server_stats *ret);

const struct ctl_peer *ctl_peer(const struct ctl_conn *c);
int ctl_conn_fd(const struct ctl_conn *c);
/*
 * A pidfd of the process at the other end (SO_PEERPIDFD; on kernels
 * without it, pidfd_open() of the pid SO_PEERCRED gave), or -errno: the
 * peer has exited. The caller closes it.
 */
int ctl_conn_pidfd(const struct ctl_conn *c);

/*
 * Sends one line (a '\n' is added); the line must be a complete JSON value.
 * False: the connection is gone (the peer went away, or it was dropped for
 * not reading), its on_close has run, and neither c nor what on_close freed
 * may be used.
 */
bool ctl_send(struct ctl_conn *c, const char *json, size_t len);
/*
 * Every op's reply envelope: ctl_reply_open() starts {"ok":true, the op
 * adds its fields, ctl_reply_send() closes and sends it (an error reply
 * when b ran out of memory) and frees b.
 */
void ctl_reply_open(struct jsonw *w, struct sbuf *b);
void ctl_reply_send(struct ctl_conn *c, struct jsonw *w, struct sbuf *b);
/* {"ok":true} plus the fields in extra (a rendered ",\"k\":v..." or NULL). */
void ctl_reply_ok(struct ctl_conn *c, const char *extra);
void ctl_reply_err(struct ctl_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* fds that came with the current request (SCM_RIGHTS); the handler takes ownership. */
int ctl_take_fd(struct ctl_conn *c);

/*
 * Keeps the connection open past CTL_IDLE_MS while its owner streams to it
 * or waits; on_close(c, arg) is called once when the peer hangs up or the
 * connection is dropped, after which c must not be used.
 */
void ctl_hold(struct ctl_conn *c, void (*on_close)(struct ctl_conn *c, void *arg), void *arg);
/* Bytes queued for the peer and not sent yet (a streaming op's backlog). */
size_t ctl_conn_unsent(const struct ctl_conn *c);
/*
 * Gives up a stream: what is queued after the line being sent is thrown
 * away, json (a last line saying why) is sent, then the connection closes
 * (on_close is called then).
 */
void ctl_send_last(struct ctl_conn *c, const char *json, size_t len);
void ctl_close(struct ctl_conn *c);

#endif
