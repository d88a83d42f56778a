// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A thread per session tree that takes its listener's notifications and
 * answers them itself, start to end, on the CPU of the task that trapped.
 *
 * Why: on a VM a wakeup of another CPU costs tens of microseconds, and the
 * event loop (epoll) is woken wherever the scheduler likes. A thread that
 * waits in the listener's receive itself is woken on the trapped task's
 * own CPU (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6), and so is the
 * task when it answers: the task and its supervisor hand one CPU to each
 * other, and nothing else is woken. Reading the task's memory and looking
 * its program up are done here too, without the loop's lock; the rest
 * (judging, the ticket, the answer, the records) under the loop's lock, as
 * the loop itself would do it.
 *
 * The thread sleeps in a blocking SECCOMP_IOCTL_NOTIF_RECV, not in poll()
 * and then a receive: one system call less per exec, which on a guest
 * with page-table isolation costs about 3.5 us of the supervisor's CPU
 * (docs/bench.md). A blocking receive has no timeout and no second fd to
 * wake it, so the loop wakes it with a signal (RX_SIGNAL, a handler that
 * does nothing, installed without SA_RESTART: the receive fails with
 * EINTR) when it is to leave: stopped, or idle for rx_idle_ms. A signal
 * that comes between the thread's last look at `stop` and its receive is
 * lost; the loop's tick sends it again every RX_TICK_MS until the thread
 * has left. It is only sent while the thread says it is in its receive
 * (in_recv, let go under the loop's lock once a notification came), so it
 * does not cut short the reads, the lookups or the answer of a request;
 * the seccomp calls that could still meet one sent to the whole process
 * (answer, validity check) try again on EINTR (answer.c, request.c).
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
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
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
	struct eg_receiver *next;	/* s->rx_all: every receiver that has not left */
	pthread_t thread;
	int fd;				/* its own copy of the listener: nobody else closes it */
	struct eg_roots roots;		/* and of the daemon's root (a stuck receiver outlives s->roots) */
	/* written under the loop's lock, read by the thread without it (atomics) */
	bool stop;
	/* written by the thread (atomics): it is in its receive, or about to be */
	bool in_recv;
	/* under the loop's lock */
	bool busy;			/* reading or looking up a request */
	uint64_t busy_since_ms;
	uint64_t last_ms;		/* when it last had something to do */
};

static void rx_wake(int sig)
{
	(void)sig;	/* the receive fails with EINTR: that was the point */
}

/* Under the loop's lock: wakes rx from its receive (a thread that has not left: rx_release). */
static void rx_kick(struct eg_receiver *rx)
{
	if (__atomic_load_n(&rx->in_recv, __ATOMIC_SEQ_CST))
		pthread_kill(rx->thread, RX_SIGNAL);
}

/* Under the loop's lock: the tick every RX_TICK_MS (a receiver busy or leaving). */
static void rx_tick_fast(struct eg_sessions *s)
{
	if (!s->rx_tick_fast && !loop_timer_set(s->rx_tick, RX_TICK_MS, RX_TICK_MS))
		s->rx_tick_fast = true;
}

/* Under the loop's lock: rx is to leave; it is told now and, by the tick, again until it has. */
static void rx_leave(struct eg_sessions *s, struct eg_receiver *rx)
{
	__atomic_store_n(&rx->stop, true, __ATOMIC_SEQ_CST);
	rx_kick(rx);
	rx_tick_fast(s);
}

/* Whether the loop takes the listener's notifications (no receiver, or it is stuck). */
static void loop_mode(struct eg_session *se, bool on)
{
	if (se->loop_receives == on || !se->w)
		return;
	se->loop_receives = on;
	/* off: only the end of the tree (EPOLLHUP, always reported) wakes the loop */
	loop_mod_fd(se->w, on ? EPOLLIN : 0);
}

/*
 * Every RX_TICK_MS while a receiver is busy (or was a moment ago) or is
 * to leave: a stuck one gives its listener to the loop, one told to leave
 * is told again. Else once, when the first receiver will have been idle
 * for rx_idle_ms.
 */
