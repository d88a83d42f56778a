// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Pins at PATH a "tasks" map of the older layout (task storage, 96-byte
 * values: struct eg_task before 28 November 2026), as a daemon of that
 * version left it, with an entry per ID:DEPTH:SESSION[:t] (a thread's id,
 * reached with PIDFD_THREAD, when ":t" follows). Each entry: depth DEPTH,
 * known, session SESSION, exec id TGID:1000+ID. Prints "ok N".
 *   old_tasks PATH ID:DEPTH:SESSION[:t]...
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "execgate.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD	O_EXCL
#endif

static int tgid_of(int id)
{
	char path[64], line[256];
	FILE *f;
	int tgid = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", id);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int main(int argc, char **argv)
{
	struct btf *btf;
	int int_id, u8_id, arr_id, st_id, fd, i;

	if (argc < 2) {
		fprintf(stderr, "usage: old_tasks PATH ID:DEPTH:SESSION[:t]...\n");
		return 2;
	}
	btf = btf__new_empty();
	int_id = btf__add_int(btf, "int", 4, BTF_INT_SIGNED);
	u8_id = btf__add_int(btf, "unsigned char", 1, 0);
	arr_id = btf__add_array(btf, int_id, u8_id, EG_TASK_V1_SIZE);
	st_id = btf__add_struct(btf, "eg_task", EG_TASK_V1_SIZE);
	if (int_id < 0 || u8_id < 0 || arr_id < 0 || st_id < 0 || btf__add_field(btf, "b", arr_id, 0, 0) ||
	    btf__load_into_kernel(btf)) {
		fprintf(stderr, "old_tasks: BTF: %s\n", strerror(errno));
		return 1;
	}
	LIBBPF_OPTS(bpf_map_create_opts, o, .btf_fd = btf__fd(btf), .btf_key_type_id = int_id,
		    .btf_value_type_id = st_id, .map_flags = BPF_F_NO_PREALLOC);
	fd = bpf_map_create(BPF_MAP_TYPE_TASK_STORAGE, "tasks", sizeof(int), EG_TASK_V1_SIZE, 0, &o);
	if (fd < 0 || bpf_obj_pin(fd, argv[1])) {
		fprintf(stderr, "old_tasks: map at %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 2; i < argc; i++) {
		struct eg_task t = {};
		int id, depth, session, pidfd;
		char kind = 0;

		if (sscanf(argv[i], "%d:%d:%d:%c", &id, &depth, &session, &kind) < 3) {
			fprintf(stderr, "old_tasks: bad entry %s\n", argv[i]);
			return 2;
		}
		t.depth = depth;
		t.flags = EG_TASK_KNOWN | EG_TASK_DEPTH_KNOWN;
		t.exec_tgid = tgid_of(id);
		t.exec_ktime = 1000 + id;
		t.session = session;
		pidfd = (int)syscall(SYS_pidfd_open, id, kind == 't' ? PIDFD_THREAD : 0);
		if (pidfd < 0 || bpf_map_update_elem(fd, &pidfd, &t, BPF_ANY)) {
			fprintf(stderr, "old_tasks: entry of %d: %s\n", id, strerror(errno));
			return 1;
		}
		close(pidfd);
	}
	printf("ok %d\n", argc - 2);
	return 0;
}
