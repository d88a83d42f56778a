// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The part of a trapped exec that touches what a session controls: its
 * memory (process_vm_readv) and the files it names (the program, a '#!'
 * interpreter, its cwd, root and execveat dirfd). Any of it can block for
 * as long as a session process wants: a page of argv mapped from a file on
 * a FUSE mount it serves itself, a path through that mount, a hung network
 * file system. So it runs in worker threads, never in the event loop that
 * serves every session, and the loop takes the result back (a pipe) to
 * judge and answer.
 *
 * The event loop's thread owns everything here but the queue and the done
 * list (under one mutex). Workers see only the request they run and the
 * daemon's root; they never touch sessions, policies or maps.
 *
 * Bounds, so that one session cannot take the workers from the others:
 * at most OFFLOAD_PER_TREE requests of one session tree (a top-level
 * session and every session started inside it) are in a worker at once,
 * and OFFLOAD_PER_UID of all the trees of one user (a user may start many
 * sessions); the rest wait in their tree's backlog; at most
 * OFFLOAD_THREADS threads in all, so it takes that many users stalling
 * their own lookups to starve the others. A request that has not come back after OFFLOAD_TIMEOUT_MS (queued,
 * in the backlog or stuck in a worker) is refused, failing closed; a
 * stuck worker keeps counting against its tree until it returns (the file
 * system answers or its server dies), so a tree that stalls its own
 * lookups only stalls itself.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "loop/loop.h"
#include "session/internal.h"
#include "util/clock.h"
#include "util/log.h"

/* One worker thread, woken through a pipe of its own. */
struct worker {
	struct eg_offload *o;
	int tok[2];
	bool claimed;			/* taken off the idle list by the loop: a byte comes */
	struct worker *next_idle;
};

struct eg_offload {
	struct eg_sessions *s;		/* loop thread only */
	struct eg_watch *w_done, *w_timer;
	bool timer_armed;
	int done_pipe[2];		/* workers -> loop: something is done */
	struct eg_roots roots;		/* workers' copy: the root fd is ours */

	pthread_mutex_t lock;
	struct exec_request *queue, **queue_tail;	/* for any worker */
	struct exec_request *done;			/* back to the loop */
	bool signalled;			/* efd written since the loop last took the done list */
	bool stopping;
	unsigned int threads, idle;
	struct worker *idlers;		/* idle workers, each blocked on its pipe */
	/* loop thread only: in the queue or in a worker, oldest first */
	struct exec_request *live, **live_tail;
	unsigned int inflight;
};

/*
 * Wakeups both ways go through pipes (a worker's own, and the done pipe
 * the loop watches): a pipe write wakes its reader as a synchronous
 * wakeup. The hand-over costs the supervisor about 16 us per exec at the
 * median on the 2-core VM (p50 44 -> 60 us, the daemon's CPU +20 us),
 * mostly the two wakeups: a two-thread pipe round trip there takes 6.6 us
 * on one CPU and 40 us across two. Pinning each worker to the loop's CPU
 * at every hand-over did not help (the loop moves between CPUs at more
 * than half of the execs, and each move cost a migration). docs/sessions.md
 * says what this buys: no session can stall the others.
 */
/*
 * An idle worker waits for its byte. After OFFLOAD_IDLE_MS without one it
 * leaves, unless the loop claimed it meanwhile (then the byte is on its
 * way): the daemon's threads and descriptors go back to what they were
 * once the sessions are quiet. false: it left (the pool no longer has it).
 */
static bool wait_token(struct worker *me)
{
	struct eg_offload *o = me->o;
	struct pollfd p = { .fd = me->tok[0], .events = POLLIN };
	int timeout = OFFLOAD_IDLE_MS;
	char c;

	for (;;) {
		int n = poll(&p, 1, timeout);

		if (n > 0) {
			if (read(me->tok[0], &c, 1) < 0 && errno == EINTR)
				continue;
			return true;
		}
		if (n < 0)
			continue;	/* EINTR */
		pthread_mutex_lock(&o->lock);
		if (!me->claimed) {
			struct worker **pp;

			for (pp = &o->idlers; *pp != me; pp = &(*pp)->next_idle)
				;
			*pp = me->next_idle;
			o->idle--;
			o->threads--;
			pthread_mutex_unlock(&o->lock);
			return false;
		}
		pthread_mutex_unlock(&o->lock);
		timeout = -1;
	}
}

