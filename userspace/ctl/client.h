/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The client side of the control socket, for the CLI verbs. */
#ifndef EG_CTL_CLIENT_H
#define EG_CTL_CLIENT_H

#include <stddef.h>
#include <jansson.h>
#include "util/sbuf.h"

/*
 * Connects to the daemon of pin_path (NULL: the default). Returns an fd or
 * -errno: -ENOENT/-ECONNREFUSED when no daemon listens there.
 */
int ctl_connect(const char *pin_path);
/* Sends one request line with optional fds (SCM_RIGHTS). */
int ctl_send_request(int fd, const char *json, size_t len, const int *fds, int nfds);
/*
 * Reads one line (without '\n') into line; 0, -EPIPE at EOF, -ETIMEDOUT
 * after timeout_ms (-1: wait forever), -E2BIG past max bytes.
 */
int ctl_read_line(int fd, struct sbuf *line, int timeout_ms, size_t max);
/*
 * One request, one reply: connect, send, read and parse the reply. On a
 * reply with "ok":false, returns -EREMOTEIO and the daemon's error in err,
 * and still hands the reply over in *ret (the caller frees it).
 */
int ctl_call(const char *pin_path, const char *json, json_t **ret, char *err, size_t errlen);
/* The same with a reply timeout (-ETIMEDOUT). */
int ctl_call_timeout(const char *pin_path, const char *json, int timeout_ms, json_t **ret,
		     char *err, size_t errlen);
/* A one-line message for a ctl_connect() failure. */
const char *ctl_connect_hint(int err);

#endif
