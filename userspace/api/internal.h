/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The API's own parts (api.h): the server and its connections (server.c),
 * tokens (auth.c), placing a TCP peer (peer.c), calls to the daemon
 * (call.c), the routes (routes.c), streams of records (stream.c), a run's
 * terminal (pty.c) and the page (page.c). Everything but api_start and
 * api_stop runs in the API's thread.
 */
#ifndef EG_API_INTERNAL_H
#define EG_API_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <libwebsockets.h>
#include "api/api.h"
#include "ctl/server.h"
#include "util/sbuf.h"

#define API_MAX_CONNS		64		/* HTTP and WebSocket connections at once */
#define API_MAX_HEADER		8192		/* request line and headers */
#define API_MAX_BODY		(256 * 1024)	/* a request body (the control socket's request line) */
#define API_MAX_MESSAGE		(64 * 1024)	/* a WebSocket message, all its fragments */
#define API_MAX_QUEUED		(4u << 20)	/* unsent to a client past which it is dropped */
#define API_END_GRACE_S		10		/* a stream that ended: this long for its client to read the rest */
#define API_IDLE_S		5		/* to send a request, and between requests */
#define API_HEAD_S		10		/* a request's head, however slowly it comes */
#define API_TICK_US		50000		/* streams and terminals look for more this often */
#define API_CALL_MS		10000		/* the daemon's answer to one call */
#define API_MAX_TOKENS		64
/* event streams at once: each is one of the daemon's 64 followers, the rest are query --follow's */
#define API_MAX_STREAMS		16
#define API_MAX_PATH		512

struct lws;
struct lws_context;
struct query_filter;

struct api_token {
	char name[64];
	uint8_t sha[32];
};

struct eg_api {
	struct eg_api_opts o;
	char addr[64];
	int port;
	char *token_file, *output_path;
	struct api_token tok[API_MAX_TOKENS];
	size_t ntok;
	struct lws_context *ctx;
	int listen_fd;			/* eg_listen's (util/listen.h), watched by lws as a raw fd; -1: none */
	pthread_t thread;
	bool started;
	volatile int stop;
	unsigned int nconns;
	unsigned int nstreams;		/* event streams (stream_events), up to API_MAX_STREAMS */
	/* connections whose request head is not in yet, and since when (heads_sweep) */
	struct { struct lws *wsi; uint64_t since_ms; } heads[API_MAX_CONNS + 1];
	unsigned int nheads;
	lws_sorted_usec_list_t sul_heads;
	struct lws_context *heads_ctx;	/* where sul_heads is scheduled */
	bool sweeping;
	struct eg_api_stats st;
	/*
	 * Sends one control request as peer; *ret_fd >= 0 (when ret_fd is
	 * given) keeps the connection for the lines that follow (a stream).
	 * The fuzzer puts its own here.
	 */
	json_t *(*call)(struct eg_api *a, const struct ctl_peer *peer, const json_t *req, int *ret_fd,
			char *err, size_t errlen);
	/* the pty master of a run (procs_pty_fd), through the loop's lock */
	int (*pty_fd)(struct eg_api *a, const char *id);
	/* which session the peer of a TCP socket is in (peer_place; the fuzzer's own) */
	int (*place)(int tasks_fd, int sockfd, bool *ret_placed, uint32_t *ret_session);
};

enum conn_kind { CONN_HTTP = 0, CONN_SSE, CONN_WS_EVENTS, CONN_WS_PTY };