static void *worker(void *arg)
{
	struct worker *me = arg;
	struct eg_offload *o = me->o;
	struct exec_request *r;

	/* started by a receiver, it would take the receivers' wake-up too: its lookups are not to be cut short */
	receiver_signal_mask(SIG_BLOCK);
	pthread_mutex_lock(&o->lock);
	for (;;) {
		if (o->stopping)
			break;
		if (!o->queue) {
			if (o->idle >= OFFLOAD_IDLE)
				break;
			/* enqueue() takes it off the idle list and writes one byte */
			me->next_idle = o->idlers;
			o->idlers = me;
			me->claimed = false;
			o->idle++;
			pthread_mutex_unlock(&o->lock);
			if (!wait_token(me))
				goto out;	/* idle for a while: gone (and its pipe) */
			pthread_mutex_lock(&o->lock);
			continue;
		}
		r = o->queue;
		o->queue = r->job_next;
		if (!o->queue)
			o->queue_tail = &o->queue;
		pthread_mutex_unlock(&o->lock);

		request_work(&o->roots, r);

		pthread_mutex_lock(&o->lock);
		r->job_next = o->done;
		o->done = r;
		if (!o->signalled) {
			o->signalled = true;
			/* the loop may be asleep in epoll_wait */
			if (write(o->done_pipe[1], "d", 1) < 0)
				(void)0;
		}
	}
	o->threads--;
	pthread_mutex_unlock(&o->lock);
out:
	close(me->tok[0]);
	close(me->tok[1]);
	free(me);
	return NULL;
}

/* r is in a worker (or a receiver) now: oldest first, for the timeout's sweep. */
static void live_add(struct eg_offload *o, struct exec_request *r)
{
	o->inflight++;
	r->live_next = NULL;
	r->live_prev = o->live_tail;
	*o->live_tail = r;
	o->live_tail = &r->live_next;
}

/* Loop thread. 0, or -errno when no worker could be had (the caller refuses r). */
static int enqueue(struct eg_offload *o, struct exec_request *r)
{
	struct worker *w = NULL;
	pthread_t t;
	pthread_attr_t attr;
	int err = 0;

	pthread_mutex_lock(&o->lock);
	r->job_next = NULL;
	*o->queue_tail = r;
	o->queue_tail = &r->job_next;
	if (o->idlers) {
		/* claimed now, so the next request will not count it */
		w = o->idlers;
		o->idlers = w->next_idle;
		w->claimed = true;
		o->idle--;
	} else if (o->threads < OFFLOAD_THREADS) {
		struct worker *nw = calloc(1, sizeof(*nw));

		err = -ENOMEM;
		if (nw && !pipe2(nw->tok, O_CLOEXEC)) {
			nw->o = o;
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			/* peek.c holds 64 KiB of pages on the stack, resolve.c a path or two */
			pthread_attr_setstacksize(&attr, 512 * 1024);
			err = -pthread_create(&t, &attr, worker, nw);
			pthread_attr_destroy(&attr);
			if (!err) {
				o->threads++;
			} else {
				close(nw->tok[0]);
				close(nw->tok[1]);
			}
		}
		if (err)
			free(nw);
	}
	/* else every thread is busy and there may be no more: the first one back takes it */
	if (err && !o->threads) {
		/* no thread at all: take it back */
		struct exec_request **pp;

		for (pp = &o->queue; *pp != r; pp = &(*pp)->job_next)
			;
		*pp = NULL;
		o->queue_tail = pp;
	} else {
		err = 0;
	}
	pthread_mutex_unlock(&o->lock);
	if (w) {
		if (write(w->tok[1], "t", 1) < 0)
			(void)0;	/* a pipe of its own, one byte at a time: never full */
	}
	if (!err)
		live_add(o, r);
	return err;
}

static void live_del(struct eg_offload *o, struct exec_request *r)
{
	*r->live_prev = r->live_next;
	if (r->live_next)
		r->live_next->live_prev = r->live_prev;
	else
		o->live_tail = r->live_prev;
	o->inflight--;
}

