// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A thread per session tree that takes its listener's notifications and
 * answers them itself, start to end, on the CPU of the task that trapped.
 *
 * Why: on a VM a wakeup of another CPU costs tens of microseconds, and the
 * event loop (epoll) is woken wherever the scheduler likes. A thread that
 * waits on the listener itself (poll, not epoll) is woken on the trapped
 * task's own CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6), and so
 * is the task when it answers: the task and its supervisor hand one CPU to
 * each other, and nothing else is woken. Reading the task's memory and
 * looking its program up are done here too, without the loop's lock; the
 * rest (judging, the ticket, the answer, the records) under the loop's lock,
 * as the loop itself would do it.
 *
 * What can stall (a FUSE file system the session serves itself, a hung
 * network file system) stalls only this tree's receiver: its request is
 * counted and refused at the timeout like a worker's (offload.c), and when
 * the receiver has been busy for RX_STALL_MS the loop takes the listener
 * over (EPOLLIN, the workers of offload.c) until the receiver is back.
 * Where no thread can be had, the loop serves the listener as before.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <fcntl.h>
#include <seccomp.h>
#include "loop/loop.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/log.h"

#define RX_STALL_MS	100	/* busy this long on one request: the loop takes the listener over */
#define RX_TICK_MS	50
/*
 * Nothing to do this long: the thread leaves (its stack and caches with
 * it), the loop takes the listener, and the tree's next exec, taken by the
 * loop through a worker, starts a receiver again. An agent's session waits
 * for a person or a model most of its life. EXECGATE_RECEIVER_IDLE_MS
 * shortens it for tests.
 */
#define RX_IDLE_MS	10000

struct eg_receiver {
	struct eg_sessions *s;
	struct eg_session *se;		/* a reference, given back when the thread leaves */
	int fd;				/* its own copy of the listener: nobody else closes it */
	int stopfd;			/* eventfd: leave */
	/* under the loop's lock */
	bool stop;
	bool busy;			/* reading or looking up a request */
	uint64_t busy_since_ms;
};

/* Whether the loop takes the listener's notifications (no receiver, or it is stuck). */
static void loop_mode(struct eg_session *se, bool on)
{
	if (se->loop_receives == on || !se->w)
		return;
	se->loop_receives = on;
	/* off: only the end of the tree (EPOLLHUP, always reported) wakes the loop */
	loop_mod_fd(se->w, on ? EPOLLIN : 0);
}

static void on_tick(struct eg_watch *w, uint64_t n, void *arg)
{
	struct eg_sessions *s = arg;
	uint64_t now = eg_mono_ms();
	struct eg_session *se;
	bool busy = false;

	(void)w;
	(void)n;
	for (se = s->list; se; se = se->next) {
		struct eg_receiver *rx = se->rx;

		if (!rx || !rx->busy)
			continue;
		busy = true;
		if (now - rx->busy_since_ms >= RX_STALL_MS && !se->loop_receives) {
			loop_mode(se, true);
			s->st.receiver_stalls++;
		}
	}
	if (!busy) {
		loop_timer_set(s->rx_tick, 0, 0);
		s->rx_tick_armed = false;
	}
}

/* Under the loop's lock: the receiver leaves (stopped, idle, or its tree is gone); se->rx is no more. */
static void rx_release(struct eg_receiver *rx)
{
	struct eg_sessions *s = rx->s;

	if (rx->se->rx == rx) {
		rx->se->rx = NULL;
		loop_mode(rx->se, true);
	}
	session_put(s, rx->se);
	s->receivers--;
	close(rx->fd);
	close(rx->stopfd);
	free(rx);
}

