// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Changes to running tasks' storage asked from user space, made by a task
 * iterator in the kernel (bpf/seed.bpf.c says why not by a map update):
 * the changes go into a hash map keyed by thread id, one read of the
 * iterator makes them, and each entry's result is read back.
 */
#include <errno.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "seed.skel.h"
#include "trace/iter.h"
#include "trace/seed.h"

static int apply(int tasks_fd, struct task_seed *v, size_t n)
{
	struct seed_bpf *skel;
	size_t i;
	int err;

	skel = seed_bpf__open();
	if (!skel)
		return -errno;
	err = bpf_map__set_max_entries(skel->maps.seeds, (__u32)n);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.tasks, tasks_fd);
	if (!err)
		err = seed_bpf__load(skel);
	if (err)
		goto out;
	for (i = 0; i < n; i++) {
		__u32 tid = (__u32)v[i].tid;

		v[i].s.result = 0;
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.seeds), &tid, &v[i].s, BPF_ANY)) {
			err = -errno;
			goto out;
		}
	}
	err = iter_run_once(skel->progs.seed_tasks);
	if (err)
		goto out;
	for (i = 0; i < n; i++) {
		__u32 tid = (__u32)v[i].tid;
		struct eg_seed s;

		if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.seeds), &tid, &s))
			v[i].s.result = s.result;
	}
out:
	seed_bpf__destroy(skel);
	return err;
}

int tasks_seed_apply(int tasks_fd, struct task_seed *v, size_t n)
{
	size_t off, m;
	int err;

	for (off = 0; off < n; off += m) {
		m = n - off < EG_SEEDS_MAX ? n - off : EG_SEEDS_MAX;
		err = apply(tasks_fd, v + off, m);
		if (err)
			return err;
	}
	return 0;
}