/* One HTTP connection (its current request) or WebSocket: libwebsockets' per-connection data. */
struct api_conn {
	struct eg_api *a;
	enum conn_kind kind;
	bool counted;
	char token[64];			/* the token's name, "" before auth */
	bool placed;			/* the peer's process was found (not in a session: authorize) */
	uint32_t session;
	char method[8];
	char path[API_MAX_PATH];
	struct sbuf body;
	bool body_too_large;
	/* the answer */
	int status;
	const char *ctype;
	struct sbuf out;
	size_t out_off;
	uint32_t frag_off;		/* of the WebSocket message at out_off: bytes already sent */
	bool hdr_sent, close_after, done;
	bool dropped;			/* left too much unread: closed, whatever is queued */
	bool body_complete;		/* LWS_CALLBACK_HTTP_BODY_COMPLETION came for this request */
	/* a stream of control lines (follow); counted in a->nstreams while streaming */
	int stream_fd;
	bool streaming;
	struct sbuf in;
	struct query_filter *filter;
	/* WebSocket: queued frames ([1 byte text?][4 bytes length][bytes]...) and a message coming in */
	struct sbuf msg;
	bool msg_binary, msg_too_large;
	/* a run's terminal */
	char run[32];
	uint64_t log_off;
	int pty;
	bool exited;
};

/* auth.c */
int auth_load(struct eg_api *a, const char *path, char *err, size_t errlen);
/* The token's name for an "Authorization: Bearer TOKEN" value, or NULL. */
const char *auth_check(const struct eg_api *a, const char *header);

/* peer.c: which session the process at the other end of a TCP socket is in */
int peer_place(int tasks_fd, int sockfd, bool *ret_placed, uint32_t *ret_session);

/* call.c */
json_t *call_ctl(struct eg_api *a, const struct ctl_peer *peer, const json_t *req, int *ret_fd,
		 char *err, size_t errlen);
int call_pty_fd(struct eg_api *a, const char *id);
/* The peer of a request on connection c (wsi's socket): placed when place is true. */
void call_peer(struct eg_api *a, struct lws *wsi, const struct api_conn *c, bool place, struct ctl_peer *ret);
/* Reads what a stream has (non-blocking): whole lines to fn; 1 at its end, 0, -errno. */
int call_stream_read(struct api_conn *c, void (*fn)(struct api_conn *c, const char *line, size_t len));

/* routes.c (reply_json, reply_error: conn.c): an HTTP request whose body is in c->body; fills c->status, c->ctype, c->out (or starts a stream) */
void routes_http(struct eg_api *a, struct lws *wsi, struct api_conn *c);
void reply_json(struct api_conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void reply_error(struct api_conn *c, int status, const char *msg);

/* stream.c: records, filtered, to an SSE response or a WebSocket */
int stream_events(struct eg_api *a, struct lws *wsi, struct api_conn *c, char *err, size_t errlen);
void stream_tick(struct lws *wsi, struct api_conn *c);
/* Parses query arguments into a filter (query.h); -EINVAL with err. */
int stream_filter(struct lws *wsi, struct query_filter *f, char *since, size_t sincelen, char *err, size_t errlen);

/* pty.c: a run's terminal over WebSocket */
int apty_open(struct eg_api *a, struct lws *wsi, struct api_conn *c, const char *id, char *err, size_t errlen);
void apty_message(struct lws *wsi, struct api_conn *c);
void apty_tick(struct lws *wsi, struct api_conn *c);

/* conn.c: a WebSocket frame queued (text or binary), a connection made ready for its next request */
void ws_queue(struct lws *wsi, struct api_conn *c, bool text, const void *data, size_t len);
/* A client that leaves more than API_MAX_QUEUED unread: counted, and closed at once. */
void conn_drop(struct lws *wsi, struct api_conn *c);
void conn_reset(struct api_conn *c);
/*
 * Query argument i ("NAME=VALUE", URL-decoded) into buf: its length;
 * -ENOENT past the last; -E2BIG when it does not fit in len, buf then
 * holding its NAME alone (cut to fit).
 */
int urlarg(struct lws *wsi, int i, char *buf, size_t len);

/*
 * server.c: the libwebsockets context serving a, listening on a's address
 * (or not at all: the fuzzer adopts its own sockets).
 */
struct lws_context *api_context_new(struct eg_api *a, bool listen);

/* page.c */
extern const char api_page_html[];

#endif
