// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Changes to a running process's task storage asked from user space, made
 * by a task iterator in the kernel (bpf/amend.bpf.c says why not by a map
 * update). The change goes into the program's .bss through its mapping;
 * each run is an iterator link on the one process a pidfd names, so the
 * pid namespace the daemon lives in does not matter, and the run visits
 * that process's threads alone: each gets the change (a session id the
 * leader alone).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "execgate.h"
#include "amend.skel.h"
#include "trace/iter.h"
#include "trace/amend.h"

#define DEPTH_ROUNDS	3	/* a depth undone by an exec meanwhile is asked again */
#define INIT_PID_NS_INO	0xEFFFFFFCu	/* the initial pid namespace's inode (PROC_PID_INIT_INO) */

struct task_amender {
	struct amend_bpf *skel;
	bool whole_walk;	/* no iterator on one process (before 6.1): every task, by global id */
};

/* A pidfd as the link takes it: 0 there means "every task", so never fd 0. */
static int link_fd(int pidfd)
{
	return pidfd ? pidfd : fcntl(pidfd, F_DUPFD_CLOEXEC, 3);
}

int task_amender_apply(struct task_amender *sd, int pidfd, pid_t pid, struct eg_amend *s)
{
	union bpf_iter_link_info li = {};
	int fd = -1, err;

	s->result = 0;
	s->missed = 0;
	s->tid = sd->whole_walk ? (__u32)pid : 0;
	if (!sd->whole_walk) {
		fd = link_fd(pidfd);
		if (fd < 0)
			return -errno;
		li.task.pid_fd = (__u32)fd;
	}
	sd->skel->bss->req = *s;
	err = iter_run_once(sd->skel->progs.amend_task, sd->whole_walk ? NULL : &li);
	if (fd >= 0 && fd != pidfd)
		close(fd);
	if (err)
		return err;
	s->result = sd->skel->bss->req.result;
	s->missed = sd->skel->bss->req.missed;
	return 0;
}

void task_amend_inherit(struct eg_amend *s, const struct eg_task *t)
{
	/* as the tracer's handle_fork: the lineage, not what the image's own exec left to act on */
	s->task = *t;
	s->task.flags = t->flags & EG_TASK_INHERITED;
	s->task.lsm_rule = 0;
	s->task.lsm_seq = 0;
	s->task.lsm_kflags = 0;
	s->task.lsm_kdecision = 0;
	s->task.lsm_reason = 0;
	s->task.loader_dev = 0;
	s->task.loader_ino = 0;
	s->task.loader_arg = 0;
}

/* Before 6.1 a task iterator takes no process to run on: every task, by id, from the initial pid namespace alone. */
static int probe(struct task_amender *sd)
{
	struct eg_amend s = {};
	struct stat st;
	int pidfd = syscall(SYS_pidfd_open, getpid(), 0), err;

	if (pidfd < 0)
		return -errno;
	err = task_amender_apply(sd, pidfd, getpid(), &s);
	if ((err == -E2BIG || err == -EINVAL) && !stat("/proc/self/ns/pid", &st) && st.st_ino == INIT_PID_NS_INO) {
		sd->whole_walk = true;
		err = task_amender_apply(sd, pidfd, getpid(), &s);
	}
	close(pidfd);
	if (!err && s.result != EG_AMEND_DONE)
		err = -EOPNOTSUPP;
	return err;
}

int task_amender_open(int tasks_fd, struct task_amender **ret)
{
	struct task_amender *sd = calloc(1, sizeof(*sd));
	int err;

	if (!sd)
		return -ENOMEM;
	sd->skel = amend_bpf__open();
	if (!sd->skel) {
		err = -errno;
		free(sd);
		return err;
	}
	err = bpf_map__reuse_fd(sd->skel->maps.tasks, tasks_fd);
	if (!err)
		err = amend_bpf__load(sd->skel);
	if (!err)
		err = probe(sd);
	if (err) {
		task_amender_close(sd);
		return err;
	}
	*ret = sd;
	return 0;
}

void task_amender_close(struct task_amender *sd)
{
	if (!sd)
		return;
	amend_bpf__destroy(sd->skel);
	free(sd);
}

int task_amender_set_depth(struct task_amender *sd, int tasks_fd, pid_t pid, int depth)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0), round, err = -EAGAIN;
	bool missed = false;

	/* a process (its leader): a thread's id is refused; every thread of it gets the depth */
	if (pidfd < 0)
		return -errno;
	for (round = 0; round < DEPTH_ROUNDS; round++) {
		struct eg_task before = {}, after;
		struct eg_amend s = { .op = EG_AMEND_DEPTH };

		if (bpf_map_lookup_elem(tasks_fd, &pidfd, &before) && errno != ENOENT) {
			err = -errno;
			break;
		}
		s.exec_ktime = before.exec_ktime;
		/* a thread with no storage (nor the leader, if it has none): the leader's entry at that depth */
		task_amend_inherit(&s, &before);
		s.task.depth = depth;
		s.task.flags |= EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN;
		err = task_amender_apply(sd, pidfd, pid, &s);
		if (err)
			break;
		missed = s.missed;
		err = -EAGAIN;
		if (s.result == EG_AMEND_CHANGED)
			continue;	/* an exec since the lookup: look again */
		if (s.result != EG_AMEND_DONE) {
			err = s.result ? -ENOMEM : -ESRCH;
			break;
		}
		/* an exec that read the storage before and wrote it after undid it: again */
		if (!bpf_map_lookup_elem(tasks_fd, &pidfd, &after) && (after.flags & EG_TASK_DEPTH_KNOWN) &&
		    (after.depth == depth || (after.exec_ktime != before.exec_ktime && after.depth == depth + 1))) {
			err = 0;
			break;
		}
	}
	close(pidfd);
	/* a thread the kernel made no storage for: its children keep the depth they had */
	return !err && missed ? -ENOMEM : err;
}
