/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The process's one event loop (the ground floor: ctl/, session/, procs/
 * and daemon/ stand on it): an epoll registry of file descriptors,
 * timers (timerfd) and signals (signalfd). Every module registers what it
 * waits for here (the ring buffer, the output flush timer, the control
 * socket and its connections, seccomp listeners) and gets a callback; no
 * module blocks. Watches can be removed from inside any callback.
 */
#ifndef EG_LOOP_H
#define EG_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/signalfd.h>

struct eg_loop;
struct eg_watch;

/* events: EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR as epoll reported them. */
typedef void (*eg_fd_fn)(struct eg_watch *w, int fd, uint32_t events, void *arg);
typedef void (*eg_timer_fn)(struct eg_watch *w, uint64_t expirations, void *arg);
typedef void (*eg_signal_fn)(const struct signalfd_siginfo *si, void *arg);

struct eg_loop *loop_new(void);
/* Closes what the loop opened (timerfds, the signalfd), not the fds given to loop_add_fd. */
void loop_free(struct eg_loop *l);

/* Watches fd for events (EPOLLIN, EPOLLOUT, ...); *ret may be NULL. */
int loop_add_fd(struct eg_loop *l, int fd, uint32_t events, eg_fd_fn fn, void *arg,
		struct eg_watch **ret);
int loop_mod_fd(struct eg_watch *w, uint32_t events);

/*
 * A timer that fires after first_ms, then every interval_ms (0: once).
 * loop_timer_set() re-arms (first_ms 0 disarms it).
 */
int loop_add_timer(struct eg_loop *l, uint64_t first_ms, uint64_t interval_ms, eg_timer_fn fn,
		   void *arg, struct eg_watch **ret);
int loop_timer_set(struct eg_watch *w, uint64_t first_ms, uint64_t interval_ms);

/*
 * loop_pause_fd() stops reporting w for ms, then watches it for events
 * again: a listening socket stays readable when accept() fails for want
 * of fds, and epoll would report it round after round. loop_pausable()
 * makes the timer that does it, at setup (when the fds have run out, no
 * timerfd can be made); it goes with w.
 */
int loop_pausable(struct eg_watch *w);
int loop_pause_fd(struct eg_watch *w, uint32_t events, uint64_t ms);

/* Blocks sigs (n of them) and delivers them through one signalfd. */
int loop_add_signals(struct eg_loop *l, const int *sigs, int n, eg_signal_fn fn, void *arg);

/*
 * Someone waits for this watch's callback (a process stopped in a seccomp
 * notification): in a round, urgent watches are served first, and when
 * one was, the CPU is offered to whoever it woke before the rest of the
 * round runs.
 */
void loop_set_urgent(struct eg_watch *w);

/* Is any urgent watch registered (someone may be waiting on us)? */
bool loop_has_urgent(const struct eg_loop *l);

/*
 * Work left over that should not hold up the next events: fn(arg) runs
 * after the next round's events, and that round does not wait. Setting
 * the same fn and arg again is a no-op; fn may set it again to go on. At
 * most LOOP_MAX_PENDING at a time (-ENOSPC): one per module that yields
 * (the ring buffer's drain, the control server's queued requests).
 */
#define LOOP_MAX_PENDING 4
int loop_set_pending(struct eg_loop *l, void (*fn)(void *arg), void *arg);
/* Forgets fn(arg) if it is set (its owner is going away). */
void loop_cancel_pending(struct eg_loop *l, void (*fn)(void *arg), void *arg);

/* Stops watching; a timer's timerfd is closed. Safe inside callbacks; NULL is fine. */
void loop_del(struct eg_watch *w);

/*
 * The loop's lock. The thread that made the loop holds it from loop_new()
 * to loop_free(), except while loop_run() waits for events; another thread
 * that takes it may call anything a callback may (it runs as one would),
 * and the loop waits for it. The loop's own thread may let go of it
 * (loop_unlock) while it waits for such a thread to finish.
 */
void loop_lock(struct eg_loop *l);
void loop_unlock(struct eg_loop *l);
/* Whether this thread holds the loop's lock. */
bool loop_held(struct eg_loop *l);
/* Code that relies on the lock says so: without it, an error line and abort() (never a race). */
void loop_assert_held(struct eg_loop *l, const char *what);

/*
 * Runs until loop_stop(). Each round waits at most max_wait_ms (-1: no
 * bound) and then calls idle(arg) if given. Returns 0, or -errno when
 * epoll_wait fails.
 */
int loop_run(struct eg_loop *l, int max_wait_ms, void (*idle)(void *arg), void *arg);
void loop_stop(struct eg_loop *l);
bool loop_stopping(const struct eg_loop *l);
/* Number of live watches (for tests of fd leaks). */
unsigned int loop_watch_count(const struct eg_loop *l);

#endif
