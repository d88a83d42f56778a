// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "loop/loop.h"

enum watch_kind { W_FD, W_TIMER, W_SIGNAL };

struct eg_watch {
	struct eg_loop *loop;
	enum watch_kind kind;
	int fd;
	bool dead;
	bool urgent;
	union {
		eg_fd_fn fd_fn;
		eg_timer_fn timer_fn;
		eg_signal_fn signal_fn;
	};
	void *arg;
	struct eg_watch *resume;	/* loop_pause_fd(): the timer that watches it again */
	uint32_t resume_events;
	struct eg_watch *next_dead;
};

/*
 * A lock taken in the order asked (a ticket lock on a mutex and a
 * condition variable). A plain mutex does not hand itself to a waiter: the
 * loop's thread, back from epoll_wait in a microsecond, would take it again
 * before a receiver woken on another CPU ran, round after round (seconds
 * of waiting were seen while the ring buffer's drain kept the loop busy),
 * and a trapped task would wait all that while.
 */
struct fair_lock {
	pthread_mutex_t m;
	pthread_cond_t c;
	uint64_t next, serving;
	pthread_t owner;		/* who holds it (owned: someone does) */
	bool owned;
};

static void fair_init(struct fair_lock *f)
{
	pthread_mutex_init(&f->m, NULL);
	pthread_cond_init(&f->c, NULL);
	f->next = f->serving = 0;
}

static void fair_lock(struct fair_lock *f)
{
	uint64_t me;

	pthread_mutex_lock(&f->m);
	me = f->next++;
	while (me != f->serving)
		pthread_cond_wait(&f->c, &f->m);
	f->owner = pthread_self();
	f->owned = true;
	pthread_mutex_unlock(&f->m);
}

static void fair_unlock(struct fair_lock *f)
{
	bool waiters;

	pthread_mutex_lock(&f->m);
	f->owned = false;
	f->serving++;
	waiters = f->next != f->serving;
	pthread_mutex_unlock(&f->m);
	if (waiters)
		pthread_cond_broadcast(&f->c);
}

static void fair_destroy(struct fair_lock *f)
{
	pthread_cond_destroy(&f->c);
	pthread_mutex_destroy(&f->m);
}

struct eg_loop {
	int epfd;
	bool stop;
	bool dispatching;
	/*
	 * Held by the loop's thread at all times but inside epoll_wait():
	 * another thread (a session's receiver) takes it to act as the loop
	 * does (loop_lock). waiting: the loop's thread is in epoll_wait, or
	 * back from it and not yet holding the lock again; wake: written when
	 * such a thread leaves work the loop would otherwise not see.
	 */
	struct fair_lock lock;
	bool waiting;
	int wakefd;
	struct eg_watch *w_wake;
	unsigned int live;
	unsigned int urgent;		/* live urgent watches */
	struct eg_watch *dead;		/* freed after the current dispatch */
	struct pending {		/* leftover work: runs after the next round */
		void (*fn)(void *arg);
		void *arg;
	} pending[LOOP_MAX_PENDING];
	unsigned int npending;
};

#define MAX_EVENTS 64

static void on_wake(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	uint64_t n;

	(void)w;
	(void)events;
	(void)arg;
	if (read(fd, &n, sizeof(n)) < 0)
		(void)0;	/* nothing to read: woken already */
}

struct eg_loop *loop_new(void)
{
	struct eg_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->wakefd = -1;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		goto fail;
	l->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->wakefd < 0 || loop_add_fd(l, l->wakefd, EPOLLIN, on_wake, NULL, &l->w_wake))
		goto fail;
	l->live--;		/* not a watch of anyone's: loop_watch_count() counts those */
	fair_init(&l->lock);
	fair_lock(&l->lock);
	return l;
fail:
	if (l->wakefd >= 0)
		close(l->wakefd);
	if (l->epfd >= 0)
		close(l->epfd);
	free(l);
	return NULL;
}

static void reap(struct eg_loop *l)
{
	while (l->dead) {
		struct eg_watch *w = l->dead;

		l->dead = w->next_dead;
		free(w);
	}
}

void loop_free(struct eg_loop *l)
{
	if (!l)
		return;
	free(l->w_wake);
	reap(l);
	close(l->wakefd);
	close(l->epfd);
	fair_unlock(&l->lock);
	fair_destroy(&l->lock);
	free(l);
}

