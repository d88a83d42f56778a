// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The control server on a loop of its own, its peer in the same process:
 * how requests are dispatched and answered (docs/control.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "unit.h"
#include "ctl/server.h"
#include "util/clock.h"

struct bench {
	struct eg_loop *loop;
	struct ctl_server *s;
	char dir[64], path[108];
	int peer;
	char got[65536];
	size_t len;
	unsigned int want;		/* lines: the loop stops when they are in (0: when no conn is left) */
	unsigned int calls, round_calls, max_round_calls;
	unsigned int hang_up;		/* the peer closes after this many dispatches */
	unsigned int open_at_hang_up;
	uint64_t deadline;
};

static int op_ok(struct ctl_conn *c, const json_t *req, void *arg)
{
	struct bench *b = arg;

	(void)req;
	b->calls++;
	b->round_calls++;
	ctl_reply_ok(c, NULL);
	return 0;
}

static int op_fail(struct ctl_conn *c, const json_t *req, void *arg)
{
	(void)c;
	(void)req;
	(void)arg;
	return -EIO;
}

static unsigned int lines(const struct bench *b)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < b->len; i++)
		n += b->got[i] == '\n';
	return n;
}

/* After every round: read what came back, note the round's dispatches. */
static void idle(void *arg)
{
	struct bench *b = arg;
	ssize_t n;

	if (b->round_calls > b->max_round_calls)
		b->max_round_calls = b->round_calls;
	b->round_calls = 0;
	if (b->hang_up && b->calls >= b->hang_up && b->peer >= 0) {
		b->open_at_hang_up = ctl_conn_count(b->s);
		close(b->peer);
		b->peer = -1;
	}
	while (b->peer >= 0 &&
	       (n = recv(b->peer, b->got + b->len, sizeof(b->got) - 1 - b->len, MSG_DONTWAIT)) > 0)
		b->len += n;
	b->got[b->len] = '\0';
	if ((b->want && lines(b) >= b->want) || (!b->want && !ctl_conn_count(b->s)) ||
	    eg_mono_ms() > b->deadline)
		loop_stop(b->loop);
}

static bool bench_init(struct bench *b)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	memset(b, 0, sizeof(*b));
	b->peer = -1;
	strcpy(b->dir, "/tmp/egtest-ctl.XXXXXX");
	if (!ASSERT_OK_PTR(mkdtemp(b->dir), "mkdtemp"))
		return false;
	snprintf(b->path, sizeof(b->path), "%s/sock", b->dir);
	b->loop = loop_new();
	if (!ASSERT_OK_PTR(b->loop, "loop_new") ||
	    !ASSERT_OK(ctl_server_new(b->loop, b->path, (gid_t)-1, -1, &b->s), "ctl_server_new") ||
	    !ASSERT_OK(ctl_register(b->s, "ok", CTL_ANYONE, op_ok, b), "register ok") ||
	    !ASSERT_OK(ctl_register(b->s, "fail", CTL_ANYONE, op_fail, b), "register fail"))
		return false;
	strcpy(sa.sun_path, b->path);
	b->peer = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	return ASSERT_OK(connect(b->peer, (struct sockaddr *)&sa, sizeof(sa)), "connect");
}

static void bench_run(struct bench *b, unsigned int want)
{
	b->want = want;
	b->deadline = eg_mono_ms() + 10000;
	ASSERT_OK(loop_run(b->loop, 100, idle, b), "loop_run");
}

static void bench_fini(struct bench *b)
{
	if (b->peer >= 0)
		close(b->peer);
	ctl_server_free(b->s);
	loop_free(b->loop);
	rmdir(b->dir);
}

static void test_failed_op_answered_behind_a_reply(void)
{
	static const char req[] = "{\"op\":\"ok\"}\n{\"op\":\"fail\"}\n{\"op\":\"ok\"}\n";
	struct bench b;

	if (bench_init(&b) && ASSERT_EQ(send(b.peer, req, sizeof(req) - 1, 0), sizeof(req) - 1, "send")) {
		bench_run(&b, 3);
		/* the first reply is still queued when the second handler fails */
		ASSERT_STREQ(b.got, "{\"ok\":true}\n{\"ok\":false,\"error\":\"fail failed: Input/output error\"}\n"
			     "{\"ok\":true}\n", "three answers, in order");
	}
	bench_fini(&b);
}

#define OK_REQ "{\"op\":\"ok\"}\n"

/* n requests of op "ok" one after the other in req; their length */
static size_t ok_requests(char *req, size_t n)
{
	size_t i, len = 0;

	for (i = 0; i < n; i++) {
		memcpy(req + len, OK_REQ, sizeof(OK_REQ) - 1);
		len += sizeof(OK_REQ) - 1;
	}
	return len;
}

static void test_requests_dispatched_in_batches(void)
{
	char req[sizeof(OK_REQ) * 1000];
	size_t len = ok_requests(req, 1000);
	struct bench b;

	if (bench_init(&b) && ASSERT_EQ(send(b.peer, req, len, 0), len, "send")) {
		bench_run(&b, 1000);
		ASSERT_EQ(lines(&b), 1000, "every request answered");
		ASSERT_EQ(b.calls, 1000, "every request dispatched");
		/* the loop's other watches get a turn between batches */
		ASSERT_TRUE(b.max_round_calls <= 32, "at most 32 requests of a connection a round");
	}
	bench_fini(&b);
}

static void test_peer_gone_with_requests_waiting(void)
{
	char req[sizeof(OK_REQ) * 1000];
	size_t len = ok_requests(req, 1000);
	struct bench b;

	if (bench_init(&b) && ASSERT_EQ(send(b.peer, req, len, 0), len, "send")) {
		/* two batches, then the rest queued for later rounds when the peer hangs up */
		b.hang_up = 64;
		bench_run(&b, 0);
		ASSERT_EQ(b.open_at_hang_up, 1, "the connection was open");
		ASSERT_EQ(ctl_conn_count(b.s), 0, "the connection is closed");
		ASSERT_TRUE(b.calls < 1000, "answered until the peer was found gone");
	}
	bench_fini(&b);
}

int main(void)
{
	RUN(test_failed_op_answered_behind_a_reply);
	RUN(test_requests_dispatched_in_batches);
	RUN(test_peer_gone_with_requests_waiting);
	return UNIT_DONE();
}
