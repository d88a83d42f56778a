// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The kernel's facts about a trapped thread in one system call: the
 * syscall program of facts.bpf.c, run with BPF_PROG_RUN (Linux 6.2 for
 * bpf_task_from_pid). It shares the tracer's task storage. Where it cannot
 * be loaded, or the daemon is not in the initial pid namespace (the
 * program names tasks by their pid there) or user namespace (it reads
 * namespace owners' uids as that one sees them), the supervisor asks
 * through a pidfd and /proc instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "facts.skel.h"
#include "session/internal.h"
#include "util/log.h"

#define PROC_USER_INIT_INO	0xEFFFFFFDu	/* the initial namespaces' inodes (include/linux/proc_ns.h) */
#define PROC_PID_INIT_INO	0xEFFFFFFCu

struct eg_facts_prog {
	struct facts_bpf *skel;
	int fd;
};

int facts_open(int tasks_fd, struct eg_facts_prog **ret)
{
	struct eg_facts_prog *f;
	struct stat st;
	int err;

	*ret = NULL;
	if (stat("/proc/self/ns/pid", &st) || st.st_ino != PROC_PID_INIT_INO ||
	    stat("/proc/self/ns/user", &st) || st.st_ino != PROC_USER_INIT_INO)
		return -EOPNOTSUPP;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->skel = facts_bpf__open();
	if (!f->skel) {
		err = -errno;
		goto fail;
	}
	err = bpf_map__reuse_fd(f->skel->maps.tasks, tasks_fd);
	if (!err)
		err = facts_bpf__load(f->skel);
	if (err)
		goto fail;
	f->fd = bpf_program__fd(f->skel->progs.task_facts);
	*ret = f;
	return 0;
fail:
	facts_bpf__destroy(f->skel);
	free(f);
	return err;
}

void facts_close(struct eg_facts_prog *f)
{
	if (!f)
		return;
	facts_bpf__destroy(f->skel);
	free(f);
}

int facts_read(const struct eg_facts_prog *f, pid_t tid, struct eg_facts *ret)
{
	/* a syscall program's context is written back where it came from (no ctx_out) */
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ret, .ctx_size_in = sizeof(*ret));

	memset(ret, 0, sizeof(*ret));
	ret->tid = tid;
	if (bpf_prog_test_run_opts(f->fd, &o))
		return -errno;
	return ret->rc;
}