bool loop_held(struct eg_loop *l)
{
	bool mine;

	pthread_mutex_lock(&l->lock.m);
	mine = l->lock.owned && pthread_equal(l->lock.owner, pthread_self());
	pthread_mutex_unlock(&l->lock.m);
	return mine;
}

void loop_assert_held(struct eg_loop *l, const char *what)
{
	if (loop_held(l))
		return;
	/* a caller that relies on the lock and does not hold it would race the loop: stop here */
	fprintf(stderr, "execgate: internal error: %s without the event loop's lock\n", what);
	abort();
}

void loop_lock(struct eg_loop *l)
{
	fair_lock(&l->lock);
}

void loop_unlock(struct eg_loop *l)
{
	/* the loop may sleep in epoll_wait with no timeout: work left for it must wake it */
	if (l->waiting && l->npending) {
		uint64_t one = 1;

		if (write(l->wakefd, &one, sizeof(one)) < 0)
			(void)0;	/* the counter is full: it is awake already */
	}
	fair_unlock(&l->lock);
}

static struct eg_watch *watch_new(struct eg_loop *l, enum watch_kind kind, int fd, uint32_t events,
				  void *arg)
{
	struct epoll_event ev = { .events = events };
	struct eg_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->loop = l;
	w->kind = kind;
	w->fd = fd;
	w->arg = arg;
	ev.data.ptr = w;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = errno;

		free(w);
		errno = err;
		return NULL;
	}
	l->live++;
	return w;
}

int loop_add_fd(struct eg_loop *l, int fd, uint32_t events, eg_fd_fn fn, void *arg,
		struct eg_watch **ret)
{
	struct eg_watch *w = watch_new(l, W_FD, fd, events, arg);

	if (!w)
		return -errno;
	w->fd_fn = fn;
	if (ret)
		*ret = w;
	return 0;
}

int loop_mod_fd(struct eg_watch *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (!w || w->dead)
		return -EINVAL;
	return epoll_ctl(w->loop->epfd, EPOLL_CTL_MOD, w->fd, &ev) ? -errno : 0;
}

static void ms_to_ts(uint64_t ms, struct timespec *ts)
{
	ts->tv_sec = ms / 1000;
	ts->tv_nsec = (ms % 1000) * 1000000;
}

int loop_timer_set(struct eg_watch *w, uint64_t first_ms, uint64_t interval_ms)
{
	struct itimerspec its = {};

	if (!w || w->kind != W_TIMER)
		return -EINVAL;
	ms_to_ts(first_ms, &its.it_value);
	ms_to_ts(interval_ms, &its.it_interval);
	return timerfd_settime(w->fd, 0, &its, NULL) ? -errno : 0;
}

int loop_add_timer(struct eg_loop *l, uint64_t first_ms, uint64_t interval_ms, eg_timer_fn fn,
		   void *arg, struct eg_watch **ret)
{
	struct eg_watch *w;
	int fd, err;

	fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	w = watch_new(l, W_TIMER, fd, EPOLLIN, arg);
	if (!w) {
		err = -errno;
		close(fd);
		return err;
	}
	w->timer_fn = fn;
	if (first_ms) {
		err = loop_timer_set(w, first_ms, interval_ms);
		if (err) {
			loop_del(w);
			return err;
		}
	}
	if (ret)
		*ret = w;
	return 0;
}

