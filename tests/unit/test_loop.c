// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The event loop's lock: another thread that asks for it gets it after at
 * most the round under way, however busy the loop is; a watch it deletes
 * while the loop waits is not freed under the loop; pending work it leaves
 * wakes the loop.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "unit.h"
#include "loop/loop.h"
#include "util/clock.h"

struct busy {
	struct eg_loop *loop;
	atomic_ulong rounds;		/* pending callbacks run */
	atomic_bool done;
	unsigned long waited[200];	/* rounds the other thread waited for the lock, each time */
	unsigned int got;
};

/* Always more to do: the loop never sleeps in epoll_wait (timeout 0), as under an exec storm. */
static void churn(void *arg)
{
	struct busy *b = arg;
	uint64_t t0 = eg_mono_ns();

	while (eg_mono_ns() - t0 < 50000)
		;
	atomic_fetch_add(&b->rounds, 1);
	if (!atomic_load(&b->done))
		loop_set_pending(b->loop, churn, b);
	else
		loop_stop(b->loop);
}

static void *asker(void *arg)
{
	struct busy *b = arg;

	for (unsigned int i = 0; i < 200; i++) {
		unsigned long before = atomic_load(&b->rounds);

		loop_lock(b->loop);
		b->waited[b->got++] = atomic_load(&b->rounds) - before;
		loop_unlock(b->loop);
		usleep(100);
	}
	atomic_store(&b->done, true);
	return NULL;
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static void test_lock_is_handed_over(void)
{
	struct busy b = { .loop = loop_new() };
	pthread_t t;

	if (!ASSERT_OK_PTR(b.loop, "loop_new"))
		return;
	loop_set_pending(b.loop, churn, &b);
	if (!ASSERT_OK(pthread_create(&t, NULL, asker, &b), "pthread_create"))
		return;
	ASSERT_OK(loop_run(b.loop, -1, NULL, NULL), "loop_run");
	pthread_join(t, NULL);
	ASSERT_EQ(b.got, 200u, "every request for the lock was granted");
	/*
	 * The round under way, and one more if it asked between two. The
	 * median, not the worst: a thread preempted before it asks lets
	 * rounds go by that it was not waiting for. A plain mutex, which the
	 * loop takes back a microsecond after letting go, made it wait
	 * hundreds of rounds.
	 */
	qsort(b.waited, b.got, sizeof(b.waited[0]), cmp_ulong);
	ASSERT_TRUE(b.got && b.waited[b.got / 2] <= 2, "the lock waits for the loop's round under way");
	printf("    rounds waited for the lock: median %lu, most %lu\n", b.got ? b.waited[b.got / 2] : 0,
	       b.got ? b.waited[b.got - 1] : 0);
	loop_free(b.loop);
}

struct wake {
	struct eg_loop *loop;
	struct eg_watch *w;
	int efd;
	bool ran;
};

static void never(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	(void)w;
	(void)fd;
	(void)events;
	(void)arg;
}

static void left(void *arg)
{
	struct wake *k = arg;

	k->ran = true;
	loop_stop(k->loop);
}

/* While the loop sleeps with no timeout: delete a ready watch, leave work. */
static void *visitor(void *arg)
{
	struct wake *k = arg;
	uint64_t one = 1;

	usleep(20000);
	loop_lock(k->loop);
	/* ready now: epoll_wait may be handing its event back to the loop as we delete it */
	if (write(k->efd, &one, sizeof(one)) < 0)
		(void)0;
	loop_del(k->w);
	loop_set_pending(k->loop, left, k);
	loop_unlock(k->loop);
	return NULL;
}

static void test_another_thread_acts_as_a_callback(void)
{
	struct wake k = { .loop = loop_new() };
	pthread_t t;

	if (!ASSERT_OK_PTR(k.loop, "loop_new"))
		return;
	k.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_OK(loop_add_fd(k.loop, k.efd, EPOLLIN, never, &k, &k.w), "watch");
	ASSERT_EQ(loop_watch_count(k.loop), 1u, "one watch");
	if (!ASSERT_OK(pthread_create(&t, NULL, visitor, &k), "pthread_create"))
		return;
	/* no timeout: only the pending work the visitor leaves can end this */
	ASSERT_OK(loop_run(k.loop, -1, NULL, NULL), "loop_run");
	pthread_join(t, NULL);
	ASSERT_TRUE(k.ran, "work left by another thread woke the loop");
	ASSERT_EQ(loop_watch_count(k.loop), 0u, "the watch is gone");
	close(k.efd);
	loop_free(k.loop);
}

int main(void)
{
	RUN(test_lock_is_handed_over);
	RUN(test_another_thread_acts_as_a_callback);
	return UNIT_DONE();
}
