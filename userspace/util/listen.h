/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Listening stream sockets for the daemon's loop: the control socket
 * (AF_UNIX, ctl/server.c) and --metrics-listen (TCP, daemon/httpd.c).
 * Their fds are O_CLOEXEC and O_NONBLOCK: the loop accepts until EAGAIN,
 * and no program the daemon starts inherits one.
 */
#ifndef EG_LISTEN_H
#define EG_LISTEN_H

#include <sys/socket.h>
#include <sys/types.h>

/*
 * A socket bound to sa and listening with room for backlog connections.
 * TCP gets SO_REUSEADDR (a restarted daemon binds again at once) and, for
 * IPv6, IPV6_V6ONLY ("[::]" is not 0.0.0.0 too); a unix socket's file gets
 * mode before it listens (0: as the umask made it). The fd, or -errno
 * (nothing is left open; a unix socket's file may be).
 */
int eg_listen(const struct sockaddr *sa, socklen_t len, int backlog, mode_t mode);

/* A listening socket inherited from the previous daemon, made O_CLOEXEC and O_NONBLOCK. 0 or -errno. */
int eg_listen_adopt(int fd);

#endif