int loop_add_signals(struct eg_loop *l, const int *sigs, int n, eg_signal_fn fn, void *arg)
{
	struct eg_watch *w;
	sigset_t set;
	int fd, i, err;

	sigemptyset(&set);
	for (i = 0; i < n; i++)
		sigaddset(&set, sigs[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	w = watch_new(l, W_SIGNAL, fd, EPOLLIN, arg);
	if (!w) {
		err = -errno;
		close(fd);
		return err;
	}
	w->signal_fn = fn;
	return 0;
}

static void on_resume(struct eg_watch *t, uint64_t n, void *arg)
{
	struct eg_watch *w = arg;

	(void)t;
	(void)n;
	loop_mod_fd(w, w->resume_events);
}

int loop_pausable(struct eg_watch *w)
{
	if (!w || w->dead || w->kind != W_FD)
		return -EINVAL;
	return w->resume ? 0 : loop_add_timer(w->loop, 0, 0, on_resume, w, &w->resume);
}

int loop_pause_fd(struct eg_watch *w, uint32_t events, uint64_t ms)
{
	int err;

	if (!w || w->dead || !w->resume)
		return -EINVAL;
	w->resume_events = events;
	err = loop_mod_fd(w, 0);
	return err ? err : loop_timer_set(w->resume, ms, 0);
}

void loop_del(struct eg_watch *w)
{
	struct eg_loop *l;

	if (!w || w->dead)
		return;
	loop_del(w->resume);
	w->resume = NULL;
	l = w->loop;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, w->fd, NULL);
	if (w->kind != W_FD)
		close(w->fd);
	w->dead = true;
	w->fd = -1;
	l->live--;
	if (w->urgent)
		l->urgent--;
	/*
	 * An event for w may still sit in this round's batch, or in the one
	 * epoll_wait is returning to the loop while another thread holds
	 * the lock: free it after that round.
	 */
	w->next_dead = l->dead;
	l->dead = w;
	if (!l->dispatching && !l->waiting)
		reap(l);
}

static void dispatch(struct eg_watch *w, uint32_t events)
{
	switch (w->kind) {
	case W_FD:
		w->fd_fn(w, w->fd, events, w->arg);
		break;
	case W_TIMER: {
		uint64_t n = 0;

		if (read(w->fd, &n, sizeof(n)) == sizeof(n) && n)
			w->timer_fn(w, n, w->arg);
		break;
	}
	case W_SIGNAL: {
		struct signalfd_siginfo si;

		while (!w->dead && read(w->fd, &si, sizeof(si)) == sizeof(si))
			w->signal_fn(&si, w->arg);
		break;
	}
	}
}

void loop_set_urgent(struct eg_watch *w)
{
	if (w && !w->dead && !w->urgent) {
		w->urgent = true;
		w->loop->urgent++;
	}
}

bool loop_has_urgent(const struct eg_loop *l)
{
	return l->urgent != 0;
}

int loop_set_pending(struct eg_loop *l, void (*fn)(void *arg), void *arg)
{
	unsigned int i;

	for (i = 0; i < l->npending; i++)
		if (l->pending[i].fn == fn && l->pending[i].arg == arg)
			return 0;
	if (l->npending == LOOP_MAX_PENDING)
		return -ENOSPC;
	l->pending[l->npending].fn = fn;
	l->pending[l->npending].arg = arg;
	l->npending++;
	return 0;
}

void loop_cancel_pending(struct eg_loop *l, void (*fn)(void *arg), void *arg)
{
	unsigned int i;

	for (i = 0; i < l->npending; i++) {
		if (l->pending[i].fn == fn && l->pending[i].arg == arg) {
			l->npending--;
			memmove(&l->pending[i], &l->pending[i + 1], (l->npending - i) * sizeof(l->pending[0]));
			return;
		}
	}
}

int loop_run(struct eg_loop *l, int max_wait_ms, void (*idle)(void *arg), void *arg)
{
	struct epoll_event evs[MAX_EVENTS];
	int i, n;

	while (!l->stop) {
		unsigned int urgent = 0;

		int timeout = l->npending ? 0 : max_wait_ms;

		l->waiting = true;
		fair_unlock(&l->lock);
		n = epoll_wait(l->epfd, evs, MAX_EVENTS, timeout);
		fair_lock(&l->lock);
		l->waiting = false;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		l->dispatching = true;
		/* those someone waits for first (the order epoll gives is that of readiness) */
		for (i = 0; i < n; i++) {
			struct eg_watch *w = evs[i].data.ptr;

			if (w->urgent && !w->dead) {
				dispatch(w, evs[i].events);
				urgent++;
			}
		}
		/*
		 * The process just answered was woken on this CPU: let it run
		 * now rather than after the rest of the round.
		 */
		if (urgent && (urgent < (unsigned int)n || l->npending))
			sched_yield();
		for (i = 0; i < n; i++) {
			struct eg_watch *w = evs[i].data.ptr;

			if (!w->urgent && !w->dead)
				dispatch(w, evs[i].events);
		}
		l->dispatching = false;
		reap(l);
		if (l->npending) {
			/* those set again while they run wait for the next round */
			struct pending run[LOOP_MAX_PENDING];
			unsigned int k = l->npending;

			memcpy(run, l->pending, k * sizeof(run[0]));
			l->npending = 0;
			for (i = 0; i < (int)k; i++)
				run[i].fn(run[i].arg);
		}
		if (idle)
			idle(arg);
	}
	return 0;
}

void loop_stop(struct eg_loop *l)
{
	l->stop = true;
}

bool loop_stopping(const struct eg_loop *l)
{
	return l->stop;
}

unsigned int loop_watch_count(const struct eg_loop *l)
{
	return l->live;
}