static void on_tick(struct eg_watch *w, uint64_t n, void *arg)
{
	struct eg_sessions *s = arg;
	uint64_t now = eg_mono_ms(), next = 0;
	struct eg_receiver *rx;
	bool fast = false;

	(void)w;
	(void)n;
	for (rx = s->rx_all; rx; rx = rx->next) {
		/* stuck, told to leave or not: the tree's next execs must not wait for it */
		if (rx->busy && now - rx->busy_since_ms >= RX_STALL_MS && rx->se->rx == rx &&
		    !rx->se->loop_receives) {
			loop_mode(rx->se, true);
			s->st.receiver_stalls++;
		}
		if (rx->stop)
			rx_kick(rx);
		/* busy a moment ago: the tick goes on rather than being set again at its next request */
		if (rx->busy || rx->stop || now - rx->last_ms < 4 * RX_TICK_MS) {
			fast = true;
		} else if (now - rx->last_ms >= (uint64_t)s->rx_idle_ms) {
			/* idle: the loop serves the listener until the next exec (rx_release) */
			rx_leave(s, rx);
			fast = true;
		} else if (!next || rx->last_ms + s->rx_idle_ms < next) {
			next = rx->last_ms + s->rx_idle_ms;
		}
	}
	if (fast) {
		rx_tick_fast(s);
		return;
	}
	s->rx_tick_fast = false;
	loop_timer_set(s->rx_tick, next ? next - now : 0, 0);
}

/* Under the loop's lock: the receiver leaves (stopped, idle, or its tree is gone); se->rx is no more. */
static void rx_release(struct eg_receiver *rx)
{
	struct eg_sessions *s = rx->s;
	struct eg_receiver **p;

	for (p = &s->rx_all; *p && *p != rx; p = &(*p)->next)
		;
	if (*p)
		*p = rx->next;
	if (rx->se->rx == rx) {
		rx->se->rx = NULL;
		loop_mode(rx->se, true);
	}
	session_put(s, rx->se);
	s->receivers--;
	close(rx->fd);
	if (rx->roots.fd >= 0)
		close(rx->roots.fd);
	free(rx);
}

/*
 * The next notification, or NULL when the thread is to leave: stopped,
 * idle, its tree gone, the listener failing.
 */
static struct seccomp_notif *rx_receive(struct eg_receiver *rx)
{
	struct seccomp_notif *req = NULL;

	for (;;) {
		if (!req) {
			req = notif_new(rx->s);
			if (!req) {
				usleep(1000);	/* out of memory: the task waits; try again soon */
				continue;
			}
		}
		/* either we see stop here, or the loop sees in_recv and wakes us (rx_kick) */
		__atomic_store_n(&rx->in_recv, true, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&rx->stop, __ATOMIC_SEQ_CST))
			break;
		if (!ioctl(rx->fd, SECCOMP_IOCTL_NOTIF_RECV, req))
			return req;	/* in_recv is let go under the loop's lock (receive) */
		__atomic_store_n(&rx->in_recv, false, __ATOMIC_SEQ_CST);
		if (errno == EINTR)
			continue;	/* woken: stop is looked at again */
		if (errno != ENOENT)
			break;
		/* the target withdrew (a signal), or no task of the tree is left (HUP) */
		{
			struct pollfd p = { .fd = rx->fd, .events = POLLIN };

			if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
				break;	/* the loop sees the end too, and ends the session */
		}
		/* a receive writes the whole notification: it starts zeroed again */
		memset(req, 0, rx->s->notif_size);
	}
	__atomic_store_n(&rx->in_recv, false, __ATOMIC_SEQ_CST);
	free(req);
	return NULL;
}