static void arm_timer(struct eg_offload *o)
{
	if (o->timer_armed)
		return;
	if (!loop_timer_set(o->w_timer, OFFLOAD_TICK_MS, OFFLOAD_TICK_MS))
		o->timer_armed = true;
}

/* The tree (top-level session) whose share of the workers r uses. */
static struct eg_session *tree_of(struct eg_session *se)
{
	while (se->parent)
		se = se->parent;
	return se;
}

static void backlog_push(struct eg_session *t, struct exec_request *r)
{
	r->job_next = NULL;
	if (!t->backlog)
		t->backlog_tail = &t->backlog;
	*t->backlog_tail = r;
	t->backlog_tail = &r->job_next;
}

static struct exec_request *backlog_pop(struct eg_session *t)
{
	struct exec_request *r = t->backlog;

	if (r) {
		t->backlog = r->job_next;
		if (!t->backlog)
			t->backlog_tail = &t->backlog;
		r->job_next = NULL;
	}
	return r;
}

/* Loop thread: the end of r's time here, whatever happened to it. */
static void release(struct eg_sessions *s, struct exec_request *r)
{
	session_put(s, r->lsession);
	session_put(s, r->session);
	r->lsession = NULL;
}

/* Requests of uid's trees in workers now. */
static unsigned int uid_workers(struct eg_sessions *s, uid_t uid)
{
	struct eg_session *se;
	unsigned int n = 0;

	for (se = s->list; se; se = se->next)
		if (!se->parent && se->uid == uid)
			n += se->workers;
	return n;
}

static bool may_start(struct eg_sessions *s, struct eg_session *t)
{
	return t->workers < OFFLOAD_PER_TREE && uid_workers(s, t->uid) < OFFLOAD_PER_UID;
}

static void start(struct eg_offload *o, struct exec_request *r)
{
	struct eg_sessions *s = o->s;
	struct eg_session *t = tree_of(r->lsession);

	if (!may_start(s, t)) {
		backlog_push(t, r);
		return;
	}
	if (enqueue(o, r)) {
		struct eg_verdict v = { .decision = EG_DECISION_DENY, .rule = "error",
					.message = "no worker thread to look the program up" };

		s->flow.refuse_early(s, r, &v);
		release(s, r);
		request_free(r);
		return;
	}
	t->workers++;
}

static void hold(struct eg_offload *o, struct exec_request *r, struct eg_session *listener_se)
{
	r->queued_ms = eg_mono_ms();
	/* held until r is done with: its session, and the listener's (which holds its tree) */
	r->session->refs++;
	r->lsession = listener_se;
	listener_se->refs++;
	arm_timer(o);
}

void offload_submit(struct eg_sessions *s, struct exec_request *r, struct eg_session *listener_se)
{
	hold(s->offload, r, listener_se);
	start(s->offload, r);
}

/*
 * A tree's receiver (receiver.c) is its own worker: r is in it, counted
 * against the tree's share and refused at the timeout like any other.
 */
void offload_hold(struct eg_sessions *s, struct exec_request *r, struct eg_session *listener_se)
{
	struct eg_offload *o = s->offload;

	hold(o, r, listener_se);
	tree_of(listener_se)->workers++;
	live_add(o, r);
}

/* Loop thread: starts what t's backlog holds, as far as the bounds let it. */
static void kick(struct eg_offload *o, struct eg_session *t)
{
	struct eg_sessions *s = o->s;
	struct exec_request *next;

	while (may_start(s, t) && (next = backlog_pop(t))) {
		if (next->lsession->ended) {
			release(s, next);
			request_free(next);
			continue;
		}
		start(o, next);
	}
}

/* Loop thread (or its lock): r came back from a worker (answered already if abandoned). */
static void returned(struct eg_offload *o, struct exec_request *r)
{
	struct eg_sessions *s = o->s;
	struct eg_session *se = r->session, *ls = r->lsession, *t = tree_of(ls), *x;

	live_del(o, r);
	t->workers--;
	if (r->abandoned || ls->ended)
		request_free(r);	/* answered by the timeout, or nobody left to answer */
	else
		s->flow.finish(s, r);	/* frees r, or an approval keeps it */
	session_put(s, se);
	/* the tree's next, if it still has a listener to answer through; then the user's other trees */
	kick(o, t);
	for (x = s->list; x; x = x->next)
		if (x != t && !x->parent && x->uid == t->uid && x->backlog)
			kick(o, x);
	session_put(s, ls);	/* and with it, maybe, t */
}

