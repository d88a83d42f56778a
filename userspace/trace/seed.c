// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Changes to a running process's task storage asked from user space, made
 * by a task iterator in the kernel (bpf/seed.bpf.c says why not by a map
 * update). The change goes into the program's .bss through its mapping;
 * each run is an iterator link on the one process a pidfd names, so the
 * pid namespace the daemon lives in does not matter, and the run visits
 * that process's threads alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "execgate.h"
#include "seed.skel.h"
#include "trace/iter.h"
#include "trace/seed.h"

#define DEPTH_ROUNDS	3	/* a depth undone by an exec meanwhile is asked again */

struct task_seeder {
	struct seed_bpf *skel;
};

int task_seeder_open(int tasks_fd, struct task_seeder **ret)
{
	struct task_seeder *sd = calloc(1, sizeof(*sd));
	int err;

	if (!sd)
		return -ENOMEM;
	sd->skel = seed_bpf__open();
	if (!sd->skel) {
		err = -errno;
		free(sd);
		return err;
	}
	err = bpf_map__reuse_fd(sd->skel->maps.tasks, tasks_fd);
	if (!err)
		err = seed_bpf__load(sd->skel);
	if (err) {
		task_seeder_close(sd);
		return err;
	}
	*ret = sd;
	return 0;
}

void task_seeder_close(struct task_seeder *sd)
{
	if (!sd)
		return;
	seed_bpf__destroy(sd->skel);
	free(sd);
}

int task_seeder_apply(struct task_seeder *sd, int pidfd, struct eg_seed *s)
{
	union bpf_iter_link_info li = { .task.pid_fd = (__u32)pidfd };
	int err;

	s->result = 0;
	sd->skel->bss->req = *s;
	err = iter_run_once(sd->skel->progs.seed_task, &li);
	if (err)
		return err;
	s->result = sd->skel->bss->req.result;
	return 0;
}

int task_seeder_set_depth(struct task_seeder *sd, int tasks_fd, pid_t pid, int depth)
{
	int pidfd = syscall(SYS_pidfd_open, pid, 0), round, err = -EAGAIN;

	/* a process (its leader): a thread's id is refused */
	if (pidfd < 0)
		return -errno;
	for (round = 0; round < DEPTH_ROUNDS; round++) {
		struct eg_seed s = { .op = EG_SEED_DEPTH, .depth = depth };
		struct eg_task before = {}, after;

		if (bpf_map_lookup_elem(tasks_fd, &pidfd, &before) && errno != ENOENT) {
			err = -errno;
			break;
		}
		err = task_seeder_apply(sd, pidfd, &s);
		if (err)
			break;
		if (s.result != EG_SEED_DONE) {
			err = s.result ? -ENOMEM : -ESRCH;
			break;
		}
		/* an exec that read the storage before and wrote it after undid it: again */
		if (!bpf_map_lookup_elem(tasks_fd, &pidfd, &after) && (after.flags & EG_TASK_DEPTH_KNOWN) &&
		    (after.depth == depth || after.exec_ktime != before.exec_ktime))
			break;
		err = -EAGAIN;
	}
	close(pidfd);
	return err;
}
