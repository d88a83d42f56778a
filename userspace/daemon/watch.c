// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The files a policy names, watched (watch.h). inotify on the directories
 * they are in: nothing runs while nothing changes there; a change arms a
 * one-shot timer, so an upgrade that renames many files is looked at once,
 * after they settle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>
#include "daemon/watch.h"
#include "loop/loop.h"
#include "policy/policy.h"

#define SETTLE_MS	2000
#define WATCH_DIRS_MAX	4096

#define WATCH_MASK	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ATTRIB | \
			 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

struct files_watch {
	struct eg_loop *loop;
	int fd;
	unsigned int n;
	struct eg_watch *w, *timer;
	void (*changed)(void *arg);
	void *arg;
};

static void add_dir(const char *dir, void *arg)
{
	struct files_watch *fw = arg;

	/* the same directory twice is one watch; one that is not there has nothing to replace */
	if (fw->n < WATCH_DIRS_MAX && inotify_add_watch(fw->fd, dir, WATCH_MASK) >= 0)
		fw->n++;
}

static void on_settled(struct eg_watch *w, uint64_t n, void *arg)
{
	struct files_watch *fw = arg;

	(void)w;
	(void)n;
	fw->changed(fw->arg);
}

static void on_change(struct eg_watch *w, int fd, uint32_t events, void *arg)
{
	struct files_watch *fw = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));

	(void)w;
	(void)events;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	if (!fw->timer)
		loop_add_timer(fw->loop, SETTLE_MS, 0, on_settled, fw, &fw->timer);
	else
		loop_timer_set(fw->timer, SETTLE_MS, 0);
}

struct files_watch *files_watch(struct eg_loop *loop, const struct eg_policy *p, void (*changed)(void *arg),
				void *arg, int *ret_err)
{
	struct files_watch *fw = calloc(1, sizeof(*fw));

	*ret_err = 0;
	if (!fw) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	fw->loop = loop;
	fw->changed = changed;
	fw->arg = arg;
	fw->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fw->fd < 0) {
		*ret_err = -errno;
		free(fw);
		return NULL;
	}
	policy_file_dirs(p, add_dir, fw);
	if (!fw->n || (*ret_err = loop_add_fd(loop, fw->fd, EPOLLIN, on_change, fw, &fw->w))) {
		close(fw->fd);
		free(fw);
		return NULL;
	}
	return fw;
}

void files_watch_free(struct files_watch *fw)
{
	if (!fw)
		return;
	loop_del(fw->w);
	loop_del(fw->timer);
	close(fw->fd);
	free(fw);
}
