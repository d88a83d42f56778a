// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A pinned "tasks" of the older layout (struct eg_task of 96 bytes) is
 * copied into this version's map by a task iterator (bpf/migrate.bpf.c)
 * run once: every task, threads included, in one pass in the kernel. The
 * daemon runs it just before its programs take over and once after
 * (daemon.c), so an entry the older programs wrote in between is not lost.
 */
#include <errno.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "execgate.h"
#include "migrate.skel.h"
#include "trace/iter.h"
#include "trace/migrate.h"

bool tasks_old_layout(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	return info.type == BPF_MAP_TYPE_TASK_STORAGE && info.key_size == sizeof(int) &&
	       info.value_size == EG_TASK_V1_SIZE;
}

int tasks_migrate(int old_fd, int new_fd, struct tasks_migrated *ret)
{
	struct migrate_bpf *skel;
	int err;

	skel = migrate_bpf__open();
	if (!skel)
		return -errno;
	err = bpf_map__reuse_fd(skel->maps.old_tasks, old_fd);
	if (!err)
		err = bpf_map__reuse_fd(skel->maps.tasks, new_fd);
	if (!err)
		err = migrate_bpf__load(skel);
	if (err)
		goto out;
	err = iter_run_once(skel->progs.migrate_tasks, NULL);
	if (err)
		goto out;
	ret->copied = skel->bss->copied;
	ret->newer = skel->bss->newer;
	ret->failed = skel->bss->failed;
out:
	migrate_bpf__destroy(skel);
	return err;
}