static void *receive(void *arg)
{
	struct eg_receiver *rx = arg;
	struct eg_sessions *s = rx->s;
	struct eg_loop *l = s->o.loop;

	/* the signal is ours alone (sent to this thread); the daemon's others stay blocked */
	receiver_signal_mask(SIG_UNBLOCK);
	for (;;) {
		struct seccomp_notif *req;
		struct eg_answer answer = {};
		struct exec_request *r;
		bool stop;

		req = rx_receive(rx);
		if (!req)
			break;
		r = request_new(s, req);
		loop_lock(l);
		/*
		 * Only now: a wake-up sent under the lock before this point has
		 * been taken (at the latest as the lock was waited for, or on the
		 * way out of the next system call, which cannot sleep: the facts
		 * program, /proc, process_vm_readv); none is sent after it, so
		 * the lookups below (a FUSE open sleeps interruptibly) and the
		 * answer are not cut short by one.
		 */
		__atomic_store_n(&rx->in_recv, false, __ATOMIC_SEQ_CST);
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
			rx_tick_fast(s);
			loop_unlock(l);

			/* the task's memory and files: what may stall, without the lock */
			request_work(&rx->roots, r);

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
		rx->last_ms = eg_mono_ms();
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
	struct sigaction sa = { .sa_handler = rx_wake };

	s->rx_idle_ms = idle && atoi(idle) > 0 ? atoi(idle) : RX_IDLE_MS;
	/* no SA_RESTART: a receive it interrupts fails with EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(RX_SIGNAL, &sa, NULL))
		return -errno;
	/*
	 * Blocked here, in the loop's thread, and so in every thread it
	 * creates after (the API's), and by workers themselves (a receiver
	 * may start one): one sent to the process (kill) reaches a receiver
	 * only, never a call the others do not try again.
	 */
	receiver_signal_mask(SIG_BLOCK);
	return loop_add_timer(s->o.loop, 0, 0, on_tick, s, &s->rx_tick);
}

int receiver_start(struct eg_sessions *s, struct eg_session *se, int listener)
{
	struct eg_receiver *rx;
	pthread_attr_t attr;
	int err;

	if (se->rx || listener < 0 || !s->rx_tick)
		return -EINVAL;
	/*
	 * The new thread reads only rx's own fields (set before it starts)
	 * until it takes the loop's lock, which it gets after this caller's
	 * round ends: it sees se->rx and the reference set below.
	 */
	loop_assert_held(s->o.loop, "receiver_start");
	rx = calloc(1, sizeof(*rx));
	if (!rx)
		return -ENOMEM;
	rx->s = s;
	rx->se = se;
	rx->last_ms = eg_mono_ms();
	rx->roots = s->roots;
	rx->roots.fd = -1;
	rx->fd = fcntl(listener, F_DUPFD_CLOEXEC, 0);
	if (rx->fd < 0)
		goto fail_errno;
	if (s->roots.fd >= 0 && (rx->roots.fd = fcntl(s->roots.fd, F_DUPFD_CLOEXEC, 0)) < 0)
		goto fail_errno;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* peek.c holds 64 KiB of pages on the stack, resolve.c a path or two (as a worker) */
	pthread_attr_setstacksize(&attr, 512 * 1024);
	err = -pthread_create(&rx->thread, &attr, receive, rx);
	pthread_attr_destroy(&attr);
	if (err)
		goto fail;
	se->refs++;
	se->rx = rx;
	rx->next = s->rx_all;
	s->rx_all = rx;
	s->receivers++;
	loop_mode(se, false);
	/* its idle deadline (the tick plans itself from the receivers it finds) */
	if (!s->rx_tick_fast)
		on_tick(s->rx_tick, 0, s);
	return 0;
fail_errno:
	err = -errno;
fail:
	if (rx->fd >= 0)
		close(rx->fd);
	if (rx->roots.fd >= 0)
		close(rx->roots.fd);
	free(rx);
	return err;
}

void receiver_stop(struct eg_sessions *s, struct eg_session *se)
{
	struct eg_receiver *rx = se->rx;

	if (!rx)
		return;
	se->rx = NULL;
	rx_leave(s, rx);
}

bool receivers_wait(struct eg_sessions *s, int timeout_ms)
{
	uint64_t end = eg_mono_ms() + timeout_ms;

	while (s->receivers && eg_mono_ms() < end) {
		/* a receiver leaves under the loop's lock */
		loop_unlock(s->o.loop);
		usleep(1000);
		loop_lock(s->o.loop);
		/* told again: one told just before its receive did not hear it */
		for (struct eg_receiver *rx = s->rx_all; rx; rx = rx->next)
			if (rx->stop)
				rx_kick(rx);
	}
	return !s->receivers;
}

void receivers_fini(struct eg_sessions *s)
{
	loop_del(s->rx_tick);
	s->rx_tick = NULL;
}
