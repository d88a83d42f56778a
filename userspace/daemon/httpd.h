/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * --metrics-listen ADDR:PORT: a minimal HTTP/1.0 server on the daemon's
 * event loop for Prometheus to scrape. It answers GET (and HEAD) /metrics
 * and nothing else, one request per connection, then closes. A peer is
 * bounded like a control socket peer: HTTPD_MAX_REQUEST bytes of request
 * head, HTTPD_TIMEOUT_MS to send it and read the answer, HTTPD_MAX_CONNS
 * connections at a time (a new one evicts the oldest that is idle); no
 * peer delays another or the tracer.
 */
#ifndef EG_HTTPD_H
#define EG_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "loop/loop.h"
#include "util/sbuf.h"

#define HTTPD_MAX_REQUEST	8192
#define HTTPD_TIMEOUT_MS	5000
#define HTTPD_MAX_CONNS		16

struct eg_httpd;

/* Appends the body of GET /metrics to b. */
typedef void (*httpd_render_fn)(struct sbuf *b, void *arg);

struct httpd_addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool loopback;
	char text[80];			/* as it will be shown: "127.0.0.1:9100", "[::1]:9100" */
};

/*
 * Parses "IPV4:PORT" or "[IPV6]:PORT" (or "localhost:PORT"). A host must
 * be spelled: ":PORT", "PORT" and names other than localhost are refused,
 * so a bare port never means every interface. Returns 0, or -EINVAL with
 * a one-line reason in err.
 */
int httpd_parse_addr(const char *spec, struct httpd_addr *ret, char *err, size_t errlen);

/*
 * The request head received so far, buf[0..len): 0 while it is
 * incomplete, else the status to answer: 200 for GET or HEAD /metrics
 * (*ret_head for HEAD), 400, 404, 405, or 431 past HTTPD_MAX_REQUEST bytes.
 */
int httpd_parse_request(const char *buf, size_t len, bool *ret_head);

int httpd_new(struct eg_loop *loop, const struct httpd_addr *a, httpd_render_fn render, void *arg,
	      struct eg_httpd **ret);
void httpd_free(struct eg_httpd *h);
void httpd_stats(const struct eg_httpd *h, uint64_t *ret_requests, uint64_t *ret_rejected);

#endif