bool offload_tid_live(const struct eg_sessions *s, pid_t tid)
{
	const struct exec_request *r;

	/* one the timeout answered is never answered again, and writes no ticket */
	for (r = s->offload->live; r; r = r->live_next)
		if (r->tid == tid && !r->abandoned)
			return true;
	return false;
}

void offload_unhold(struct eg_sessions *s, struct exec_request *r)
{
	returned(s->offload, r);
}

static void take_done(struct eg_offload *o)
{
	struct exec_request *list, *r, *rev = NULL;

	pthread_mutex_lock(&o->lock);
	list = o->done;
	o->done = NULL;
	o->signalled = false;
	pthread_mutex_unlock(&o->lock);
	/* oldest first */
	while (list) {
		r = list;
		list = r->job_next;
		r->job_next = rev;
		rev = r;
	}
	while (rev) {
		r = rev;
		rev = r->job_next;
		returned(o, r);
	}
}

static void on_done(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	char buf[64];

	(void)w;
	(void)events;
	while (read(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
	take_done(arg);
}

/* Loop thread: refuse what waited too long; the worker, if any, keeps its request. */
static void expire(struct eg_offload *o, struct exec_request *r)
{
	struct eg_verdict v = {
		.decision = EG_DECISION_DENY, .rule = "lookup-timeout",
		.message = "the program could not be looked up in time (a stalled file system?)",
	};

	r->abandoned = true;
	o->s->st.lookup_timeouts++;
	o->s->flow.refuse_early(o->s, r, &v);
}

/*
 * Takes out of t's backlog what has to go: with a listener that closed,
 * dropped (its exec already failed with ENOSYS); past the timeout (when
 * now is given) or everything (all), refused. The tail is where the walk
 * ends.
 */
static void backlog_sweep(struct eg_offload *o, struct eg_session *t, uint64_t now, bool all)
{
	struct exec_request **pp = &t->backlog, *r;

	while ((r = *pp)) {
		bool ended = r->lsession->ended;

		if (!ended && !all && !(now && now - r->queued_ms >= OFFLOAD_TIMEOUT_MS)) {
			pp = &r->job_next;
			continue;
		}
		*pp = r->job_next;
		if (!ended)
			expire(o, r);
		release(o->s, r);
		request_free(r);
	}
	t->backlog_tail = pp;
}

/*
 * What waited past the timeout (now), or everything (all), is refused:
 * queued or in a worker, answered now and freed when it comes back; in a
 * backlog, taken out.
 */
static void sweep(struct eg_offload *o, uint64_t now, bool all)
{
	struct exec_request *r;
	struct eg_session *se;

	for (r = o->live; r; r = r->live_next)
		if (!r->abandoned && !r->lsession->ended &&
		    (all || now - r->queued_ms >= OFFLOAD_TIMEOUT_MS))
			expire(o, r);
	for (se = o->s->list; se; se = se->next)
		if (se->backlog)
			backlog_sweep(o, se, now, all);
}

static void on_tick(struct eg_watch *w, uint64_t n, void *arg)
{
	struct eg_offload *o = arg;

	(void)w;
	(void)n;
	take_done(o);
	sweep(o, eg_mono_ms(), false);
	if (!offload_waiting(o->s)) {
		loop_timer_set(o->w_timer, 0, 0);
		o->timer_armed = false;
	}
}

int offload_init(struct eg_sessions *s)
{
	struct eg_offload *o = calloc(1, sizeof(*o));
	int err;

	if (!o)
		return -ENOMEM;
	o->s = s;
	o->queue_tail = &o->queue;
	o->live_tail = &o->live;
	o->roots = s->roots;
	o->roots.fd = -1;
	o->done_pipe[0] = o->done_pipe[1] = -1;
	if (pipe2(o->done_pipe, O_CLOEXEC | O_NONBLOCK) ||
	    (s->roots.fd >= 0 && (o->roots.fd = fcntl(s->roots.fd, F_DUPFD_CLOEXEC, 0)) < 0)) {
		err = -errno;
		goto fail;
	}
	pthread_mutex_init(&o->lock, NULL);
	err = loop_add_fd(s->o.loop, o->done_pipe[0], EPOLLIN, on_done, o, &o->w_done);
	if (!err)
		err = loop_add_timer(s->o.loop, 0, 0, on_tick, o, &o->w_timer);
	if (err)
		goto fail;
	/*
	 * Not urgent itself: an answer coming back here is a session's, and
	 * while a session lives its listener's watch makes the loop split its
	 * drains (session.c). With no session a drain is one round.
	 */
	s->offload = o;
	return 0;
fail:
	if (o->w_done)
		loop_del(o->w_done);
	for (int i = 0; i < 2; i++)
		if (o->done_pipe[i] >= 0)
			close(o->done_pipe[i]);
	if (o->roots.fd >= 0)
		close(o->roots.fd);
	free(o);
	return err;
}

/*
 * Loop thread. Waits up to timeout_ms for what the workers have (each is
 * answered as usual), then refuses what is left: a handover re-execs the
 * daemon, and a request taken from a listener cannot be taken again.
 */
void offload_quiesce(struct eg_sessions *s, int timeout_ms)
{
	struct eg_offload *o = s->offload;
	uint64_t end = eg_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	struct exec_request *r;
	struct eg_session *se;

	if (!o)
		return;
	for (;;) {
		bool waiting = false;

		take_done(o);
		for (r = o->live; r; r = r->live_next)
			waiting = waiting || !r->abandoned;
		for (se = s->list; se; se = se->next)
			waiting = waiting || se->backlog;
		if (!waiting || eg_mono_ms() >= end)
			break;
		/* a receiver gives its request back under the loop's lock */
		loop_unlock(s->o.loop);
		usleep(1000);
		loop_lock(s->o.loop);
	}
	sweep(o, 0, true);
}

unsigned int offload_waiting(const struct eg_sessions *s)
{
	const struct exec_request *r;
	const struct eg_session *se;
	unsigned int n;

	if (!s->offload)
		return 0;
	n = s->offload->inflight;
	for (se = s->list; se; se = se->next)
		for (r = se->backlog; r; r = r->job_next)
			n++;
	return n;
}

/* Loop thread: a session ended (se->ended set); what waits for its listener goes. */
void offload_session_ended(struct eg_sessions *s, struct eg_session *se)
{
	struct eg_session *t = tree_of(se);

	if (s->offload && t->backlog)
		backlog_sweep(s->offload, t, 0, false);
}

/*
 * Loop thread, at exit. Idle workers go; a worker still inside a lookup
 * (a file system that never answers) keeps the pool, which is then left
 * for the process's exit to take.
 */
void offload_fini(struct eg_sessions *s)
{
	struct eg_offload *o = s->offload;
	bool busy;
	int i;

	if (!o)
		return;
	s->offload = NULL;
	loop_del(o->w_done);
	loop_del(o->w_timer);
	pthread_mutex_lock(&o->lock);
	o->stopping = true;
	/* every idle worker wakes, sees stopping and goes (the busy ones when back) */
	for (struct worker *w = o->idlers; w; w = w->next_idle) {
		w->claimed = true;
		if (write(w->tok[1], "s", 1) < 0)
			(void)0;
	}
	o->idlers = NULL;
	pthread_mutex_unlock(&o->lock);
	for (i = 0; i < 200; i++) {
		pthread_mutex_lock(&o->lock);
		busy = o->threads > 0;
		pthread_mutex_unlock(&o->lock);
		if (!busy)
			break;
		usleep(1000);
	}
	if (busy) {
		p_warn("sessions: %s", "a worker is still inside a file system lookup at exit");
		return;
	}
	/* what the workers gave back and nobody took */
	while (o->done) {
		struct exec_request *r = o->done;

		o->done = r->job_next;
		release(s, r);
		request_free(r);
	}
	while (o->queue) {
		struct exec_request *r = o->queue;

		o->queue = r->job_next;
		release(s, r);
		request_free(r);
	}
	pthread_mutex_destroy(&o->lock);
	for (i = 0; i < 2; i++)
		close(o->done_pipe[i]);
	if (o->roots.fd >= 0)
		close(o->roots.fd);
	free(o);
}