static void *receive(void *arg)
{
	struct eg_receiver *rx = arg;
	struct eg_sessions *s = rx->s;
	struct eg_loop *l = s->o.loop;
	struct pollfd p[2] = { { .fd = rx->fd, .events = POLLIN }, { .fd = rx->stopfd, .events = POLLIN } };

	for (;;) {
		struct seccomp_notif *req = NULL;
		struct eg_answer answer = {};
		struct exec_request *r;
		bool stop;

		int n = poll(p, 2, s->rx_idle_ms);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0)
			break;		/* idle: the loop serves the listener until the next exec (rx_release) */
		/* stopped, or no task of the tree is left (the loop sees that too and ends it) */
		if (p[1].revents || (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		req = notif_new(s);
		if (!req) {
			usleep(1000);	/* out of memory: the task waits; try again soon */
			continue;
		}
		if (seccomp_notify_receive(rx->fd, req)) {
			/* the target withdrew (a signal) between poll and receive */
			free(req);
			continue;
		}
		r = request_new(s, req);
		loop_lock(l);
		if (rx->se->ended) {
			/* nobody answers for it: our copy of the listener, closed below, fails it (ENOSYS) */
			if (r)
				request_free(r);
			else
				free(req);
			loop_unlock(l);
			break;
		}
		if (!r) {
			struct exec_request tmp = { .listener = rx->se->listener, .id = req->id, .pidfd = -1 };

			request_deny(s, &tmp, NULL);
			free(req);
		} else if (s->flow.take(s, rx->se, r)) {
			offload_hold(s, r, rx->se);
			rx->busy = true;
			rx->busy_since_ms = r->queued_ms;
			if (!s->rx_tick_armed && !loop_timer_set(s->rx_tick, RX_TICK_MS, RX_TICK_MS))
				s->rx_tick_armed = true;
			loop_unlock(l);

			/* the task's memory and files: what may stall, without the lock */
			request_work(&s->roots, r);

			loop_lock(l);
			rx->busy = false;
			/* back: the listener is ours again (the loop may have taken some meanwhile) */
			if (rx->se->rx == rx)
				loop_mode(rx->se, false);
			/* judged and answered (a CONTINUE held for below), or refused at the timeout already */
			r->answer_to = &answer;
			offload_unhold(s, r);	/* frees r, or an approval keeps it (and takes the slot back) */
			/* sent after the lock is let go: through our own copy, which nobody else closes */
			if (answer.have)
				answer.listener = rx->fd;
		}
		stop = rx->stop;
		loop_unlock(l);
		answer_send(s, &answer);
		if (stop)
			break;
	}
	loop_lock(l);
	rx_release(rx);
	loop_unlock(l);
	return NULL;
}

int receivers_init(struct eg_sessions *s)
{
	const char *idle = getenv("EXECGATE_RECEIVER_IDLE_MS");

	s->rx_idle_ms = idle && atoi(idle) > 0 ? atoi(idle) : RX_IDLE_MS;
	return loop_add_timer(s->o.loop, 0, 0, on_tick, s, &s->rx_tick);
}

int receiver_start(struct eg_sessions *s, struct eg_session *se, int listener)
{
	struct eg_receiver *rx;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (se->rx || listener < 0 || !s->rx_tick)
		return -EINVAL;
	/*
	 * The new thread's first step is loop_lock(): it waits until this
	 * caller's round ends, and so sees se->rx and the reference set below.
	 */
	loop_assert_held(s->o.loop, "receiver_start");
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -ENOMEM;
	rx->s = s;
	rx->se = se;
	rx->stopfd = -1;
	rx->fd = fcntl(listener, F_DUPFD_CLOEXEC, 0);
	if (rx->fd < 0)
		goto fail_errno;
	rx->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rx->stopfd < 0)
		goto fail_errno;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* peek.c holds 64 KiB of pages on the stack, resolve.c a path or two (as a worker) */
	pthread_attr_setstacksize(&attr, 512 * 1024);
	err = -pthread_create(&t, &attr, receive, rx);
	pthread_attr_destroy(&attr);
	if (err)
		goto fail;
	se->refs++;
	se->rx = rx;
	s->receivers++;
	loop_mode(se, false);
	return 0;
fail_errno:
	err = -errno;
fail:
	if (rx->fd >= 0)
		close(rx->fd);
	if (rx->stopfd >= 0)
		close(rx->stopfd);
	free(rx);
	return err;
}

void receiver_stop(struct eg_sessions *s, struct eg_session *se)
{
	struct eg_receiver *rx = se->rx;
	uint64_t one = 1;

	(void)s;
	if (!rx)
		return;
	rx->stop = true;
	se->rx = NULL;
	if (write(rx->stopfd, &one, sizeof(one)) < 0)
		(void)0;	/* the counter is full: it was told already */
}

bool receivers_wait(struct eg_sessions *s, int timeout_ms)
{
	uint64_t end = eg_mono_ms() + timeout_ms;

	while (s->receivers && eg_mono_ms() < end) {
		/* a receiver leaves under the loop's lock */
		loop_unlock(s->o.loop);
		usleep(1000);
		loop_lock(s->o.loop);
	}
	return !s->receivers;
}

void receivers_fini(struct eg_sessions *s)
{
	loop_del(s->rx_tick);
	s->rx_tick = NULL;
}
